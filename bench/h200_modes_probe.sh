#!/usr/bin/env bash
# Issue 53's probe: kernel names between processes and settings, and the model in every
# torch.compile mode in one process (bench/inductor_modes_probe.py).
#   bash bench/h200_modes_probe.sh [MODEL ...]   (default: bench/models/convnext.py bench/models/qwen2.py)
set -uo pipefail
OUT=${OUT:-bench/results/modes-probe}; mkdir -p "$OUT"
source bench/h200_site.sh
models=("$@"); [ ${#models[@]} -eq 0 ] && models=(bench/models/convnext.py bench/models/qwen2.py)
t0=$(date +%s)
say() { echo "== [$(( $(date +%s) - t0 ))s] $*"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
git rev-parse HEAD >> "$OUT/device.txt" 2>/dev/null
for model in "${models[@]}"; do
  m=$(basename "$model" .py)
  for bk in 1 0; do
    TORCHINDUCTOR_BENCHMARK_KERNEL=$bk timeout 200 python3 bench/inductor_modes_probe.py names "$model" \
      --out "$OUT/$m-names-bk$bk.json" > "$OUT/$m-names-bk$bk.log" 2>&1; say "$m names bk=$bk: exit $?"
  done
  python3 - "$OUT/$m-names-bk1.json" "$OUT/$m-names-bk0.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
na, nb = [(k["name"], k["body"]) for k in a["kernels"]], [(k["name"], k["body"]) for k in b["kernels"]]
print("kernels", len(na), len(nb), "same names in order:", [n for n, _ in na] == [n for n, _ in nb],
      "same bodies:", sorted(h for _, h in na) == sorted(h for _, h in nb))
for (x, hx), (y, hy) in zip(na, nb):
    if x != y or hx != hy:
        print("  differs:", x, hx, "|", y, hy)
PY
  timeout 420 python3 bench/inductor_modes_probe.py modes "$model" --out "$OUT/$m-modes.json" 2>&1 \
    | tee "$OUT/$m-modes.log" | grep '^=='; say "$m modes done"
done
