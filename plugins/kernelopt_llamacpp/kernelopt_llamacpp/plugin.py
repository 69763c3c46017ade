"""The ``llamacpp`` backend: one ggml-cuda op of a llama.cpp tree, through test-backend-ops.

``kernelopt run-llamacpp --op SOFT_MAX [--repo PATH]`` is ``kernelopt run PATH --backend
llamacpp --op SOFT_MAX``. docs/llamacpp.md is the user's page; the op table is ops.py, the
test-backend-ops steps tbo.py, the knobs tuning.py, the engine gate engine.py.

Fixture trees: a tree whose root holds ``kernelopt-fixture.toml`` with ``standins = true``
declares itself a CPU stand-in of llama.cpp (our CI fixture). Only then are nvcc and a GPU not
required and the op's files compiled by the tree's own CPU build; every command is otherwise the
same. A real tree never carries that file, so the seam cannot hide a missing GPU.
"""

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
    Command,
    PrerequisiteError,
    Settings,
    Target,
    Tree,
    UsageError,
    cmake_commands,
    cuda_kernel_names,
    cuda_ledger_build,
    cuda_ledger_watch,
    find_nvcc,
    gpu_arch,
    hookimpl,
    listed_gpus,
    option,
    option_table,
    read_pin,
    repo_path,
    run_command,
)
from kernelopt_llamacpp.ops import DISPATCH

MARKER = "kernelopt-fixture.toml"
TOOL = "test-backend-ops"
ENGINE_TOOLS = ("llama-bench", "llama-completion")
REPO_ENV = "LLAMACPP_REPO"


MODEL_TARGET = "model"
PROMPT_TOKENS = 512  # a 7B-class model's prompt batch (llama-bench's pp512)
GENERATED_TOKENS = 16  # enough tokens for the per-token kernels' shares, few for ncu's pace
REALISTIC_MODEL = "random-llama-4096x4-f16.gguf"  # --e2e's model to profile: 7B-wide, 4 blocks


_GIVE_OP = "to optimize an op, give --op (the ops by share: kernelopt profile --engine)"


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


CORES_PER_RUN = 4  # one test-backend-ops run kept 3.4-3.8 cores busy, whatever its -j (H200)


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


def cmake_args(arch: str, engine: bool, flash_attn: bool) -> list[str]:
    """The configure arguments of every build of a tree: an op's runs, the model check's."""
    args = [
        "-DCMAKE_BUILD_TYPE=Release", "-DGGML_CUDA=ON", f"-DCMAKE_CUDA_ARCHITECTURES={arch}",
        "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF",  # no network features
        "-DLLAMA_BUILD_TESTS=ON", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_SERVER=OFF",
        f"-DLLAMA_BUILD_TOOLS={'ON' if engine else 'OFF'}",
        "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",  # the compile probe's commands (probe.py)
    ]
    if not flash_attn:
        # the flash-attention template instances are most of a clean ggml-cuda build and no
        # other op needs them; the engine gate runs the model with flash attention off too,
        # so that attention goes through SOFT_MAX (the op being optimized), not fattn
        args.append("-DGGML_CUDA_FA=OFF")
    return args


class LlamaCppBackend:
    name = "llamacpp"

    def kernel_names(self, target: Target, files: dict[str, bytes]) -> dict[str, str]:
        """The CUDA/HIP kernels the files define (the backend kit's ``__global__`` reader)."""
        return cuda_kernel_names(files)

    def detect(self, path: Path) -> float:
        if path.is_dir() and (path / DISPATCH).is_file() and (path / "CMakeLists.txt").is_file():
            return 0.9
        return 0.0

    # ------------------------------------------------------------------ discovery
    def discover(self, path: Path, settings: Settings) -> list[Target]:
        from kernelopt_llamacpp import ops, timing

        root = path.resolve()
        if self.detect(root) == 0.0:
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
            return [self._model_target(root, settings, options)]
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
            return self._top_targets(root, settings, options, table)
        if not op and model:
            return [self._model_target(root, settings, options)]
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
        node = timing.model_node(route, options.nodes)
        return [self._op_target(root, settings, options, route, node, options.e2e_model)]

    def _op_target(self, root: Path, settings: Settings, options: LlamaCppOptions, route: Any,
                   node: Any, e2e_model: str | None, share: float | None = None,
                   model: str | None = None) -> Target:
        from kernelopt_llamacpp import harness, tbo, timing, tuning

        try:  # read once: timing, the harness's patch, whether the tool takes -j, the case list
            test_source = (root / harness.FILE).read_bytes()
        except OSError:
            test_source = b""
        extra_perf, match = timing.timed_cases(route, test_source, options.case, node,
                                               model or e2e_model)
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
            e2e_model = str(self._random_model(root, settings.state_root / "llamacpp"))
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
        )
        shape = pinned["case"] if pinned else (
            tbo.case_name(route.op, case) if case else
            f"{route.op} at the model's node {tbo.match_text(match)} ({node.name if node else '?'}"
            "; pinned at the first bench)" if match else
            f"{route.op}: the largest-us/run case of `test-backend-ops perf -o {route.op}` "
            "(ties within 5 %: the first by name; pinned at the first bench)")
        context = tuple(f for f in ("ggml/src/ggml-cuda/common.cuh",) if (root / f).is_file())
        return Target(
            backend=self.name, name=route.op, root=root, editable=route.files, context=context,
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

    def _top_targets(self, root: Path, settings: Settings, options: LlamaCppOptions,
                     table: dict[str, Any]) -> list[Target]:
        """--top K and a model, no --op: the model's K heaviest ops kernelopt can edit and
        time (top_ops.py), from its last profile, each timed on its heaviest node with
        --nodes; the engine gate and the model check run that model."""
        from kernelopt_core.api import last_profile
        from kernelopt_llamacpp import harness, nodes, timing, top_ops, tuning
        from kernelopt_llamacpp.dispatch import Sources

        if options.case:
            raise UsageError("--case names one op's case; --top picks several ops",
                             hint="drop --case (with --nodes each op is timed at the model's shape)")
        whole = self._model_target(root, settings, options)
        profile = last_profile(settings.state_root, self.name, MODEL_TARGET, root, whole.shape)
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
        try:
            found = nodes.read(Path(options.nodes).expanduser()) if options.nodes else None
        except (OSError, ValueError) as exc:
            raise UsageError(f"--nodes {options.nodes}: {exc}",
                             hint="give llama-eval-callback's output for the model: "
                                  "llama-eval-callback -m MODEL.gguf -p PROMPT -ngl 99 > FILE") from exc
        try:
            test_source = (root / harness.FILE).read_bytes()
        except OSError:
            test_source = b""

        def timable(route: Any) -> None:
            timing.timed_cases(route, test_source, None,
                               timing.model_node(route, options.nodes, found), model)
            if settings.planner in (None, "tuner") and not tuning.scan(
                    {f: (root / f).read_bytes() for f in route.files}, route.op, route.function):
                # the tuner's run would refuse it (no knobs): an LLM planner, named, edits it
                raise UsageError("no knob in its files for the built-in tuner; --planner agents "
                                 "(an LLM) can edit it")

        rows = top_ops.choose(top_ops.ranked_ops(profile, Sources(root), top_ops.model_ops(found)),
                              table, options.top, timable)
        digest = hashlib.sha1(str(root).encode()).hexdigest()[:10]
        top_ops.write(settings.state_root / "llamacpp" / f"{digest}-top.json", profile, rows,
                      str(Path(options.nodes).expanduser().resolve()) if options.nodes else None,
                      model)
        chosen = [r for r in rows if r.chosen]
        if not chosen:
            raise UsageError(f"none of the model's ops in its profile {profile.run_id} can be "
                             "edited and timed", hint=top_ops.preface(rows, profile, options.top))
        preface = top_ops.preface(rows, profile, options.top)
        # no engine gate per op: the model check runs the whole model once, every winner in
        return [attrs.evolve(self._op_target(root, settings, options, table[r.op],
                                             timing.model_node(table[r.op], options.nodes,
                                                               found),
                                             None, r.share, model), preface=preface)
                for r in chosen]

    def _model_target(self, root: Path, settings: Settings, options: LlamaCppOptions) -> Target:
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
            backend=self.name, name=MODEL_TARGET, root=root, editable=(),
            # the full path: the profile --top ranks by is matched to the model by this shape
            contract=(DISPATCH,), shape=f"the whole model {path}: prompt of {PROMPT_TOKENS} "
            f"tokens, then {GENERATED_TOKENS} generated",
            device="cpu" if marker else "cuda",
            data=ModelData(str(path), "native" if marker else gpu_arch(),
                                       marker is not None))

    def _random_model(self, root: Path, out_dir: Path) -> Path:
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

    # ------------------------------------------------------------------ commands
    def build(self, target: Target, tree: Tree) -> list[Command]:
        data: OpData | ModelData = target.data
        if isinstance(data, ModelData) and not data.standins and (problem := gpu_problem()):
            raise PrerequisiteError(f"kernelopt-llamacpp needs nvcc and an NVIDIA GPU to build and "
                                    f"run llama.cpp's model: {problem}",
                                    hint="install what is missing, then rerun")
        engine = data.e2e_model is not None
        args = cmake_args(data.cuda_arch, engine, target.name == "FLASH_ATTN_EXT")
        # configured again when the arguments change (e.g. the engine gate turned on)
        tools = [] if isinstance(data, ModelData) else [TOOL]  # a model: its engine tools only
        commands = cmake_commands(tree.src, tree.src, tree.build, args,
                                  targets=[*tools, *(ENGINE_TOOLS if engine else ())])
        # an op's check runs with the kit's device-memory ledger (docs/faults.md): built once
        ledger = cuda_ledger_build(tree) if isinstance(data, OpData) else None
        commands[:0] = [ledger] if ledger is not None else []
        model = Path(data.e2e_model) if data.e2e_model else None
        if isinstance(data, ModelData) and model and model.name == REALISTIC_MODEL \
                and not model.is_file():  # --e2e's model to profile, written once per state root
            commands.append(Command((
                sys.executable, "-m", "kernelopt_llamacpp.gguf_model", "--vocab",
                # the tree's own file: the workspace snapshot leaves models (*.gguf) out
                str(target.root / "models" / "ggml-vocab-llama-spm.gguf"), "--n-embd", "4096",
                "--n-ff", "11008", "--n-head", "32", "--n-layer", "4", "--f16",
                "--out", str(model)), tree.src, timeout_s=900, label="random model"))
        return commands

    def profile_phases(self, target: Target, tree: Tree) -> dict[str, Command] | None:
        """The model's prompt (pp512) and its generation (tg16) apart: their kernels differ
        (cuBLAS GEMMs vs matrix-vector kernels). llama-bench, one repetition each (its
        warm-up too), flash attention as the engine gate runs it."""
        model = target.data.e2e_model
        if model is None:
            return None
        bench = str(tree.build / "bin" / "llama-bench")
        common = ("-m", model, "-r", "1", "-ngl", "99", "-fa",
                  "on" if target.name == "FLASH_ATTN_EXT" else "off", "-o", "jsonl")
        return {
            "prefill": Command((bench, "-p", str(PROMPT_TOKENS), "-n", "0", *common), tree.src,
                               timeout_s=600, label="llama-bench prompt"),
            "decode": Command((bench, "-p", "0", "-n", str(GENERATED_TOKENS), *common), tree.src,
                              timeout_s=600, label="llama-bench generation"),
        }

    def kernel_labels(self, target: Target, tree: Tree, kernels: list[str]) -> dict[str, str]:
        """Each profiled kernel's ggml op and ggml-cuda file, or its library (dispatch.py)."""
        from kernelopt_llamacpp.dispatch import Sources, attribute

        sources = Sources(tree.src)
        out = {}
        for kernel in kernels:
            a = attribute(kernel, sources)
            file = Path(a.file).name
            out[kernel] = (f"{a.library} (library)" if a.kind == "library" else
                           f"{'/'.join(a.ops)} · {file}" if a.ops else f"{file} (no op)")
        return out

    def compile_probe(self, target: Target, tree: Tree, probe_dir: Path) -> Command | None:
        """Each knob value's op .cu files compiled alone (probe.py): a value that cannot
        compile (softmax.cu's static_assert on CUDA_SOFT_MAX_BLOCK_SIZE) is dropped before it
        costs a candidate."""
        tus = [f for f in target.editable if f.endswith(".cu")]
        if not tus:
            return None
        data: OpData = target.data
        argv = [sys.executable, "-m", "kernelopt_llamacpp.probe", "--build", str(tree.build),
                "--src", str(tree.src), "--dir", str(probe_dir), "--pin", str(data.pin)]
        argv += [arg for tu in tus for arg in ("--tu", tu)]
        return Command(tuple(argv), tree.src, label="compile probe")

    def _tbo(self, target: Target, tree: Tree, mode: str, *extra: str) -> Command:
        data: OpData = target.data
        argv = [sys.executable, "-m", "kernelopt_llamacpp.tbo", mode,
                "--tool", str(tree.build / "bin" / TOOL), "--op", target.name,
                "--backend", data.device_backend, *extra]
        return Command(tuple(argv), tree.src, timeout_s=900, label=f"test-backend-ops {mode}")

    def check(self, target: Target, tree: Tree, seed: int) -> Command:
        if isinstance(target.data, ModelData):
            raise UsageError("the whole model has no op to check", hint=_GIVE_OP)
        # test-backend-ops has no seed option: every run draws fresh inputs (std::random_device),
        # so each of the core's seeds is one more independent random draw, not a replayable one.
        data: OpData = target.data
        command = self._tbo(target, tree, "check",
                            *(["--jobs", str(data.test_jobs)] if data.test_jobs > 1 else []))
        return cuda_ledger_watch(command, tree, seed)

    def check_seeds(self, target: Target, tree: Tree, seeds: tuple[int, ...]) -> Command:
        """Every seed's run at once (tbo check --runs): one run keeps only 3.4-3.8 of 16 cores
        busy, so three ROPE runs took 17.3 s at once where one after another took 41-46 s
        (H200). Where the CPUs outnumber the runs' CORES_PER_RUN, each run is split over more
        processes (--shards, by the case list the first whole check wrote), each with -j
        CORES_PER_RUN at most."""
        data: OpData = target.data
        runs = len(seeds)
        shards = -(-data.test_jobs // (CORES_PER_RUN * runs)) if data.cases else 1
        jobs = min(CORES_PER_RUN, max(1, data.test_jobs // runs)) if data.test_jobs > 1 else 1
        split = ["--shards", str(shards), "--cases", str(data.cases)] if data.cases else []
        command = self._tbo(target, tree, "check", "--runs", str(runs), *split,
                            *(["--jobs", str(jobs)] if jobs > 1 else []))
        # the ledger's record is named by the seeds: the baseline's check ran the same ones
        # (maybe in fewer processes: the whole op in one before the case list existed; the
        # bar is the most one of its processes held, so that errs towards passing)
        return cuda_ledger_watch(command, tree, "-".join(map(str, seeds)))

    def bench(self, target: Target, tree: Tree) -> Command | None:
        if isinstance(target.data, ModelData):
            raise UsageError("the whole model has no bench: it is profiled as a whole program",
                             hint=f"kernelopt profile {target.root} --backend llamacpp --engine; "
                                  f"{_GIVE_OP}")
        data: OpData = target.data
        extra = ["--pin", str(data.pin)] + (["--case", data.case] if data.case else [])
        extra += [arg for m in data.match or () for arg in ("--match", m)]
        return self._tbo(target, tree, "bench", *extra, *(["--harness"] if data.harness else []))

    def shape_check(self, target: Target, tree: Tree, seed: int) -> Command | None:
        if isinstance(target.data, ModelData):
            return None
        """The timed case in test mode, when test-backend-ops' test set holds it (recorded at
        pin time); otherwise None and the shape gate reports the timed shape as unverified."""
        data: OpData = target.data
        pin = read_pin(data.pin, target.name)
        if pin is None or not pin.get("checkable"):
            return None
        return self._tbo(target, tree, "shape", "--pin", str(data.pin))

    def model_compare(self, targets: list[Target], winners: dict[str, Path],
                      out_dir: Path) -> Command | None:
        """The model check after --top K's runs (whole_model.py): the model as the tree builds
        it and with every winner in place, tokens compared, prefill and decode tokens/s."""
        data = targets[0].data if targets else None
        if not isinstance(data, OpData) or data.model is None or data.standins or not winners:
            return None  # nothing to compare: no winner of a --top run
        argv = [sys.executable, "-m", "kernelopt_llamacpp.whole_model", "--src",
                str(targets[0].root), "--model", data.model, "--out", str(out_dir),
                "--arch", data.cuda_arch,
                "--flash-attn", "on" if any(t.name == "FLASH_ATTN_EXT" for t in targets) else "off"]
        for name in sorted(winners):
            argv += ["--winner", str(winners[name])]
        return Command(tuple(argv), out_dir, timeout_s=3600, label="model check")

    def engine(self, target: Target, tree: Tree) -> Command | None:
        data: OpData = target.data
        if data.e2e_model is None:
            return None
        argv = [sys.executable, "-m", "kernelopt_llamacpp.engine", "--build", str(tree.build),
                "--model", data.e2e_model,
                "--flash-attn", "on" if target.name == "FLASH_ATTN_EXT" else "off"]
        return Command(tuple(argv), tree.src, timeout_s=900, label="engine")


# --------------------------------------------------------------------------- hooks


@hookimpl
def kernelopt_register_backends() -> list[object]:
    return [LlamaCppBackend()]


@option_table("llamacpp")
@attrs.frozen
class LlamaCppOptions:
    """``[llamacpp]`` in kernelopt.toml; ``--op``, ``--case``, ``--e2e``, ``--e2e-model``,
    ``--device-backend``, ``--nodes``, ``--top`` (with a model and no --op: its K heaviest
    ops, by its last ``kernelopt profile --engine``)."""

    op: str | None = option(None, "The ggml op to optimize (e.g. SOFT_MAX).")
    case: str | None = option(None, "The test-backend-ops perf case to time; the op's largest "
                              "us/run when unset.")
    e2e_model: str | None = option(None, "A GGUF model for the engine gate (llama-completion "
                                   "outputs + llama-bench tokens/s).")
    e2e: bool = option(False, "The engine gate with a generated random-weight GGUF.")
    device_backend: str | None = option(None, "The ggml backend test-backend-ops runs on; CUDA0 "
                                        "when unset.")
    nodes: str | None = option(None, "The model's graph nodes (llama-eval-callback's output): "
                               "time the op on its heaviest node's shape.")
    # the same option as the Triton plugin's (one --top flag sets both tables)
    top: int = option(1, "A model (a Triton model file; a llama.cpp tree with --e2e or "
                      "--e2e-model and no --op): optimize its K kernels (ops) with the largest "
                      "share of GPU time.", validator=attrs.validators.ge(1))


@hookimpl
def kernelopt_option_tables() -> list[type]:
    return [LlamaCppOptions]


@hookimpl
def kernelopt_register_commands(cli: Any) -> None:
    import click

    def tree(flags: dict[str, Any]) -> Path:
        # usage first: the tree and the op (read from the source, no GPU needed) are checked
        # before nvcc and the GPU (discover), so a typo is never reported as a missing GPU
        return repo_path(flags, REPO_ENV, "llama.cpp tree")

    # [llamacpp]'s flags (--op, --case, ...) come with every loop command: --op may also be
    # `[llamacpp] op` or KERNELOPT_OP, and discover names the known ops when none is given
    options = [click.Option(["--repo"], help=f"The llama.cpp tree [${REPO_ENV} from the "
                            "environment or .env].")]
    cli.add_command(run_command(
        "run-llamacpp", forced={"backend": "llamacpp"}, resolve_path=tree, params=options,
        help="Optimize one ggml-cuda op of a llama.cpp tree (= run REPO --backend llamacpp "
             "--op OP)."))


STRATEGIES = """Strategies for ggml-cuda ops (llama.cpp):
- the op's CUDA_*_BLOCK_SIZE and launch bounds against the pinned shape's row length;
- warp-level reductions (warp_reduce_sum/max in common.cuh) over shared-memory trees;
- vectorized loads (float2/float4, half2) where ne00 is a multiple and rows are aligned;
- several rows per block for short rows; fewer __syncthreads; keep the existing template
  specializations (ncols) that test-backend-ops exercises;
- correctness is NMSE against the CPU backend over every case of `test-backend-ops test -o OP`."""


@hookimpl
def kernelopt_prompt_fragments(backend: str, role: str) -> list[str]:
    return [STRATEGIES] if backend == "llamacpp" and role == "planner" else []
