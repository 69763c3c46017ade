#!/usr/bin/env bash
# Make a trimmed llama.cpp source tarball for the H200 (no network there):
#   bash bench/make_llamacpp_tarball.sh [OUT.tar.gz]   (default .whl/llama.cpp-trimmed.tar.gz)
# Source: the llama.cpp tree vendored in the llama_cpp_python 0.3.36 sdist (pip download from
# the configured index). Dropped: docs/ media/ benches/ gguf-py/ .github/, the mobile
# apps in examples/ and models/ except the llama and GPT-2 vocab GGUFs (the random models'
# tokenizers).
# Kept: ggml/, src/, include/, common/, tests/, tools/, examples/ and pocs/ (llama-eval-callback records
# a model's graph nodes: bench/h200_llamacpp_model.sh), vendor/, cmake/, CMakeLists.txt.
set -euo pipefail
OUT=${1:-.whl/llama.cpp-trimmed.tar.gz}
VERSION=0.3.36
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m pip download --no-deps --no-binary :all: "llama_cpp_python==$VERSION" -d "$work" >/dev/null
tar -xzf "$work"/llama_cpp_python-$VERSION.tar.gz -C "$work"
src="$work/llama_cpp_python-$VERSION/vendor/llama.cpp"
rm -rf "$src"/{docs,media,benches,gguf-py,.github,app/ui,examples/llama.android,examples/llama.swiftui}
find "$src/models" -mindepth 1 ! -name 'ggml-vocab-llama-spm.gguf' ! -name 'ggml-vocab-gpt-2.gguf' -exec rm -rf {} +
mv "$src" "$work/llama.cpp"
mkdir -p "$(dirname "$OUT")"
tar -czf "$OUT" -C "$work" llama.cpp
echo "$OUT: $(du -h "$OUT" | cut -f1) (llama.cpp from llama_cpp_python $VERSION)"
