"""The ``llamacpp`` backend: one ggml-cuda op of a llama.cpp tree, through test-backend-ops.

``kernelopt run-llamacpp --op SOFT_MAX [--repo PATH]`` is ``kernelopt run PATH --backend
llamacpp --op SOFT_MAX``. docs/llamacpp.md is the user's page; the targets are targets.py, the op table
ops.py, the test-backend-ops steps tbo.py, the knobs tuning.py, the engine gate engine.py.

Fixture trees: a tree whose root holds ``kernelopt-fixture.toml`` with ``standins = true``
declares itself a CPU stand-in of llama.cpp (our CI fixture). Only then are nvcc and a GPU not
required and the op's files compiled by the tree's own CPU build; every command is otherwise the
same. A real tree never carries that file, so the seam cannot hide a missing GPU.
"""

from __future__ import annotations

import sys
from pathlib import Path

import attrs

from kernelopt_core.api import (
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
    read_pin,
)
from kernelopt_llamacpp import slim, targets
from kernelopt_llamacpp.dispatch_knobs import cap_names
from kernelopt_llamacpp.targets import (
    GENERATED_TOKENS,
    PROMPT_TOKENS,
    REALISTIC_MODEL,
    ModelData,
    OpData,
)

TOOL = "test-backend-ops"
ENGINE_TOOLS = ("llama-bench", "llama-completion")

_GIVE_OP = "to optimize an op, give --op (the ops by share: kernelopt profile --engine)"

CORES_PER_RUN = 4  # one test-backend-ops run kept 3.4-3.8 cores busy, whatever its -j (H200)


def cmake_args(arch: str, engine: bool, flash_attn: bool,
               slim_globs: tuple[str, ...] | None = None) -> list[str]:
    """The configure arguments of every build of a tree: an op's runs, the model check's.
    ``slim_globs``: what its build leaves out of ggml-cuda (OpData.slim, slim.py); None: a
    full build (the model's, --full-build)."""
    args = [
        "-DCMAKE_BUILD_TYPE=Release", "-DGGML_CUDA=ON", f"-DCMAKE_CUDA_ARCHITECTURES={arch}",
        "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF",  # no network features
        "-DLLAMA_BUILD_TESTS=ON", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_SERVER=OFF",
        f"-DLLAMA_BUILD_TOOLS={'ON' if engine else 'OFF'}",
        "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",  # the compile probe's commands (probe.py)
    ]
    if not flash_attn:
        # the engine gate runs the model with flash attention off, so that attention goes
        # through SOFT_MAX (the op being optimized), not fattn; the flag no longer leaves the
        # fattn template instances out of the build (the slim build does: slim.py)
        args.append("-DGGML_CUDA_FA=OFF")
    return args + slim.args(slim_globs) if slim_globs is not None else args


class LlamaCppBackend:
    name = targets.NAME

    def kernel_names(self, target: Target, files: dict[str, bytes]) -> dict[str, str]:
        """The CUDA/HIP kernels the files define (the backend kit's ``__global__`` reader)."""
        return cuda_kernel_names(files)

    def detect(self, path: Path) -> float:
        return targets.detect(path)

    def discover(self, path: Path, settings: Settings) -> list[Target]:
        return targets.discover(path, settings)

    # ------------------------------------------------------------------ commands
    def build(self, target: Target, tree: Tree) -> list[Command]:
        data: OpData | ModelData = target.data
        if isinstance(data, ModelData) and not data.standins and (problem := targets.gpu_problem()):
            raise PrerequisiteError(f"kernelopt-llamacpp needs nvcc and an NVIDIA GPU to build and "
                                    f"run llama.cpp's model: {problem}",
                                    hint="install what is missing, then rerun")
        engine = data.e2e_model is not None
        args = cmake_args(data.cuda_arch, engine, target.name == "FLASH_ATTN_EXT",
                          data.slim if isinstance(data, OpData) else None)
        # configured again when the arguments change (e.g. the engine gate turned on)
        tools = [] if isinstance(data, ModelData) else [TOOL]  # a model: its engine tools only
        commands = cmake_commands(tree.src, tree.src, tree.build, args,
                                  targets=[*tools, *(ENGINE_TOOLS if engine else ())])
        if isinstance(data, OpData) and data.slim is not None:  # said on the console with the step's time
            commands = [attrs.evolve(c, label=slim.label(data.slim)) if c.label == "build" else c
                        for c in commands]
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
        # a selection cap's values are its switch's cases, each compiled in every build: only
        # the reach check judges them (mmvf.cu is a 56 s compile: 87 s of probe for nothing)
        argv += [arg for name in cap_names(tree.src, tus) for arg in ("--compiles", name)]
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
