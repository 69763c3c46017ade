"""kernelopt's model handed back on the GPU: ``kernelopt_triton.optimized(model, CHECK)`` in a
fresh process, as a user would call it, its outputs against eager (float64, the model's
TOLERANCE) and its time against the plain default compile, interleaved in this process.

    python3 bench/use_optimized.py MODEL_FILE CHECK [--rounds 10] [--windows 3]

CHECK: a campaign's name or folder, a model check's folder or model_compare.json. Prints one
JSON object: the choice (label, versus), ``how`` (what went into the compile), the match, each
side's median window (ms), spread, the paired ratio (``optimized_vs_default``: default's time
over optimized's, > 1 faster) with its band and rounds won, and the check's own figure for the
same pair.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time
from pathlib import Path
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model_file", type=Path)
    parser.add_argument("check")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--windows", type=int, default=3)
    ns = parser.parse_args()
    import kernelopt_triton
    import torch
    from kernelopt_triton.engine import ENGINE_SEED, compare, compile_apart, flatten_outputs, interleaved
    from kernelopt_triton.inductor import build_model, load_model_file, model_tolerance
    from kernelopt_triton.rounds import paired, spread

    module = load_model_file(ns.model_file)
    args = module.inputs(ENGINE_SEED, "cuda")
    tol = model_tolerance(module)
    out: dict[str, Any] = {"model": str(ns.model_file), "check": ns.check}
    with torch.no_grad():
        eager = build_model(module, "cuda")
        expected = flatten_outputs(eager(*args))
        fast = kernelopt_triton.optimized(copy.deepcopy(eager), ns.check)
        t0 = time.perf_counter()
        for _ in range(3):  # CUDA graph trees record on a later call than the first
            got = flatten_outputs(fast(*args))
        out["optimized_first_calls_s"] = round(time.perf_counter() - t0, 1)
        default = compile_apart(torch, eager, {}, "default")
        for _ in range(3):
            flatten_outputs(default(*args))
        ok, detail = compare(got, expected, tol["atol"], tol["rtol"])
        out.update(choice=fast.choice.label, versus=fast.choice.versus, how=fast.how,
                   why=fast.choice.why, match_eager=ok, detail=detail)
        times = interleaved(torch, {"optimized": lambda: fast(*args),
                                    "default": lambda: default(*args)},
                            lambda _label: None, True, ns.rounds, ns.windows, each_window=True)
    for label, readings in times.items():
        out[label] = {"ms": statistics.median(readings), "spread_pct": spread(readings),
                      "windows": len(readings)}
    # per round default's median window over optimized's: > 1, the handed-back model faster
    out["optimized_vs_default"] = paired(times["default"], times["optimized"], ns.windows)
    check = json.loads(Path(fast.choice.file).read_text())
    out["check_kernelopt_vs_default"] = check.get("kernelopt_vs_default")
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
