"""Built-in LLM providers: OpenAI-compatible chat-completions endpoints, as data."""

from __future__ import annotations

from kernelopt_core.hookspecs import LLMProvider, hookimpl

BUILTIN_PROVIDERS = [
    LLMProvider("opencode-go", "https://opencode.ai/zen/go/v1", "OPENCODE_API_KEY",
                "kimi-k2.5", "https://opencode.ai/docs/go/"),
    LLMProvider("openai", "https://api.openai.com/v1", "OPENAI_API_KEY", "gpt-5-mini",
                "https://platform.openai.com/docs/api-reference/chat"),
    LLMProvider("openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY",
                "openai/gpt-5-mini", "https://openrouter.ai/docs/api-reference/overview"),
    LLMProvider("ollama", "http://localhost:11434/v1", None, "qwen2.5-coder",
                "https://github.com/ollama/ollama/blob/main/docs/openai.md"),
    LLMProvider("vllm", "http://localhost:8000/v1", None, "default",
                "https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html"),
    LLMProvider("lmstudio", "http://localhost:1234/v1", None, "default",
                "https://lmstudio.ai/docs/app/api/endpoints/openai"),
]


@hookimpl
def kernelopt_register_llm_providers() -> list[LLMProvider]:
    return list(BUILTIN_PROVIDERS)
