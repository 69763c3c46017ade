"""The harness's session: one tree's kernel file loaded once, the original's expectations
fixed before the candidate is imported; its check, its bench reading, and the bulk ``compile``
and ``sweep`` of a bench worker (harness_serve.py) — the state a worker keeps between
requests."""

from __future__ import annotations

import contextlib
import math
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
from kernelopt_triton.harness_check import CallRecorder, Mismatch, check_seed, output_checksum
from kernelopt_triton.harness_device import setup_device, sync_device
from kernelopt_triton.harness_inputs import make_args, narrow_rows, prepare_outputs
from kernelopt_triton.loading import ConventionError, DeadlinePassed, deadline, load, module_name
from kernelopt_triton.timing import Timer

# Captured before any kernel file is imported (harness.py imports this module at its top): a
# candidate that patches the clock, statistics or math patches a copy we never read.
_perf_counter = time.perf_counter
_median, _isfinite = statistics.median, math.isfinite
# warm-up after idle: at least 20 ms, then until the launches settle, at most 200 ms (the fixed
# 200 ms before 2026-12-01; bench/results/2026-12-01-h200-inductor, session 6, compares them)
IDLE_WARM_UP_MS = (20.0, 200.0)


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
            with CallRecorder() as recorder:
                self.oracle_module.launch(*base_args)
            sync_device(torch, device)
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
        return [check_seed(self.torch, self.device, self.spec, module, case, self.base_calls,
                           self.path.name) for case in (self.cases if cases is None else cases)]

    def _use(self, k: int) -> None:
        """Seed k's values into the bench buffers; outputs prepared (poisoned or restored)."""
        with self.torch.no_grad():
            for arg, value in zip(self.args, self.values[k], strict=True):
                if isinstance(arg, self.torch.Tensor) and value.shape == arg.shape:
                    arg.copy_(value)
        prepare_outputs(self.torch, self.args, self.values[k], self.spec)

    def _verify(self, launch: Any) -> list[float]:
        """The verification calls: the timed shape on poisoned outputs, both input sets."""
        sums = []
        for k in (0, 1):
            self._use(k)
            launch(*self.args)
            sync_device(self.torch, self.device)
            sums.append(output_checksum(self.torch, self.args, self.spec["outputs"]))
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
            sync_device(torch, self.device)
        checksums = self._verify(launch)
        if module is None and self.checksums is None:
            self.checksums = checksums
        if (first or module is not None) and not self.interpreted:  # once a content, untimed
            self._use(0)
            leak.probe(torch, lambda: launch(*self.args))
        args = self.args if work >= 1.0 else narrow_rows(torch, self.args, work)
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
        sync_device(torch, self.device)
        after, want = output_checksum(torch, self.args, spec["outputs"]), checksums[(iters - 1) % 2]
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
                sync_device(self.torch, self.device)
            return {"ok": False, "error": str(exc)}
        except Exception as exc:  # a compile error, an invalid launch: this config's failure
            sys.modules.pop(module_name(variant, role), None)  # a half-done import
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:500]}


def _remove_dir(directory: Path) -> None:
    """A scratch directory of variants, and the sys.path entry load() made for it."""
    shutil.rmtree(directory, ignore_errors=True)
    if str(directory) in sys.path:
        sys.path.remove(str(directory))
