# Sourced by bench/cpu_*.sh: SRC, a llama.cpp tree. Unset: the one vendored in the
# llama_cpp_python 0.3.36 sdist, downloaded from PyPI into /tmp/llamacpp-sdist once.
if [ -z "${SRC:-}" ]; then
  work=/tmp/llamacpp-sdist
  mkdir -p "$work"
  [ -f "$work/llama_cpp_python-0.3.36.tar.gz" ] || python3 -m pip download --no-deps \
    --no-binary :all: llama_cpp_python==0.3.36 -d "$work" > /dev/null
  [ -d "$work/llama_cpp_python-0.3.36" ] || tar -xzf "$work/llama_cpp_python-0.3.36.tar.gz" -C "$work"
  SRC=$work/llama_cpp_python-0.3.36/vendor/llama.cpp
fi
