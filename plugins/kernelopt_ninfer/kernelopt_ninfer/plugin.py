"""The ``ninfer`` backend: one op of an NInfer tree, through its CTest test and op bench.

``kernelopt run-ninfer --op rmsnorm [--repo PATH]`` is ``kernelopt run PATH --backend ninfer
--ninfer-op rmsnorm``. docs/ninfer.md is the user's page. The op table is layout.py (files and
CMake targets), the guards and the device choice toolchain.py, the knobs tuning.py, and the
child programs the core spawns are ctest_run.py (check), bench_run.py (bench) and engine.py
(the engine gate).

The CPU seam: a tree that declares ``option(NINFER_CPU_KERNELS ...)`` (our fixture; upstream
never does) can compile its kernels as C++ for the CPU (``--device cpu``, or ``auto`` without a
GPU). A real NInfer tree has no such option, so the seam cannot hide a missing GPU.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import attrs

from kernelopt_core.api import (
    BenchSpec,
    Command,
    PrerequisiteError,
    Settings,
    Target,
    Tree,
    UsageError,
    cmake_commands,
    cuda_kernel_names,
    hookimpl,
    option,
    option_table,
    read_pin,
    repo_path,
    run_command,
)
from kernelopt_ninfer import layout, toolchain, tuning
from kernelopt_ninfer.bench_run import normalize, usable_pin
from kernelopt_ninfer.cmakelists import executables
from kernelopt_ninfer.ctest_run import covers

REPO_ENV = "NINFER_REPO"
ENGINE_TARGET = "ninfer_bench"
STEP_TIMEOUT_S = 3600.0


@option_table("ninfer")
@attrs.frozen
class NInferOptions:
    """``[ninfer]`` in kernelopt.toml; flags of ``kernelopt run`` and ``run-ninfer``. ``op`` and
    ``case`` are prefixed (``--ninfer-op``): kernelopt-llamacpp owns ``--op`` and ``--case`` in
    the shared flag namespace; ``run-ninfer`` still takes ``--op`` and ``--case``."""

    ninfer_op: str | None = option(None, "The NInfer op to optimize (run-ninfer --op).")
    ninfer_case: str | None = option(None, "The bench case to time, its tag as the bench prints "
                                     "it (run-ninfer --case); the largest median when unset.")
    device: str = option("auto", "Where NInfer's kernels run: cuda, or cpu through the tree's "
                         "NINFER_CPU_KERNELS (fixtures only); auto: cuda when nvcc and a GPU are "
                         "here, else cpu when the tree offers it.", choices=("auto", "cuda", "cpu"))
    cuda_arch: str | None = option(None, "CMAKE_CUDA_ARCHITECTURES to build, one the tree's "
                                   "CMakeLists.txt allows; the GPU's own when unset.")
    artifact: str | None = option(None, "A .ninfer artifact: the engine gate runs ninfer_bench "
                                  "-p 512 -n 128 over it, baseline against candidate.")
    editable: tuple[str, ...] = option((), "Override the op table: the files the search may "
                                       "edit (comma-separated, relative to the tree).")
    context: tuple[str, ...] = option((), "Override the op table: the files shown as context.")
    bench_args: str = option("", "Arguments for the op's bench program (e.g. '--kind "
                             "dflash_hidden --tokens 1024'), to narrow the cases it runs.")


@attrs.frozen
class OpData:
    """Backend-private data of a target (Target.data)."""

    test: str
    bench: str | None
    seeded: bool  # the test takes --seed
    device: str
    arch: str | None
    nvcc: str | None
    pin: Path  # the pinned bench case (bench_run.py), shared by every tree of the target
    record: Path  # the baseline check's OP_ERROR_STATS case labels (the shape gate reads it)
    case: str | None
    bench_args: str
    artifact: str | None


def takes_seed(root: Path, op: layout.Op) -> bool:
    """The test's sources (or the tests/ headers they include) spell ``--seed``."""
    files = list(op.test_sources)
    files += [f for s in op.test_sources for f in layout.includes(root, s) if f.startswith("tests/")]
    return any("--seed" in (root / f).read_text(encoding="utf-8", errors="replace")
               for f in dict.fromkeys(files))


def _python(module: str, *args: str) -> tuple[str, ...]:
    return (sys.executable, "-m", f"kernelopt_ninfer.{module}", *args)


class NInferBackend:
    name = "ninfer"

    def kernel_names(self, target: Target, files: dict[str, bytes]) -> dict[str, str]:
        """The CUDA/HIP kernels the files define (the backend kit's ``__global__`` reader)."""
        return cuda_kernel_names(files)

    def detect(self, path: Path) -> float:
        return layout.confidence(Path(path))

    def discover(self, path: Path, settings: Settings) -> list[Target]:
        root = Path(path).resolve()
        if self.detect(root) == 0.0:
            raise UsageError(f"{root} is not an NInfer tree (no CMakeLists.txt with "
                             f"{layout.OPS_INCLUDE}/ beside it)",
                             hint=f"point --repo (or {REPO_ENV}) at an NInfer checkout")
        options = settings.section(NInferOptions)
        table = layout.op_table(root)
        known = layout.optimizable(table)
        wanted = options.ninfer_op or settings.target
        if not wanted:
            raise UsageError("name the NInfer op to optimize: `kernelopt run-ninfer --op OP`, "
                             "or --target OP (or --ninfer-op OP) with `kernelopt run`",
                             hint=f"ops found: {', '.join(known) or 'none'}")
        op = table.get(wanted)
        if op is None:
            raise UsageError(f"unknown op {wanted!r}: {root} registers no ninfer_{wanted}_test "
                             f"or ninfer_{wanted}_bench", hint=f"ops found: {', '.join(known) or 'none'}")
        try:
            op = layout.override(root, op, options.editable or None, options.context or None)
        except ValueError as exc:
            raise UsageError(f"[ninfer] editable/context: {exc}",
                             hint="give paths relative to the NInfer tree") from exc
        problem = layout.why_not(op)
        if problem:
            raise UsageError(problem, hint=f"ops that can run: {', '.join(known) or 'none'}")
        if options.artifact and not Path(options.artifact).is_file():
            raise UsageError(f"--artifact {options.artifact}: no such file",
                             hint="give the path of a .ninfer artifact, or leave the engine gate off")
        if options.artifact and ENGINE_TARGET not in executables(root / "bench"):
            raise UsageError(f"--artifact: {root}/bench builds no {ENGINE_TARGET} program, which "
                             "the engine gate runs", hint="leave --artifact off for this tree")
        for tool in ("cmake", "ninja"):
            if shutil.which(tool) is None:
                raise PrerequisiteError(f"{tool} is not on PATH: kernelopt-ninfer configures "
                                        "NInfer with CMake and Ninja", hint=f"install {tool}")
        platform = toolchain.decide(root, options.device, options.cuda_arch)
        assert op.test is not None  # why_not() said so
        digest = hashlib.sha1(str(root).encode()).hexdigest()[:10]
        state = settings.state_root / "ninfer"
        data = OpData(test=op.test, bench=op.bench, seeded=takes_seed(root, op),
                      device=platform.device, arch=platform.arch,
                      nvcc=platform.nvcc.path if platform.nvcc and platform.device == "cuda" else None,
                      pin=state / f"{digest}-{op.name}.pin.json",
                      record=state / f"{digest}-{op.name}.check.json", case=options.ninfer_case,
                      bench_args=options.bench_args,
                      artifact=str(Path(options.artifact).resolve()) if options.artifact else None)
        pinned = usable_pin(data.pin, op.name, data.case, data.bench_args)
        files = {f: (root / f).read_bytes() for f in op.editable}
        return [Target(
            backend=self.name, name=op.name, root=root, editable=op.editable, context=op.context,
            contract=op.contract,
            shape=pinned["case"] if pinned else (
                normalize(data.case) if data.case else
                f"{op.bench}: its largest-median case (pinned at the first bench)" if op.bench
                else ""),
            knobs=tuple(tuning.scan(files)),
            bench=BenchSpec(format="json") if op.bench else None,
            preface=self._preface(op, data, platform.why, settings),
            device=platform.device, data=data)]

    @staticmethod
    def _preface(op: layout.Op, data: OpData, why: str, settings: Settings) -> str:
        seeds = (f"--seed {', '.join(map(str, settings.seeds))}, each its own inputs" if data.seeded
                 else "run as it is once per check: it takes no --seed (its seeds are fixed)")
        lines = [f"NInfer op {op.name}: editable {', '.join(op.editable)}",
                 f"  context {', '.join(op.wrappers) or '-'} + {len(op.common)} file(s) of "
                 f"{layout.COMMON}/; contract {', '.join(op.contract)}",
                 f"  test {data.test} through ctest, NINFER_OP_REPORT_STATS=1: {seeds}",
                 f"  bench {data.bench or 'none (at best unverified)'}"
                 + (f" {data.bench_args}" if data.bench_args else ""),
                 f"  device {data.device}: {why}"]
        lines += [f"  note: {note}" for note in op.notes]
        if data.artifact:
            lines.append(f"  engine gate: ninfer_bench --weights {data.artifact} -p 512 -n 128")
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------------ commands
    def build(self, target: Target, tree: Tree) -> list[Command]:
        data: OpData = target.data
        args = ["-DCMAKE_BUILD_TYPE=Release", "-DBUILD_TESTING=ON", "-DNINFER_BUILD_BENCHMARKS=ON",
                "-DNINFER_BUILD_APPS=OFF", "-DNINFER_BUILD_TOOLS=OFF"]
        if data.device == "cuda":
            args += [f"-DCMAKE_CUDA_ARCHITECTURES={data.arch}"]
            args += [f"-DCMAKE_CUDA_COMPILER={data.nvcc}"] if data.nvcc else []
        else:
            args.append("-DNINFER_CPU_KERNELS=ON")
        targets = [data.test, *([data.bench] if data.bench else []),
                   *([ENGINE_TARGET] if data.artifact else [])]
        return cmake_commands(tree.src, tree.src, tree.build, args, targets=targets,
                              generator="Ninja", build_timeout_s=STEP_TIMEOUT_S)

    def _check(self, target: Target, tree: Tree, seeds: tuple[int, ...], *extra: str) -> Command:
        data: OpData = target.data
        argv = ["--build", str(tree.build), "--test", data.test]
        if data.seeded:
            argv += ["--seeds", ",".join(map(str, seeds))]
        if tree.role == "baseline":
            argv += ["--record", str(data.record)]
        return Command(_python("ctest_run", *argv, *extra), tree.src, timeout_s=STEP_TIMEOUT_S,
                       label="ctest")

    def check(self, target: Target, tree: Tree, seed: int) -> Command:
        return self._check(target, tree, (seed,))

    def check_seeds(self, target: Target, tree: Tree, seeds: tuple[int, ...]) -> Command | None:
        """Every seed in one wrapper process; a test without --seed runs once (its own fixed
        seeds: repeating it would check nothing new)."""
        return self._check(target, tree, tuple(seeds))

    def shape_check(self, target: Target, tree: Tree, seed: int) -> Command | None:
        """The test again, required to compare a case with the pinned bench case's dimensions
        (``rows=64 cols=4096`` ↔ ``case=rows64_cols4096``); None when the baseline's records
        do not show that (the shape gate then reports the timed shape as unverified)."""
        data: OpData = target.data
        pin = read_pin(data.pin, target.name)
        try:
            cases = json.loads(data.record.read_text()).get("cases", [])
        except (OSError, ValueError):
            return None
        if pin is None or not any(covers(str(c), pin["case"]) for c in cases):
            return None
        return self._check(target, tree, (seed,), "--covers", pin["case"])

    def bench(self, target: Target, tree: Tree) -> Command | None:
        data: OpData = target.data
        if data.bench is None:
            return None
        argv = ["--build", str(tree.build), "--target", data.bench, "--op", target.name,
                "--pin", str(data.pin)]
        argv += ["--case", data.case] if data.case else []
        argv += ["--args", data.bench_args] if data.bench_args else []
        argv += ["--may-pin"] if tree.role == "baseline" else []  # candidates never re-pin
        return Command(_python("bench_run", *argv), tree.src, timeout_s=STEP_TIMEOUT_S, label="bench")

    def engine(self, target: Target, tree: Tree) -> Command | None:
        data: OpData = target.data
        if data.artifact is None:
            return None
        return Command(_python("engine", "--build", str(tree.build), "--artifact", data.artifact),
                       tree.src, timeout_s=STEP_TIMEOUT_S, label="engine")


# --------------------------------------------------------------------------- hooks


@hookimpl
def kernelopt_register_backends() -> list[object]:
    return [NInferBackend()]


@hookimpl
def kernelopt_option_tables() -> list[type]:
    return [NInferOptions]


@hookimpl
def kernelopt_register_commands(cli: Any) -> None:
    import click

    def tree(flags: dict[str, Any]) -> Path:
        return repo_path(flags, REPO_ENV, "NInfer tree")

    # --op/--case land in [ninfer]'s ninfer_op/ninfer_case (llamacpp owns the bare names);
    # --device, --cuda-arch, --artifact, --editable, --context, --bench-args come with the table
    params = [click.Option(["--repo"], help=f"The NInfer tree [${REPO_ENV} from the environment "
                           "or .env]."),
              click.Option(["--op", "ninfer_op"], help="The NInfer op to optimize (e.g. rmsnorm)."),
              click.Option(["--case", "ninfer_case"], help="The bench case to time (its tag as "
                           "printed); the largest median when unset.")]
    cli.add_command(run_command(
        "run-ninfer", forced={"backend": "ninfer"}, resolve_path=tree, params=params,
        help="Optimize one op of an NInfer tree (= run REPO --backend ninfer --ninfer-op OP)."))


STRATEGIES = """Strategies for NInfer ops (contract → wrapper → launcher → kernel):
- edit only the launcher (grid/block/shared-memory policy) and the kernel; the wrapper's
  validation and dispatch and the contract header are not yours;
- block size and rows per block against the pinned case's row length; one warp per short row,
  one CTA per long row; __launch_bounds__ matching the block;
- vectorized loads (float4, bf16x2) where the row length and alignment allow, with a scalar
  tail for the rest (the test has odd shapes);
- warp-shuffle reductions from src/ops/common/ over shared-memory trees; fewer __syncthreads;
- correctness is the op's FP64 oracle test on fresh inputs per seed; NaN/Inf always fail."""


@hookimpl
def kernelopt_prompt_fragments(backend: str, role: str) -> list[str]:
    return [STRATEGIES] if backend == "ninfer" and role == "planner" else []
