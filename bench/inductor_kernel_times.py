"""Time each Triton kernel Inductor generates for a model, as a given compile mode tuned it.

    python3 bench/inductor_kernel_times.py MODEL_FILE --mode default|max-autotune --out times.json
        [--sources DIR]

``--sources DIR`` keeps each kernel module as DIR/<kernel>.py; times.json's ``configs`` names
the launch configuration the mode chose (what a default-vs-max-autotune difference is made of).

The model is compiled in this process with its own TORCHINDUCTOR_CACHE_DIR and
benchmark_kernel on (each kernel module then carries get_args()/call()); every kernel module is
then imported on its own and timed with triton.testing.do_bench (median), so the numbers are
comparable with the standalone kernel files kernelopt tunes. ``max-autotune`` also turns on
coordinate-descent tuning; matmuls stay on cuBLAS (ATEN) so only Triton kernels are tuned.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("model_file", type=Path)
    ap.add_argument("--mode", default="default", choices=["default", "max-autotune"])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--sources", type=Path, default=None)
    ns = ap.parse_args()
    cache = Path(tempfile.mkdtemp(prefix=f"ind-{ns.mode}-"))
    os.environ.update(TORCHINDUCTOR_CACHE_DIR=str(cache), TORCHINDUCTOR_FX_GRAPH_CACHE="0",
                      TORCHINDUCTOR_BENCHMARK_KERNEL="1")
    import torch
    import torch._inductor.config as config
    import triton.testing
    from kernelopt_triton.inductor import build_model, load_model_file

    if ns.mode == "max-autotune":
        config.coordinate_descent_tuning = True
        config.max_autotune_gemm_backends = "ATEN"  # same cuBLAS matmuls on both sides
    module = load_model_file(ns.model_file)
    model = build_model(module, "cuda")
    args = module.inputs(0, "cuda")
    compiled = torch.compile(model, mode=None if ns.mode == "default" else "max-autotune-no-cudagraphs")
    with torch.no_grad():
        compiled(*args)
        torch.cuda.synchronize()
    times: dict[str, float] = {}
    configs: dict[str, str] = {}
    if ns.sources is not None:
        ns.sources.mkdir(parents=True, exist_ok=True)
    for path in sorted(cache.rglob("*.py")):
        text = path.read_text(errors="replace")
        if "@triton.jit" not in text or "def get_args()" not in text or "AsyncCompile()" in text:
            continue
        spec = importlib.util.spec_from_file_location(f"k_{path.stem}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        name = next(n for n in vars(mod) if n.startswith("triton_") and hasattr(getattr(mod, n), "run"))
        kargs = mod.get_args()
        mod.call(kargs)  # autotunes as the mode's metadata says
        times[name] = float(triton.testing.do_bench(lambda m=mod, a=kargs: m.call(a), rep=200,
                                                    return_mode="median"))
        launchers = getattr(getattr(mod, name), "launchers", None) or []
        configs[name] = str(launchers[0].config) if launchers else "?"
        if ns.sources is not None:
            (ns.sources / f"{name}.py").write_text(text)
        print(f"{ns.mode:>12}  {times[name] * 1e3:9.1f} us  {name}  {configs[name]}", flush=True)
    ns.out.write_text(json.dumps({"mode": ns.mode, "model": str(ns.model_file), "ms": times,
                                  "configs": configs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
