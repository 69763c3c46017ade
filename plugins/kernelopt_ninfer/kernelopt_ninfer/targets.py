"""The ninfer backend's target: one op of an NInfer tree (``--ninfer-op``, ``run-ninfer
--op``), read from the tree's op table (layout.py) and the options, the device chosen
(toolchain.py) and the prerequisites (cmake, ninja) checked before anything runs."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import attrs

from kernelopt_core.api import (
    BenchSpec,
    PrerequisiteError,
    Settings,
    Target,
    UsageError,
)
from kernelopt_ninfer import layout, toolchain, tuning
from kernelopt_ninfer.bench_run import normalize, usable_pin
from kernelopt_ninfer.cmakelists import executables
from kernelopt_ninfer.options import NInferOptions

NAME = "ninfer"
REPO_ENV = "NINFER_REPO"
ENGINE_TARGET = "ninfer_bench"


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


def detect(path: Path) -> float:
    return layout.confidence(Path(path))


def discover(path: Path, settings: Settings) -> list[Target]:
    root = Path(path).resolve()
    if detect(root) == 0.0:
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
        backend=NAME, name=op.name, root=root, editable=op.editable, context=op.context,
        contract=op.contract,
        shape=pinned["case"] if pinned else (
            normalize(data.case) if data.case else
            f"{op.bench}: its largest-median case (pinned at the first bench)" if op.bench
            else ""),
        knobs=tuple(tuning.scan(files)),
        bench=BenchSpec(format="json") if op.bench else None,
        preface=preface(op, data, platform.why, settings),
        device=platform.device, data=data)]

def preface(op: layout.Op, data: OpData, why: str, settings: Settings) -> str:
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
