"""The child process behind the ``triton`` backend's check and bench commands.

    python -m kernelopt_triton.harness check FILE --seed N [--oracle ORIGINAL]
    python -m kernelopt_triton.harness bench FILE [--oracle ORIGINAL] [--iters N]

FILE is a kernel file (docs/triton.md). ``--oracle`` names the user's original file: its
``make_args``, ``reference``, ``TOLERANCE``, ``OUTPUTS``, ``SHAPE`` and ``BYTES`` are the
contract, so a candidate that edits them changes nothing but its own ``launch`` and kernels.

Exit codes: 0 correct (check) / measured (bench), 1 wrong output, 2 the file breaks the
convention, 3 torch or triton is missing. Without a usable GPU the kernels run under Triton's
interpreter (``TRITON_INTERPRET=1``, set before triton is imported) on CPU tensors, and the
bench line says ``"interpreted": true``.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from kernelopt_triton.convention import REQUIRED_FUNCTIONS, REQUIRED_NAMES

# Captured before any kernel file is imported: a candidate that patches the clock patches a
# copy we never read.
_perf_counter = time.perf_counter
# bound at import, before any kernel file: a candidate that patches json, os, statistics or
# math cannot rewrite the one line this process prints
_dumps, _write, _exit = json.dumps, os.write, os._exit
_median, _isfinite = statistics.median, math.isfinite
EXIT_WRONG, EXIT_CONVENTION, EXIT_PREREQUISITE = 1, 2, 3
FLUSH_BYTES = 256 << 20  # larger than the H200's 50 MiB L2 (and any other GPU's)
# Torch functions and tensor methods a launch may call besides its Triton kernels without
# computing anything itself (shapes, pointers, allocation, views, zeroed buffers).
ALLOWED_CALLS = {
    "__get__", "data_ptr", "numel", "size", "stride", "storage_offset", "untyped_storage", "dim",
    "element_size", "is_contiguous", "nelement", "get_device", "__len__", "__index__", "__hash__",
    "__eq__", "__ne__", "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided",
    "view", "reshape", "as_strided", "t", "transpose", "permute", "expand", "detach", "unsqueeze",
    "squeeze", "flatten", "unflatten", "contiguous", "__getitem__", "select", "narrow", "split",
    "chunk", "unbind", "zero_", "fill_", "zeros", "zeros_like", "full", "full_like", "new_zeros",
    "new_full", "ones", "ones_like", "new_ones",
}


class ConventionError(Exception):
    """The kernel file does not follow the convention (exit 2)."""


class Mismatch(Exception):
    """The kernel's output is wrong (exit 1)."""


def _fail_prerequisite(missing: str) -> None:
    print(f"kernelopt-triton: {missing} is not installed in {sys.executable}; install it with "
          f"`{sys.executable} -m pip install torch triton` (a CPU torch is enough: kernels then "
          "run under Triton's interpreter)", file=sys.stderr)
    raise SystemExit(EXIT_PREREQUISITE)


def setup_device() -> tuple[Any, str, bool]:
    """Import torch, pick the device and, without a GPU, switch triton to its interpreter."""
    if importlib.util.find_spec("torch") is None:
        _fail_prerequisite("torch")
    import torch

    interpreted = os.environ.get("TRITON_INTERPRET") == "1" or not torch.cuda.is_available()
    if interpreted:
        os.environ["TRITON_INTERPRET"] = "1"  # must precede `import triton`
    if importlib.util.find_spec("triton") is None:
        _fail_prerequisite("triton")
    if interpreted:
        from kernelopt_triton.inductor import patch_interpreter  # one patch, one marker

        patch_interpreter()
    return torch, ("cpu" if interpreted else "cuda"), interpreted


def load(path: Path, role: str) -> ModuleType:
    """Import a kernel file by path under a unique module name (no bytecode written)."""
    sys.dont_write_bytecode = True  # keep the workspace's source tree clean
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:10]
    name = f"kernelopt_kernel_{role}_{path.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConventionError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # triton's jit and dataclasses look modules up by name
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))  # sibling helper modules
    spec.loader.exec_module(module)
    return module


def contract(module: ModuleType, path: Path) -> dict[str, Any]:
    """The convention's names, validated."""
    missing = [n for n in (*REQUIRED_FUNCTIONS, *REQUIRED_NAMES) if not hasattr(module, n)]
    if missing:
        raise ConventionError(f"{path.name} does not define {', '.join(missing)} "
                              "(docs/triton.md lists what a kernel file defines)")
    tol = module.TOLERANCE
    if not isinstance(tol, dict) or set(tol) - {"atol", "rtol"} or not tol:
        raise ConventionError(f"{path.name}: TOLERANCE must be a dict with atol and rtol, "
                              f"got {tol!r}")
    outputs = tuple(module.OUTPUTS)
    if not outputs or not all(isinstance(i, int) for i in outputs):
        raise ConventionError(f"{path.name}: OUTPUTS must be a non-empty tuple of arg indices")
    inplace = tuple(getattr(module, "INPLACE", ()))
    if not set(inplace) <= set(outputs):
        raise ConventionError(f"{path.name}: INPLACE {inplace!r} must be among OUTPUTS {outputs!r}")
    return {"make_args": module.make_args, "reference": module.reference,
            "atol": float(tol.get("atol", 0.0)), "rtol": float(tol.get("rtol", 0.0)),
            "outputs": outputs, "inplace": inplace, "shape": str(module.SHAPE),
            "bytes": getattr(module, "BYTES", None), "name": path.name}


def make_args(torch: Any, spec: dict[str, Any], seed: int, device: str) -> list[Any]:
    args = list(spec["make_args"](seed, device))
    for i in spec["outputs"]:
        if not -len(args) <= i < len(args) or not isinstance(args[i], torch.Tensor):
            raise ConventionError(f"{spec['name']}: OUTPUTS names arg {i}, which is not a tensor "
                                  f"of make_args' {len(args)} args")
    inputs = [a for i, a in enumerate(args) if isinstance(a, torch.Tensor) and i not in spec["outputs"]]
    if inputs and all(a.numel() == 0 or not bool(a.any()) for a in inputs):
        raise ConventionError(f"{spec['name']}: make_args gave all-zero inputs; correctness needs "
                              "fresh random inputs for every seed")
    return args


def poison(torch: Any, tensor: Any, expected: Any = None) -> None:
    """Fill an output with a value no honest kernel leaves behind."""
    if tensor.dtype.is_floating_point or tensor.dtype.is_complex:
        tensor.fill_(float("nan"))
    elif tensor.dtype == torch.bool:
        if expected is not None and expected.shape == tensor.shape:
            tensor.copy_(~expected.to(device=tensor.device, dtype=torch.bool))
        else:
            tensor.fill_(True)
    else:
        info = torch.iinfo(tensor.dtype)  # e.g. -2147483647 (or 255 unsigned): no plausible result
        tensor.fill_(info.max if info.min == 0 else info.min + 1)


def compare(torch: Any, got: Any, want: Any, atol: float, rtol: float, what: str) -> None:
    """|got - want| <= atol + rtol * |want| in float64, NaN/Inf where and only where expected."""
    if tuple(got.shape) != tuple(want.shape):
        raise Mismatch(f"{what}: shape {tuple(got.shape)} but the reference has {tuple(want.shape)}")
    a = got.detach().to(torch.float64)
    b = want.detach().to(device=a.device, dtype=torch.float64)
    both_nan = a.isnan() & b.isnan()
    same_inf = a.isinf() & b.isinf() & (a == b)
    close = (a - b).abs() <= atol + rtol * b.abs()
    bad = ~(close | both_nan | same_inf)
    count = int(bad.sum())
    if count:
        index = tuple(int(i) for i in bad.nonzero()[0])
        err = (a - b).abs()[bad]
        raise Mismatch(
            f"{what}: {count} of {a.numel()} elements differ; first at {list(index)}: got "
            f"{float(a[index])!r}, want {float(b[index])!r} (atol {atol:g}, rtol {rtol:g}; "
            f"max abs error {float(err.nan_to_num(nan=math.inf).max()):.3g})")


def _same(torch: Any, a: Any, b: Any) -> bool:
    if a.dtype.is_floating_point:
        return bool(((a == b) | (a.isnan() & b.isnan())).all())
    return bool(torch.equal(a, b))


class _CallRecorder:
    """Records the torch functions and tensor methods a launch calls from Python (a Triton
    kernel launch itself calls none but pointer and shape queries)."""

    def __init__(self) -> None:
        from torch.overrides import TorchFunctionMode

        calls: set[str] = set()

        class Mode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
                calls.add(getattr(func, "__name__", None) or str(func))
                return func(*args, **(kwargs or {}))

        self.calls = calls
        self.mode = Mode()

    def __enter__(self) -> _CallRecorder:
        self.mode.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.mode.__exit__(*exc)


def _sync(torch: Any, device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _prepare(torch: Any, args: list[Any], originals: list[Any], spec: dict[str, Any],
             expected: list[Any] | None = None) -> None:
    """Before a launch: outputs poisoned, in-place outputs (read before written) restored."""
    for n, i in enumerate(spec["outputs"]):
        if i in spec["inplace"]:
            with torch.no_grad():
                args[i].copy_(originals[i])
        else:
            poison(torch, args[i], expected[n] if expected is not None else None)


def run_check(path: Path, seed: int, oracle: Path | None = None) -> str:
    """Check one kernel file on ``seed``; returns a summary, raises Mismatch/ConventionError."""
    return run_checks(path, (seed,), oracle)[0]


def run_checks(path: Path, seeds: tuple[int, ...], oracle: Path | None = None) -> list[str]:
    """Check one kernel file on every seed in one process; a summary per seed.

    Everything the verdict rests on — tolerance, outputs, inputs and expected values of every
    seed — comes from the original file and is computed before the candidate is imported, so a
    candidate cannot reach into the original module to loosen it. Module state the candidate
    keeps between seeds (a cache) faces every later seed's new inputs."""
    torch, device, _interpreted = setup_device()
    # no original given: the file is its own oracle (loaded once: Triton's interpreter does not
    # take the same file loaded as two modules)
    oracle_module = load(oracle if oracle is not None else path, "oracle")
    oracle = oracle if oracle is not None else path
    spec = contract(oracle_module, oracle)
    outputs = spec["outputs"]

    def expected_for(originals: list[Any]) -> list[Any]:
        copies = [o.clone() if isinstance(o, torch.Tensor) else o for o in originals]
        with torch.no_grad():
            want = [w.clone() for w in spec["reference"](*copies)]
        if len(want) != len(outputs):
            raise ConventionError(f"{spec['name']}: reference returned {len(want)} tensors for "
                                  f"{len(outputs)} OUTPUTS")
        return want

    def clones(values: list[Any]) -> list[Any]:
        return [a.clone() if isinstance(a, torch.Tensor) else a for a in values]

    cases = []
    for seed in seeds:
        args = make_args(torch, spec, seed, device)
        first = clones(args)
        fresh = clones(make_args(torch, spec, seed + 7919, device))
        cases.append((seed, args, first, expected_for(first), fresh, expected_for(fresh)))
    base_calls: set[str] | None = None
    if oracle.read_bytes() != path.read_bytes():
        base_args = make_args(torch, spec, seeds[0], device)
        with _CallRecorder() as recorder:
            oracle_module.launch(*base_args)
        _sync(torch, device)
        base_calls = recorder.calls
    # only now: the expectations above are fixed
    candidate = load(path, "candidate") if oracle != path else oracle_module
    if not callable(getattr(candidate, "launch", None)):
        raise ConventionError(f"{path.name} does not define launch(*args)")
    return [_check_seed(torch, device, spec, candidate, case, base_calls, path.name)
            for case in cases]


def _check_seed(torch: Any, device: str, spec: dict[str, Any], candidate: ModuleType,
                case: tuple[Any, ...], base_calls: set[str] | None, name: str) -> str:
    """Three launches on one seed's buffers (see run_checks), each compared in float64."""
    seed, args, first, want_first, fresh, want_fresh = case
    outputs, atol, rtol = spec["outputs"], spec["atol"], spec["rtol"]

    def launch_and_compare(originals: list[Any], want: list[Any], label: str) -> set[str]:
        _prepare(torch, args, originals, spec, want)
        with _CallRecorder() as recorder:
            candidate.launch(*args)
        _sync(torch, device)
        for n, (i, expected) in enumerate(zip(outputs, want, strict=True)):
            compare(torch, args[i], expected, atol, rtol, f"{label}: output {n} (arg {i})")
        for i, (arg, original) in enumerate(zip(args, originals, strict=True)):
            if i not in outputs and isinstance(arg, torch.Tensor) and not _same(torch, arg, original):
                raise Mismatch(f"{label}: launch modified input arg {i} (inputs are read-only)")
        return recorder.calls

    ops = launch_and_compare(first, want_first, f"seed {seed}, first launch")
    # Same buffers, same values, outputs poisoned again: catches "already done" shortcuts.
    ops |= launch_and_compare(first, want_first, f"seed {seed}, second launch on the same args")
    # Same buffers (same pointers), new values: catches results cached by pointer.
    for arg, new in zip(args, fresh, strict=True):
        if isinstance(arg, torch.Tensor) and isinstance(new, torch.Tensor) and new.shape == arg.shape:
            with torch.no_grad():
                arg.copy_(new)
    ops |= launch_and_compare(fresh, want_fresh, f"seed {seed}, third launch with new inputs in "
                              "the same buffers")
    if base_calls is not None:
        # A launch that computes with torch ops the original does not use swapped in a vendor
        # library or fell back to eager: not a Triton optimization.
        extra = sorted(ops - base_calls - ALLOWED_CALLS)
        if extra:
            raise Mismatch(f"launch() computes with torch calls the original does not make: "
                           f"{', '.join(extra)} (a vendor library or an eager fallback is not a "
                           "Triton optimization)")
    return (f"ok: {name} seed {seed} on {device}, {len(outputs)} output(s) within atol "
            f"{atol:g} rtol {rtol:g}, three launches")


def _checksum(torch: Any, args: list[Any], outputs: tuple[int, ...]) -> float:
    total = 0.0
    for i in outputs:
        total += float(args[i].detach().to(torch.float64).abs().sum())
    return total


def run_bench(path: Path, oracle: Path | None = None, iters: int | None = None,
              warmup: int | None = None) -> dict[str, Any]:
    """One bench invocation: the median of ``iters`` timed launches.

    Timed launches alternate between two sets of input values (seeds 0 and 1, copied into the
    same buffers outside the timed window), so a result cached by input fingerprint is not
    timed as a copy; each is preceded by an L2 flush, and its window closes after a device-wide
    synchronize, so work moved to a side stream is inside it. The checksum is the seed-0
    verification call's; the last timed launch must reproduce its own seed's.
    """
    torch, device, interpreted = setup_device()
    # captured before the candidate is imported: a kernel file cannot swap the clock we read
    event_class, elapsed_time = torch.cuda.Event, torch.cuda.Event.elapsed_time
    synchronize = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    oracle = oracle if oracle is not None else path
    oracle_module = load(oracle, "oracle")
    spec = contract(oracle_module, oracle)
    outputs = spec["outputs"]
    args = make_args(torch, spec, 0, device)
    values = [[a.clone() if isinstance(a, torch.Tensor) else a for a in args],
              [a.clone() if isinstance(a, torch.Tensor) else a
               for a in make_args(torch, spec, 1, device)]]
    candidate = load(path, "candidate") if oracle != path else oracle_module
    launch = candidate.launch
    iters = iters or (4 if interpreted else 50)
    warmup = warmup if warmup is not None else (1 if interpreted else 5)

    def use(k: int) -> None:  # seed k's values into the same buffers; outputs prepared
        with torch.no_grad():
            for arg, value in zip(args, values[k], strict=True):
                if isinstance(arg, torch.Tensor) and value.shape == arg.shape:
                    arg.copy_(value)
        _prepare(torch, args, values[k], spec)

    for _ in range(warmup):  # compiles (and autotunes) outside the timed window
        use(0)
        launch(*args)
    _sync(torch, device)
    checksums = []
    for k in (0, 1):  # the verification calls: the timed shape, on poisoned outputs
        use(k)
        launch(*args)
        _sync(torch, device)
        checksums.append(_checksum(torch, args, outputs))
    flush = torch.empty(FLUSH_BYTES, dtype=torch.int8, device=device) if not interpreted else None
    times: list[float] = []
    events = []
    for n in range(iters):
        use(n % 2)
        if flush is not None:
            flush.zero_()
            start, end = event_class(enable_timing=True), event_class(enable_timing=True)
            start.record()
            launch(*args)
            synchronize()  # every stream's work, not only the current stream's
            end.record()
            events.append((start, end))
        else:
            t0 = _perf_counter()
            launch(*args)
            times.append((_perf_counter() - t0) * 1e3)
    _sync(torch, device)
    times += [elapsed_time(s, e) for s, e in events]
    after, want = _checksum(torch, args, outputs), checksums[(iters - 1) % 2]
    consistent = _isfinite(after) and abs(after - want) <= 1e-6 * max(abs(want), 1e-30)
    checksum = checksums[0]
    reading: dict[str, Any] = {
        "kernelopt_bench": 1, "time_ms": _median(times), "shape": spec["shape"],
        "bytes": spec["bytes"] if isinstance(spec["bytes"], int) else None,
        "checksum": checksum if _isfinite(checksum) and consistent else "nan",
        "cache_flushed": flush is not None, "timer": "interpreter" if interpreted else "cuda_event",
        "iters": iters, "device": device,
    }
    if interpreted:
        reading["interpreted"] = True
    if not consistent:
        reading["note"] = (f"outputs after the timed calls (checksum {after!r}) differ from the "
                           f"verification call's on the same inputs ({want!r})")
    return reading


def _seed_list(text: str) -> tuple[int, ...]:
    try:
        seeds = tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        seeds = ()
    if not seeds:
        raise SystemExit(f"--seeds {text!r}: give comma-separated integers, e.g. 1,2,3")
    return seeds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernelopt_triton.harness")
    sub = parser.add_subparsers(dest="mode", required=True)
    check = sub.add_parser("check", help="exit 0 when the kernel is correct on every seed")
    check.add_argument("file", type=Path)
    seeds = check.add_mutually_exclusive_group(required=True)
    seeds.add_argument("--seed", type=int)
    seeds.add_argument("--seeds", help="comma-separated: every seed in this one process")
    check.add_argument("--oracle", type=Path, help="the original file: make_args/reference/...")
    bench = sub.add_parser("bench", help="print one kernelopt JSON line")
    bench.add_argument("file", type=Path)
    bench.add_argument("--oracle", type=Path)
    bench.add_argument("--iters", type=int, default=None, help="timed launches [50; 4 interpreted]")
    bench.add_argument("--warmup", type=int, default=None)
    args = parser.parse_args(argv)
    try:
        if args.mode == "check":
            wanted = (args.seed,) if args.seed is not None else _seed_list(args.seeds)
            for line in run_checks(args.file, wanted, args.oracle):
                print(line, flush=True)
            return 0
        line = _dumps(run_bench(args.file, args.oracle, args.iters, args.warmup))
    except Mismatch as exc:
        print(f"MISMATCH: {exc}", file=sys.stderr, flush=True)
        return EXIT_WRONG
    except ConventionError as exc:
        print(f"kernel file: {exc}", file=sys.stderr, flush=True)
        return EXIT_CONVENTION
    sys.stdout.flush()
    # Ours is the last line: leave before any atexit handler of the kernel file can print.
    _write(1, (line + "\n").encode())
    _exit(0)


if __name__ == "__main__":
    raise SystemExit(main())
