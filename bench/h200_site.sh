# Sourced by bench/h200_*.sh: install this repo's packages (and the carried third-party wheels)
# from .whl/ into /tmp/site once per machine, and put them first on PYTHONPATH and PATH.
# SITE_MARKER: the package directory whose presence means "already installed" (kernelopt_core).
if [ ! -d "/tmp/site/${SITE_MARKER:-kernelopt_core}" ] && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
fi
save_run() {  # save_run NAME: copy the last run's artifacts ($KERNELOPT_HOME/runs) to $OUT/NAME
  local run; run=$(ls -td "$KERNELOPT_HOME"/runs/*/ 2>/dev/null | head -1 || true)  # the newest
  [ -n "$run" ] || return 0
  mkdir -p "$OUT/$1"
  cp "$run"/{summary.json,report.md,report.diff,journal.jsonl} "$OUT/$1/" 2>/dev/null || true
}
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
model_device_txt() {  # model_device_txt FILE: the GPU, driver, checkout and the model stack's versions
  { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; git rev-parse HEAD 2>/dev/null
    python3 -c 'import torch, triton, transformers, timm; print("torch", torch.__version__, "triton", triton.__version__, "transformers", transformers.__version__, "timm", timm.__version__)'
  } > "$1" 2>&1
}
show_modes() {  # show_modes FILE: a model_compare line, a mode a line (its failed settings first)
  python3 - "$1" <<'P'
import json, sys
r = json.load(open(sys.argv[1])); base = r["baseline"]
for name, m in r.get("failed_settings", {}).items():
    print(f"  {name}: FAILED {m['failed'][:200]}")
for name, m in r["modes"].items():
    extra = f" vs {base} {m['vs_baseline']:.4f} ±{m['vs_baseline_band_pct']}%" if "vs_baseline" in m else ""
    print(f"  {name}: {m['ms']:.4f} ms ±{m['spread_pct']}% match={m['match']} compile={m.get('compile_s')}s{extra}")
print(f"  kernelopt: {r['kernelopt']} ({r.get('choice', {}).get('why', '')})")
P
}
