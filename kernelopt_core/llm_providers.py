"""Built-in LLM providers: OpenAI-compatible chat-completions endpoints, as data.

Each ``base_url`` is the prefix a client appends ``/chat/completions`` to. The facts behind every
record (auth header, tool calling, reasoning-effort parameter, what could not be confirmed) and
their sources are in docs/providers.md; keep the two in step.
"""

from __future__ import annotations

from kernelopt_core.hookspecs import LLMProvider, hookimpl

BUILTIN_PROVIDERS = [
    # OpenCode Go (subscription). Only some Go models are served on /chat/completions (GLM, Kimi,
    # DeepSeek, MiMo, ...); MiniMax and Qwen are on /messages, Grok/GPT on /responses. The gateway
    # also expects an x-opencode-session header per conversation (docs/providers.md).
    LLMProvider("opencode-go", "https://opencode.ai/zen/go/v1", "OPENCODE_API_KEY",
                "kimi-k2.6", "https://opencode.ai/docs/go/",
                headers={"x-opencode-session": "{session}"}),
    LLMProvider("openai", "https://api.openai.com/v1", "OPENAI_API_KEY", "gpt-5-mini",
                "https://platform.openai.com/docs/api-reference/chat/create"),
    LLMProvider("openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY",
                "openai/gpt-5-mini", "https://openrouter.ai/docs/api-reference/overview"),
    # Local servers: no key by default. The model must exist on the server (`ollama pull`,
    # `vllm serve <model>`, loaded or JIT-loadable in LM Studio); override it with --model.
    LLMProvider("ollama", "http://localhost:11434/v1", None, "gpt-oss:20b",
                "https://docs.ollama.com/api/openai-compatibility"),
    LLMProvider("vllm", "http://localhost:8000/v1", None, "openai/gpt-oss-20b",
                "https://docs.vllm.ai/en/stable/serving/openai_compatible_server/"),
    LLMProvider("lmstudio", "http://localhost:1234/v1", None, "openai/gpt-oss-20b",
                "https://lmstudio.ai/docs/developer/openai-compat"),
]


@hookimpl
def kernelopt_register_llm_providers() -> list[LLMProvider]:
    return list(BUILTIN_PROVIDERS)
