"""kernelopt-example-provider: the ``localchat`` LLM provider, a local OpenAI-compatible
chat-completions server (llama.cpp's llama-server, vLLM, Ollama's /v1) described as data.

A provider is a record, not code: kernelopt's agents speak the chat-completions protocol
to ``base_url`` with ``default_model`` unless the user gives ``--model``, sending the key
from ``api_key_env`` when one is named (None: a local server needs none). Choose it with
``kernelopt run PATH --planner agents --provider localchat`` (``--base-url`` overrides the
address). It imports only ``kernelopt_core.api``.
"""

from __future__ import annotations

from kernelopt_core.api import LLMProvider, hookimpl

LOCALCHAT = LLMProvider(
    name="localchat",
    base_url="http://127.0.0.1:8080/v1",  # llama-server's default port
    api_key_env=None,
    default_model="local",
    docs_url="https://github.com/ggml-org/llama.cpp/tree/master/tools/server",
)


@hookimpl
def kernelopt_register_llm_providers() -> list[LLMProvider]:
    return [LOCALCHAT]
