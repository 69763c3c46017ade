# Sourced by bench/h200_llamacpp*.sh: $OUT made, the wheels installed (h200_site.sh), and the
# vendored llama.cpp tree unpacked once at $REPO from .whl/llama.cpp-trimmed.tar.gz
# (bench/make_llamacpp_tarball.sh).
OUT=${OUT:-bench/results/out}
mkdir -p "$OUT"
SITE_MARKER=kernelopt_llamacpp source bench/h200_site.sh
REPO=/tmp/llama.cpp
[ -d "$REPO" ] || tar -xzf .whl/llama.cpp-trimmed.tar.gz -C /tmp
