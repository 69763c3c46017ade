"""The llamacpp backend's targets: an op of a llama.cpp tree (``--op``), the model's K
heaviest ops (``--top K`` with a model), or the whole model (``kernelopt profile --engine``),
read from the tree (ops.py's table) and the options; the fixture marker and the machine's
prerequisites (nvcc, a GPU, cmake) checked before anything runs."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover (Python 3.10)
    import tomli as tomllib
from pathlib import Path
from typing import Any

import attrs

from kernelopt_core.api import (
    BenchSpec,
    PrerequisiteError,
    Settings,
    Target,
    UsageError,
    find_nvcc,
    gpu_arch,
    listed_gpus,
)
from kernelopt_llamacpp.ops import DISPATCH
from kernelopt_llamacpp.options import LlamaCppOptions

NAME = "llamacpp"
MARKER = "kernelopt-fixture.toml"
REPO_ENV = "LLAMACPP_REPO"

MODEL_TARGET = "model"
PROMPT_TOKENS = 512  # a 7B-class model's prompt batch (llama-bench's pp512)
GENERATED_TOKENS = 16  # enough tokens for the per-token kernels' shares, few for ncu's pace
REALISTIC_MODEL = "random-llama-4096x4-f16.gguf"  # --e2e's model to profile: 7B-wide, 4 blocks


@attrs.frozen
class ModelData:
    """A whole-model target's data (no op: ``kernelopt profile --engine``)."""

    e2e_model: str
    cuda_arch: str
    standins: bool


@attrs.frozen
class OpData:
    """Backend-private data of a target (Target.data)."""

    pin: Path  # the pinned perf case (tbo.py), shared by baseline and candidate trees
    case: str | None  # --case
    device_backend: str  # test-backend-ops -b: CUDA0
    standins: bool
    cuda_arch: str
    e2e_model: str | None
    harness: bool = False  # tests/test-backend-ops.cpp carries harness.py's patch
    test_jobs: int = 1  # test mode's parallel workers (-j), where the tool has them
    cases: Path | None = None  # the test set's case list (tbo check --cases), per test source
    # what the timed case prints of the model's node (--nodes: ne=[4096,512,1,1]), else the tool's pick
    match: tuple[str, ...] | None = None
    written: tuple[str, ...] = ()  # the perf cases the harness adds (perfcases.write), C++
    model: str | None = None  # --top K: the profiled model, run whole by the model check
    slim: tuple[str, ...] | None = None  # what its build leaves out (slim.sources); None: all


def fixture_marker(root: Path) -> dict[str, Any] | None:
    path = root / MARKER
    if not path.is_file():
        return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: invalid TOML: {exc}") from exc
    fixture = data.get("fixture", {})
    return fixture if fixture.get("standins") is True else None


def _has_test_jobs(source: bytes) -> bool:
    """Whether this test-backend-ops (its source) takes ``-j N`` (parallel test workers;
    upstream since late 2025): ROPE's test set, one case at a time, took 163 s for the three
    seeds' runs on an H200."""
    return b'strcmp(argv[i], "-j")' in source


def _cases_file(folder: Path, digest: str, op: str, source: bytes) -> Path | None:
    """Where the check keeps the op's test-set case list: named by the test source's content,
    so that a changed test set (another llama.cpp version at the same path) starts a new list."""
    if not source:
        return None
    return folder / f"{digest}-{op}-{hashlib.sha1(source).hexdigest()[:12]}.cases.json"


def _test_jobs() -> int:
    """The CPUs this process may use, at most 16: each worker is a CUDA backend (a context)
    plus a CPU reference, and campaign jobs on one host share its CPUs."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(16, usable or 1))


def gpu_problem() -> str | None:
    """Why this machine cannot build and run ggml-cuda, or None."""
    if find_nvcc() is None:
        return ("nvcc (the CUDA toolkit) is not on PATH: install the CUDA toolkit "
                "(https://developer.nvidia.com/cuda-downloads) and put its bin/ on PATH")
    if listed_gpus() or Path("/dev/nvidia0").exists():
        return None if shutil.which("cmake") else "cmake is not on PATH: install CMake 3.21 or newer"
    return ("no NVIDIA GPU is visible (`nvidia-smi -L` lists none and /dev/nvidia0 is absent): "
            "run on a machine with an NVIDIA GPU and its driver installed")


def detect(path: Path) -> float:
    if path.is_dir() and (path / DISPATCH).is_file() and (path / "CMakeLists.txt").is_file():
        return 0.9
    return 0.0


def discover(path: Path, settings: Settings) -> list[Target]:
    from kernelopt_llamacpp import ops, timing

    root = path.resolve()
    if detect(root) == 0.0:
        raise UsageError(f"{root} is not a llama.cpp tree (no {DISPATCH})",
                         hint=f"point --repo (or {REPO_ENV}) at a llama.cpp checkout")
    options = settings.section(LlamaCppOptions)
    op = options.op or settings.target
    try:
        table = ops.op_table(root)
    except ValueError as exc:  # a tree whose dispatch this version of the table cannot read
        raise UsageError(f"{root / DISPATCH}: {exc}",
                         hint=f"kernelopt-llamacpp reads the switch in {ops.DISPATCH_FUNCTION}; "
                              "point --repo at a llama.cpp tree that has it") from exc
    known = ops.editable_ops(table)
    model = options.e2e or bool(options.e2e_model)
    if model and settings.target == MODEL_TARGET:  # `kernelopt profile … --target model`
        return [model_target(root, settings, options)]
    # --top K asks for the model's K heaviest ops when given for this run: a flag, -o, or
    # [llamacpp] in a kernelopt.toml, not a variable meant for the Triton models' --top;
    # an --op given beats a --top from a file
    where = settings.origins.get("llamacpp.top", "")
    top = bool(where) and not where.startswith("env ")
    if options.op and top and where.startswith("option ") and \
            settings.origins.get("llamacpp.op", "").startswith("option "):
        raise UsageError(f"--op {options.op} names one op and --top {options.top} picks the "
                         f"model's {options.top} heaviest", hint="give one of them")
    if top and not options.op:
        if not model:
            raise UsageError(f"--top {options.top} (from {where}) picks a model's heaviest "
                             "ops: it needs the model",
                             hint="add --e2e (a generated 7B-wide model) or --e2e-model "
                                  "MODEL.gguf, or name one op with --op")
        # the model's K heaviest ops (a campaign's job names one with --target: the core
        # picks it from these, each keeping its share and the model for the model check)
        return top_targets(root, settings, options, table)
    if not op and model:
        return [model_target(root, settings, options)]
    if not op:
        raise UsageError("name the ggml op to optimize with --op",
                         hint=f"known ops: {', '.join(known)}; which of them a model spends "
                              f"its time in: kernelopt profile {root} --backend llamacpp "
                              "--engine --e2e-model MODEL.gguf (or --e2e), then --top K "
                              "optimizes its K heaviest")
    route = table.get(op) or table.get(str(op).upper())
    if route is None:
        raise UsageError(f"unknown op {op!r}: {DISPATCH} dispatches no such op",
                         hint=f"known ops: {', '.join(known)}")
    if route.kind == "library":
        raise UsageError(f"{route.op} is computed by {route.library} (library: not editable): "
                         f"{route.note}", hint=f"ops with editable kernels: {', '.join(known)}")
    if route.kind == "none":
        raise UsageError(f"{route.op} has no kernel file kernelopt edits ({route.note})",
                         hint=f"ops with editable kernels: {', '.join(known)}")
    if options.phase and not timing.gguf_model(options.nodes):
        raise UsageError(f"--phase {options.phase} picks the batch of a GGUF model given as "
                         "--nodes, or the phase --top ranks by; here there is neither",
                         hint="add --nodes MODEL.gguf, or drop --phase (a recorded nodes file "
                              "is the batch it was recorded at)")
    node = timing.model_node(route, options.nodes, phase=options.phase or "prefill")
    return [op_target(root, settings, options, route, node, options.e2e_model)]

def op_target(root: Path, settings: Settings, options: LlamaCppOptions, route: Any,
               node: Any, e2e_model: str | None, share: float | None = None,
               model: str | None = None, phase: str | None = None) -> Target:
    from kernelopt_llamacpp import harness, slim, tbo, timing, tuning

    try:  # read once: timing, the harness's patch, whether the tool takes -j, the case list
        test_source = (root / harness.FILE).read_bytes()
    except OSError:
        test_source = b""
    extra_perf, match = timing.timed_cases(route, test_source, options.case, node,
                                           model or e2e_model or timing.gguf_model(options.nodes))
    marker = fixture_marker(root)
    if marker is None:
        problem = gpu_problem()
        if problem:
            raise PrerequisiteError(
                f"kernelopt-llamacpp needs nvcc and an NVIDIA GPU to build and run ggml-cuda's "
                f"{route.op}: {problem}",
                hint="install what is missing, then rerun; `kernelopt setup` lists prerequisites")
    elif shutil.which("cmake") is None:
        raise PrerequisiteError("cmake is not on PATH", hint="install CMake")
    digest = hashlib.sha1(str(root).encode()).hexdigest()[:10]
    pin = settings.state_root / "llamacpp" / f"{digest}-{route.op}.pin.json"
    case = options.case
    patched = harness.patched_source(test_source, extra_perf)
    pinned = tbo.usable_pin(pin, route.op, case, patched is not None, match)
    e2e = options.e2e and model is None  # --top K: the model check runs the model instead
    e2e_model = e2e_model or ((marker or {}).get("e2e_model") if e2e else None)
    if e2e and not e2e_model:
        e2e_model = str(random_model(root, settings.state_root / "llamacpp"))
    files = {f: (root / f).read_bytes() for f in route.files}
    data = OpData(
        pin=pin, case=case,
        device_backend=str(options.device_backend or (marker or {}).get("backend", "CUDA0")),
        standins=marker is not None, cuda_arch="native" if marker else gpu_arch(),
        e2e_model=str(Path(e2e_model).resolve()) if e2e_model else None,
        harness=patched is not None,
        test_jobs=_test_jobs() if _has_test_jobs(test_source) else 1,
        cases=_cases_file(settings.state_root / "llamacpp", digest, route.op, test_source),
        match=match, written=extra_perf, model=model,
        slim=None if options.full_build or e2e_model else slim.sources(route.op, route.files),
    )
    shape = pinned["case"] if pinned else (
        tbo.case_name(route.op, case) if case else
        f"{route.op} at the model's node {tbo.match_text(match)} ({node.name if node else '?'}"
        f"{_from_header(options, phase)}; pinned at the first bench)" if match else
        f"{route.op}: the largest-us/run case of `test-backend-ops perf -o {route.op}` "
        "(ties within 5 %: the first by name; pinned at the first bench)")
    context = tuple(f for f in ("ggml/src/ggml-cuda/common.cuh",) if (root / f).is_file())
    return Target(
        backend=NAME, name=route.op, root=root, editable=route.files, context=context,
        contract=tuple(f for f in (DISPATCH, "tests/test-backend-ops.cpp") if (root / f).is_file()),
        shape=shape,
        bytes_moved=int(pinned["kb"]) * 1024 if pinned and pinned.get("kb") else None,
        knobs=tuple(tuning.scan(files, route.op, route.function)),
        bench=BenchSpec(format="json"),  # tbo.bench_line: the time, the case, its bytes
        harness={harness.FILE: patched.encode("utf-8")} if patched is not None else {},
        device="cpu" if marker else "cuda",
        time_share=share,
        data=data,
    )

def _from_header(options: LlamaCppOptions, phase: str | None = None) -> str:
    """Where a node read from a GGUF's header came from: its file and batch."""
    from kernelopt_llamacpp import timing

    model = timing.gguf_model(options.nodes)
    phase = phase or options.phase or "prefill"
    return f" of {Path(model).name}'s {phase} graph, read from its header" if model else ""


def top_targets(root: Path, settings: Settings, options: LlamaCppOptions,
                 table: dict[str, Any]) -> list[Target]:
    """--top K and a model, no --op: the model's K heaviest ops kernelopt can edit and
    time (top_ops.py), from its last profile, each timed on its heaviest node with
    --nodes; the engine gate and the model check run that model."""
    from kernelopt_core.api import last_profile
    from kernelopt_llamacpp import harness, timing, top_ops, tuning
    from kernelopt_llamacpp.dispatch import Sources

    if options.case:
        raise UsageError("--case names one op's case; --top picks several ops",
                         hint="drop --case (with --nodes each op is timed at the model's shape)")
    whole = model_target(root, settings, options)
    profile = last_profile(settings.state_root, NAME, MODEL_TARGET, root, whole.shape)
    if profile is None:
        given = f"--e2e-model {options.e2e_model}" if options.e2e_model else "--e2e"
        raise UsageError(f"--top {options.top} ranks the model's ops by its last profile, and "
                         f"{settings.state_root} holds none of {whole.shape}",
                         hint=f"profile it first: kernelopt profile {root} --backend llamacpp "
                              f"--engine {given} --profiler ncu --target model (the same "
                              "--state-root)")
    model = whole.data.e2e_model
    if not Path(model).is_file():
        raise UsageError(f"the profiled model {model} is gone",
                         hint=f"profile the model again: kernelopt profile {root} --backend "
                              "llamacpp --engine ...")
    # a GGUF's graph of each phase: an op is timed at its node of the phase it spends most in
    # (MUL_MAT: decode's GEMV), or of --phase; a recorded nodes file is one graph
    gguf = timing.gguf_model(options.nodes)
    graphs = {phase: timing.read_nodes(gguf, phase) for phase in ("prefill", "decode")
              } if gguf else {}
    found = graphs.get(options.phase or "prefill") if graphs else (
        timing.read_nodes(options.nodes) if options.nodes else None)
    if options.phase and options.phase not in profile.phases:
        raise UsageError(f"--phase {options.phase}: the profile {profile.run_id} has no such "
                         f"phase (it has {', '.join(profile.phases)})",
                         hint="drop --phase, or profile the model's phases again")
    try:
        test_source = (root / harness.FILE).read_bytes()
    except OSError:
        test_source = b""

    ranking = top_ops.ranked_ops(profile, Sources(root), top_ops.model_ops(found), options.phase)

    def phase_of(op: str) -> str | None:
        row = next((r for r in ranking if r.op == op), None)
        known = {p: share for p, share in (row.phases if row else {}).items() if p in graphs}
        return None if not graphs else options.phase or (
            max(known, key=lambda p: known[p]) if known else "prefill")

    def node_of(route: Any) -> Any:
        phase = phase_of(route.op)
        return timing.model_node(route, options.nodes, graphs[phase] if phase else found)

    def timable(route: Any) -> None:
        timing.timed_cases(route, test_source, None, node_of(route), model)
        if settings.planner in (None, "tuner") and not tuning.scan(
                {f: (root / f).read_bytes() for f in route.files}, route.op, route.function):
            # the tuner's run would refuse it (no knobs): an LLM planner, named, edits it
            raise UsageError("no knob in its files for the built-in tuner; --planner agents "
                             "(an LLM) can edit it")

    rows = top_ops.choose(ranking, table, options.top, timable)
    digest = hashlib.sha1(str(root).encode()).hexdigest()[:10]
    top_ops.write(settings.state_root / "llamacpp" / f"{digest}-top.json", profile, rows,
                  str(Path(options.nodes).expanduser().resolve()) if options.nodes else None,
                  model)
    chosen = [r for r in rows if r.chosen]
    if not chosen:
        raise UsageError(f"none of the model's ops in its profile {profile.run_id} can be "
                         "edited and timed",
                         hint=top_ops.preface(rows, profile, options.top, options.phase))
    preface = top_ops.preface(rows, profile, options.top, options.phase)
    # no engine gate per op: the model check runs the whole model once, every winner in
    return [attrs.evolve(op_target(root, settings, options, table[r.op], node_of(table[r.op]),
                                   None, r.share, model, phase_of(r.op)), preface=preface)
            for r in chosen]

def model_target(root: Path, settings: Settings, options: LlamaCppOptions) -> Target:
    """No --op, a model given (--e2e-model, or --e2e): the whole model, for ``kernelopt
    profile --engine`` (its prompt and its generation ranked apart: profile_phases). Nothing
    is editable: the core refuses to optimize it."""
    marker = fixture_marker(root)  # nvcc and the GPU: checked by build (a run is refused first)
    vocab = root / "models" / "ggml-vocab-llama-spm.gguf"
    if options.e2e_model:
        path = Path(options.e2e_model).expanduser().resolve()
        if not path.is_file():
            raise UsageError(f"--e2e-model {path} does not exist", hint="give a GGUF file")
    elif not vocab.is_file():
        raise UsageError(f"--e2e needs {vocab} for the tokenizer",
                         hint="give a real model with --e2e-model PATH.gguf")
    else:  # written by the build (build_model), not here: a refused run writes nothing
        path = (settings.state_root / "llamacpp" / REALISTIC_MODEL).resolve()
    return Target(
        backend=NAME, name=MODEL_TARGET, root=root, editable=(),
        # the full path: the profile --top ranks by is matched to the model by this shape
        contract=(DISPATCH,), shape=f"the whole model {path}: prompt of {PROMPT_TOKENS} "
        f"tokens, then {GENERATED_TOKENS} generated",
        device="cpu" if marker else "cuda",
        data=ModelData(str(path), "native" if marker else gpu_arch(),
                                   marker is not None))

def random_model(root: Path, out_dir: Path) -> Path:
    """--e2e without --e2e-model: a random-weight llama with the tree's llama-spm vocab."""
    out = out_dir / "random-llama.gguf"
    if out.is_file():
        return out
    vocab = root / "models" / "ggml-vocab-llama-spm.gguf"
    if not vocab.is_file():
        raise UsageError(f"--e2e needs {vocab} for the tokenizer",
                         hint="give a real model with --e2e-model PATH.gguf")
    from kernelopt_llamacpp.gguf_model import write_model  # gguf itself: imported lazily

    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        return write_model(out, vocab)
    except ModuleNotFoundError as exc:
        raise PrerequisiteError(f"--e2e needs the gguf package ({exc})",
                                hint="pip install 'kernelopt-llamacpp[gguf]'") from exc
    except ValueError as exc:
        raise UsageError(f"--e2e cannot make a model: {exc}",
                         hint="give a real model with --e2e-model PATH.gguf") from exc
