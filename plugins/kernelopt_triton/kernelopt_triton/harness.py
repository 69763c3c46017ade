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
import contextlib
import importlib.util
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from kernelopt_triton import leak
from kernelopt_triton.compile_ahead import CompileAhead
from kernelopt_triton.contract import _shown, call, contract, takes
from kernelopt_triton.loading import ConventionError, DeadlinePassed, deadline, load, module_name
from kernelopt_triton.timing import Timer

# Captured before any kernel file is imported: a candidate that patches the clock patches a
# copy we never read.
_perf_counter = time.perf_counter
# bound at import, before any kernel file: a candidate that rebinds json, os, statistics or
# math does not change the line the bench mode prints (code that reaches into this process's
# objects, through gc or frames, is what the policy gate bans)
_dumps, _write, _exit = json.dumps, os.write, os._exit
_median, _isfinite = statistics.median, math.isfinite
EXIT_WRONG, EXIT_CONVENTION, EXIT_PREREQUISITE = 1, 2, 3
# warm-up after idle: at least 20 ms, then until the launches settle, at most 200 ms (the fixed
# 200 ms before 2026-12-01; bench/results/2026-12-01-h200-inductor, session 6, compares them)
IDLE_WARM_UP_MS = (20.0, 200.0)
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
        from kernelopt_triton.interpreter import patch_interpreter  # one patch, one marker

        patch_interpreter()
    return torch, ("cpu" if interpreted else "cuda"), interpreted


def make_args(torch: Any, spec: dict[str, Any], seed: int, device: str) -> list[Any]:
    made = call(spec["make_args"], (seed, device), "make_args(seed, device)", spec["name"])
    if not isinstance(made, (list, tuple)):
        raise ConventionError(f"{spec['name']}: make_args(seed, device) must return a list of "
                              f"launch's args, got {_shown(made)}")
    args = list(made)
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
            def __torch_function__(self, func, types, args=(), kwargs=None):
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
    """Check one kernel file on every seed in one process; a summary per seed."""
    return Session(path, oracle, seeds, bench_seeds=None).check()


def run_bench(path: Path, oracle: Path | None = None, iters: int | None = None,
              warmup: int | None = None) -> dict[str, Any]:
    """One bench reading in a fresh process (``bench`` mode)."""
    return Session(path, oracle, ()).bench(iters=iters, min_launches=warmup)


class Session:
    """One tree's kernel file, loaded once: the check and bench of a fresh process, and the
    state a bench worker keeps between requests.

    Everything the verdict rests on — tolerance, outputs, inputs and expected values of every
    seed, the bench's two input sets, the original's torch calls, the timer — comes from the
    original file and is fixed before the candidate is imported, so a candidate cannot reach
    into the original module to loosen it. Module state the candidate keeps between seeds (a
    cache) faces every later seed's new inputs; the timed calls alternate two input sets whose
    seeds a worker receives at load (drawn per run), so a kernel file cannot prepare for them.
    Code under test runs in this process: what keeps it from reaching this object (gc,
    frames, setattr) is the policy gate, not this class."""

    def __init__(self, path: Path, oracle: Path | None, seeds: tuple[int, ...],
                 bench_seeds: tuple[int, int] | None = (0, 1)) -> None:
        torch, device, interpreted = setup_device()
        self.torch, self.device, self.interpreted, self.path = torch, device, interpreted, path
        self.stages: dict[str, float] = {}  # seconds of each part of the load (journaled)
        mark = _perf_counter()

        def lap(stage: str) -> None:
            nonlocal mark
            now = _perf_counter()
            self.stages[stage] = round(now - mark, 3)
            mark = now

        self.timer = Timer(torch, device, interpreted)  # bound before any kernel file
        # no original given: the file is its own oracle (loaded once: Triton's interpreter does
        # not take the same file loaded as two modules)
        self.oracle_module = load(oracle if oracle is not None else path, "oracle")
        self.oracle = oracle if oracle is not None else path
        self.spec = spec = contract(self.oracle_module, self.oracle)
        lap("import_original")
        # one make_args and one reference per seed: the "new values in the same buffers" of a
        # seed's third launch are the next seed's (a single seed: seed + 7919's), so the load
        # a worker does under the GPU lock makes each input set once (make_args is often a
        # CPU generator: ~0.45 s per call for f32[8192,8192])
        values = [make_args(torch, spec, seed, device) for seed in seeds]
        if len(seeds) == 1:
            values.append(make_args(torch, spec, seeds[0] + 7919, device))
        originals = [self._clones(v) for v in values]
        lap("inputs")
        expected = [self._expected(o) for o in originals]
        lap("expected")
        self.cases = []
        for n, seed in enumerate(seeds):
            k = (n + 1) % len(values)
            self.cases.append((seed, values[n], originals[n], expected[n], originals[k],
                               expected[k]))
        # the bench's two input sets (a worker gets them from the core at load: drawn per run,
        # unknown to the kernel file when it is imported); a check-only process makes none
        self.args: list[Any] = []
        self.values: list[list[Any]] = []
        if bench_seeds is not None:
            self.args = make_args(torch, spec, bench_seeds[0], device)
            self.values = [self._clones(self.args),
                           self._clones(make_args(torch, spec, bench_seeds[1], device))]
        # the next sweep's configurations compiled before the GPU lock (compile_ahead.py)
        self.ahead: CompileAhead | None = None
        self.ahead_dir: Path | None = None
        self.base_calls: set[str] | None = None
        if self.oracle.read_bytes() != path.read_bytes():
            base_args = self._clones(originals[0] if seeds else self.values[0])
            takes(self.oracle_module.launch, base_args, "launch(*args)", spec["name"])
            with _CallRecorder() as recorder:
                self.oracle_module.launch(*base_args)
            _sync(torch, device)
            self.base_calls = recorder.calls
        lap("bench_inputs_and_calls")
        # only now: the expectations above are fixed
        self.candidate = load(path, "candidate") if self.oracle != path else self.oracle_module
        if not callable(getattr(self.candidate, "launch", None)):
            raise ConventionError(f"{path.name} does not define launch(*args)")
        takes(self.candidate.launch, values[0] if values else self.args, "launch(*args)",
              path.name)
        lap("import_candidate")
        self.checksums: list[float] | None = None

    def _clones(self, values: list[Any]) -> list[Any]:
        return [a.clone() if isinstance(a, self.torch.Tensor) else a for a in values]

    def _expected(self, originals: list[Any]) -> list[Any]:
        copies = self._clones(originals)
        with self.torch.no_grad():
            got = call(self.spec["reference"], copies, "reference(*args)", self.spec["name"])
        if not isinstance(got, (list, tuple)) or not all(
                isinstance(w, self.torch.Tensor) for w in got):
            raise ConventionError(f"{self.spec['name']}: reference(*args) must return a list of "
                                  f"tensors, one per OUTPUTS index, got {_shown(got)}")
        want = [w.clone() for w in got]
        if len(want) != len(self.spec["outputs"]):
            raise ConventionError(f"{self.spec['name']}: reference returned {len(want)} tensors "
                                  f"for {len(self.spec['outputs'])} OUTPUTS")
        return want

    def check(self, module: ModuleType | None = None, cases: list[Any] | None = None) -> list[str]:
        module = module or self.candidate
        return [_check_seed(self.torch, self.device, self.spec, module, case, self.base_calls,
                            self.path.name) for case in (self.cases if cases is None else cases)]

    def _use(self, k: int) -> None:
        """Seed k's values into the bench buffers; outputs prepared (poisoned or restored)."""
        with self.torch.no_grad():
            for arg, value in zip(self.args, self.values[k], strict=True):
                if isinstance(arg, self.torch.Tensor) and value.shape == arg.shape:
                    arg.copy_(value)
        _prepare(self.torch, self.args, self.values[k], self.spec)

    def _verify(self, launch: Any) -> list[float]:
        """The verification calls: the timed shape on poisoned outputs, both input sets."""
        sums = []
        for k in (0, 1):
            self._use(k)
            launch(*self.args)
            _sync(self.torch, self.device)
            sums.append(_checksum(self.torch, self.args, self.spec["outputs"]))
        return sums

    def bench(self, work: float = 1.0, iters: int | None = None, min_launches: int | None = None,
              module: ModuleType | None = None) -> dict[str, Any]:
        """One reading: the median of the timed windows (kernelopt_triton.timing).

        Timed launches alternate between two sets of input values (seeds 0 and 1, copied into
        the same buffers outside the timed window), so a result cached by input fingerprint is
        not timed as a copy. The checksum is the seed-0 verification call's; the last timed
        launch must reproduce its own seed's. ``work`` < 1 (gate self-test only) narrows every
        tensor argument to the first ⌈work·n⌉ rows of its first dimension."""
        torch, spec, timer = self.torch, self.spec, self.timer
        launch = (module or self.candidate).launch
        first = not timer.warmed
        if first or module is not None:
            # compiles (and autotunes) outside the timed window
            for _ in range(1 if self.interpreted else 2):
                self._use(0)
                launch(*self.args)
            _sync(torch, self.device)
        checksums = self._verify(launch)
        if module is None and self.checksums is None:
            self.checksums = checksums
        if (first or module is not None) and not self.interpreted:  # once a content, untimed
            self._use(0)
            leak.probe(torch, lambda: launch(*self.args))
        args = self.args if work >= 1.0 else _narrow(torch, self.args, work)
        state = {"n": 0}

        def prepare() -> None:
            self._use(state["n"] % 2)
            state["n"] += 1

        def call() -> None:
            launch(*args)

        if self.interpreted:
            estimate = timer.warm_up(prepare, call, 0.0, min_launches or 1)
        else:
            # after idle the clocks ramp (seen: 0.39, 0.29, 0.27 ms before 0.257 steady): on a
            # first or idle reading, launches until they stop getting faster (IDLE_WARM_UP_MS:
            # at least, at most); a short warm-up between back-to-back requests
            idle = first or _perf_counter() - timer.last_used > 1.0
            low, high = IDLE_WARM_UP_MS if idle else (5.0, 5.0)
            estimate = timer.warm_up(prepare, call, low, min_launches or (10 if idle else 3), high)
        if iters is None:
            # about 5 ms of kernel time per reading, 20 to 50 windows
            iters = 4 if self.interpreted else int(min(50, max(20, 5.0 / max(estimate, 1e-3))))
        state["n"] = 0
        times, info = timer.time(prepare, call, iters)
        _sync(torch, self.device)
        after, want = _checksum(torch, self.args, spec["outputs"]), checksums[(iters - 1) % 2]
        consistent = work < 1.0 or (
            _isfinite(after) and abs(after - want) <= 1e-6 * max(abs(want), 1e-30))
        checksum = checksums[0]
        reading: dict[str, Any] = {
            "kernelopt_bench": 1, "time_ms": _median(times), "shape": spec["shape"],
            "bytes": spec["bytes"] if isinstance(spec["bytes"], int) else None,
            "checksum": checksum if _isfinite(checksum) and consistent else "nan",
            "iters": iters, "device": self.device, **info,
        }
        if work < 1.0:
            reading["work"] = work
        if self.interpreted:
            reading["interpreted"] = True
        if not consistent:
            reading["note"] = (f"outputs after the timed calls (checksum {after!r}) differ from "
                               f"the verification call's on the same inputs ({want!r})")
        return reading

    def compile(self, configs: list[dict[str, Any]], deadline_s: float | None = None
                ) -> dict[str, Any]:
        """The ``compile`` request, sent outside the GPU lock before a ``sweep`` of the same
        configurations: their kernels compiled without launching them (compile_ahead.py)."""
        self._forget_ahead()
        if self.interpreted:  # the interpreter compiles nothing
            return {"compiled": 0, "stuck": 0}
        self.ahead = CompileAhead()
        self.ahead_dir = Path(tempfile.mkdtemp(prefix="kernelopt-ahead-"))
        variants = self._variants(self.ahead_dir, configs, "ahead")
        # the bench buffers as they are: a compile reads only their dtypes and alignment
        return self.ahead.compile(variants, self.args, deadline_s)

    def _variants(self, directory: Path, configs: list[dict[str, Any]],
                  role: str) -> list[tuple[Path, str, str]]:
        """Each configuration's source written as its own file: (file, module role, text)."""
        source = self.path.read_text(encoding="utf-8")
        out = []
        for n, config in enumerate(configs):
            text = config.get("files", {}).get(self.path.name, source)
            variant = directory / f"{self.path.stem}_{role}{n}.py"
            variant.write_text(text, encoding="utf-8")
            out.append((variant, f"{role}{n}", text))
        return out

    def _forget_ahead(self) -> None:
        if self.ahead is not None:
            self.ahead.release()
            self.ahead = None
        if self.ahead_dir is not None:
            _remove_dir(self.ahead_dir)
            self.ahead_dir = None

    def sweep(self, configs: list[dict[str, Any]], iters: int | None = None,
              deadline_s: float | None = None) -> dict[str, Any]:
        """Bulk screening: each configuration's source (``{"files": {name: text}}``, the knobs
        already applied by the core) loaded as its own module, checked on the first seed and
        timed here, one at a time, its kernels compiled ahead by a ``compile`` request outside
        the GPU lock when the core sent one (compile_ahead.py). Each result says how long the
        worker spent on it (seconds). A configuration that fails to compile or check, or takes
        longer than ``deadline_s`` (a huge tile can compile for minutes), costs that, not a
        candidate."""
        reference = self.bench(iters=iters)["time_ms"]
        results: list[dict[str, Any]] = []
        scratch = Path(tempfile.mkdtemp(prefix="kernelopt-sweep-"))
        try:
            for variant, role, text in self._variants(scratch, configs, "sweep"):
                # compiled ahead (outside the lock): the module, or why it is not tried
                prepared = self.ahead.take(text) if self.ahead else None
                if isinstance(prepared, str):  # still compiling ahead at its deadline
                    results.append({"ok": False, "error": prepared})
                    continue
                result: dict[str, Any] | None = None
                started = _perf_counter()
                try:
                    with deadline(deadline_s):
                        result = self._sweep_one(variant, role, iters, prepared)
                except DeadlinePassed as exc:  # fired just as the configuration finished
                    result = result or {"ok": False, "error": str(exc)}
                results.append({**result, "seconds": round(_perf_counter() - started, 3)})
        finally:
            _remove_dir(scratch)
            self._forget_ahead()
        return {"reference_ms": reference, "results": results}

    def close(self) -> None:
        """What the session holds beyond this process: the compiled-ahead files."""
        self._forget_ahead()

    def _sweep_one(self, variant: Path, role: str, iters: int | None,
                   compiled: ModuleType | None = None) -> dict[str, Any]:
        try:
            module = compiled or load(variant, role)
            try:
                self.check(module, self.cases[:1])
                reading = self.bench(iters=iters, module=module)
            finally:
                sys.modules.pop(module.__name__, None)
            return {"ok": True, "time_ms": reading["time_ms"], "timer": reading["timer"]}
        except Mismatch as exc:
            return {"ok": False, "error": f"wrong output: {exc}"[:500]}
        except DeadlinePassed as exc:
            with contextlib.suppress(Exception):  # let what it queued on the device finish
                _sync(self.torch, self.device)
            return {"ok": False, "error": str(exc)}
        except Exception as exc:  # a compile error, an invalid launch: this config's failure
            sys.modules.pop(module_name(variant, role), None)  # a half-done import
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:500]}


def _remove_dir(directory: Path) -> None:
    """A scratch directory of variants, and the sys.path entry load() made for it."""
    shutil.rmtree(directory, ignore_errors=True)
    if str(directory) in sys.path:
        sys.path.remove(str(directory))


def _narrow(torch: Any, args: list[Any], work: float) -> list[Any]:
    out = []
    for a in args:
        if isinstance(a, torch.Tensor) and a.dim() >= 1 and a.shape[0] > 1:
            a = a.narrow(0, 0, max(1, math.ceil(work * a.shape[0])))
        out.append(a)
    return out


def _check_seed(torch: Any, device: str, spec: dict[str, Any], candidate: ModuleType,
                case: tuple[Any, ...], base_calls: set[str] | None, name: str) -> str:
    """Three launches on one seed's buffers (see Session), each compared in float64."""
    seed, args, first, want_first, fresh, want_fresh = case
    outputs, atol, rtol = spec["outputs"], spec["atol"], spec["rtol"]
    with torch.no_grad():  # the seed's own values: a case is checked again for each sweep config
        for arg, original in zip(args, first, strict=True):
            if isinstance(arg, torch.Tensor):
                arg.copy_(original)

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


def _seed_list(text: str) -> tuple[int, ...]:
    try:
        seeds = tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        seeds = ()
    if not seeds:
        raise SystemExit(f"--seeds {text!r}: give comma-separated integers, e.g. 1,2,3")
    return seeds


def _library_imports(original: Path | None) -> list[str]:
    """The torch and triton modules the original kernel file imports at its top level (read,
    not run): Inductor's runtime alone takes seconds, better spent before the first request."""
    import ast

    try:
        tree = ast.parse(original.read_text(encoding="utf-8")) if original else None
    except (OSError, SyntaxError, ValueError):
        return []
    names: list[str] = []
    for node in tree.body if tree else []:
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
    return [n for n in names if n.split(".")[0] in ("torch", "triton")]


def _warm_start(original: Path | None = None) -> None:
    torch, device, _interpreted = setup_device()
    import triton  # noqa: F401 - imported for its start-up cost, before any request

    for name in _library_imports(original):  # library code only: the original names them
        with contextlib.suppress(Exception):
            importlib.import_module(name)

    if device == "cuda":
        torch.cuda.init()
        torch.empty(1, device="cuda")  # the context exists before the first locked request


def serve_requests(path: Path, oracle: Path | None) -> int:
    """The bench-worker loop (kernelopt_core.bench_worker): the channel is bound and ``hello``
    answered before torch, triton or any kernel file is imported. Requests: ``load`` (seeds:
    the original's expectations, then the candidate; its reply lists the optional ``compile``),
    ``check``, ``bench`` (work), ``compile`` (configs, sent outside the GPU lock just before
    their sweep) and ``sweep`` (configs). A failure is a reply (exit 1 wrong output, 2
    convention, 4 anything else)."""
    import traceback

    from kernelopt_core.bench_worker import Channel

    # torch, triton and the CUDA context before hello's reply: the core starts workers
    # outside the GPU lock, so this start-up is never counted as (or blocks) GPU time
    channel = Channel.from_env(setup=lambda: _warm_start(oracle))
    session: Session | None = None
    while (request := channel.read()) is not None:
        op = request.get("op")
        try:
            if op == "load":
                bench_seeds = tuple(int(s) for s in request.get("bench_seeds", (0, 1)))[:2]
                if session is not None:
                    session.close()
                session = Session(path, oracle, tuple(int(s) for s in request.get("seeds", ())),
                                  bench_seeds if len(bench_seeds) == 2 else (0, 1))
                channel.reply(request, ok=True, device=session.device,
                              interpreted=session.interpreted, ops=["compile"],
                              stages=session.stages)
                continue
            if session is None:
                raise ConventionError(f"request {op!r} before load")
            if op == "check":
                channel.reply(request, ok=True, lines=session.check())
            elif op == "bench":
                channel.reply(request, ok=True,
                              reading=session.bench(float(request.get("work", 1.0)),
                                                    request.get("iters")))
            elif op == "compile":
                channel.reply(request, ok=True, **session.compile(
                    request.get("configs", []), request.get("deadline_s")))
            elif op == "sweep":
                channel.reply(request, ok=True, **session.sweep(
                    request.get("configs", []), request.get("iters"), request.get("deadline_s")))
            else:
                channel.reply(request, ok=False, exit=2, error=f"unknown request {op!r}")
        except Mismatch as exc:
            channel.reply(request, ok=False, exit=EXIT_WRONG, error=f"MISMATCH: {exc}")
        except ConventionError as exc:
            channel.reply(request, ok=False, exit=EXIT_CONVENTION, error=f"kernel file: {exc}")
        except SystemExit as exc:  # a prerequisite missing (exit 3) or a kernel file leaving
            channel.reply(request, ok=False, exit=exc.code if isinstance(exc.code, int) else 4,
                          error=f"exited during {op}: {exc}")
            break
        except BaseException:
            channel.reply(request, ok=False, exit=4, error=traceback.format_exc()[-4000:])
    if session is not None:
        session.close()
    Channel.leave(0)
    return 0


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
    bench.add_argument("--iters", type=int, default=None,
                       help="timed launches [about 5 ms of kernel time, 20-50; 4 interpreted]")
    bench.add_argument("--warmup", type=int, default=None)
    serve = sub.add_parser("serve", help="a bench worker: serve load/check/bench/compile/sweep requests "
                           "on the pipes kernelopt passes (KERNELOPT_WORKER_FDS)")
    serve.add_argument("file", type=Path)
    serve.add_argument("--oracle", type=Path)
    args = parser.parse_args(argv)
    if args.mode == "serve":
        return serve_requests(args.file, args.oracle)
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
    except SystemExit as exc:
        if exc.code not in (0, None):  # a prerequisite missing (3): the harness's own exit
            raise
        # the kernel file left the process "successfully": no result is never a pass
        print(f"kernel file: exited during {args.mode} (SystemExit({exc.code!r}))",
              file=sys.stderr, flush=True)
        return 4
    sys.stdout.flush()
    # Ours is the last line: leave before any atexit handler of the kernel file can print.
    _write(1, (line + "\n").encode())
    _exit(0)


if __name__ == "__main__":
    raise SystemExit(main())
