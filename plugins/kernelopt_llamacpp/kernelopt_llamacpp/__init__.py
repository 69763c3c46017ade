"""kernelopt backend for llama.cpp ggml-cuda ops (docs/llamacpp.md)."""
