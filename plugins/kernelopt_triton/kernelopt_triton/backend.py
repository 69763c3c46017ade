"""The ``triton`` backend: standalone Triton kernel files and directories of them (models.py's
``inductor`` backend builds on it; plugin.py registers both).

Imports only the core and the standard library: torch and triton are imported by the child
process (:mod:`kernelopt_triton.harness`), never here, so ``kernelopt --help`` stays fast.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

from kernelopt_core.api import (
    BenchSpec,
    Command,
    PrerequisiteError,
    Settings,
    Target,
    Tree,
    UsageError,
)
from kernelopt_triton import convention, knobs

HARNESS = "kernelopt_triton.harness"
FILE_CONFIDENCE = 0.9
DIR_CONFIDENCE = 0.8


def missing_prerequisites(find_spec: Any = None) -> list[str]:
    """The packages the kernels' child processes need and cannot import (cheap: no import)."""
    find_spec = find_spec or importlib.util.find_spec
    return [name for name in ("torch", "triton") if find_spec(name) is None]


def require_prerequisites(find_spec: Any = None) -> None:
    missing = missing_prerequisites(find_spec)
    if missing:
        raise PrerequisiteError(
            f"the triton backend needs {' and '.join(missing)}, which {sys.executable} cannot "
            "import",
            hint=f"{sys.executable} -m pip install {' '.join(missing)} (a CPU build of torch is "
            "enough to check kernels under Triton's interpreter; timing needs a GPU)",
        )


def gpu_device() -> str | None:
    """"cuda" or "hip" when a GPU looks usable, without importing torch (a cheap probe: the
    harness decides for real and falls back to the interpreter, saying so in its bench line)."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        return None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", os.environ.get("HIP_VISIBLE_DEVICES"))
    if visible is not None and visible.strip() in ("", "-1"):
        return None
    if Path("/dev/nvidiactl").exists() or Path("/dev/nvidia0").exists() or Path("/dev/dxg").exists():
        return "cuda"
    if Path("/dev/kfd").exists():
        return "hip"
    return None


class TritonBackend:
    name = "triton"

    def kernel_names(self, target: Target, files: dict[str, bytes]) -> dict[str, str]:
        """The ``@triton.jit`` functions the Python files define (the convention's reader)."""
        names: dict[str, str] = {}
        for path, data in sorted(files.items()):
            tree = convention.parse(data.decode("utf-8", "replace")) if path.endswith(".py") \
                else None
            for name in convention.jit_functions(tree) if tree is not None else ():
                names.setdefault(name, path)
        return names

    def detect(self, path: Path) -> float:
        if path.is_file():
            return FILE_CONFIDENCE if convention.is_kernel_file(path) else 0.0
        if path.is_dir() and convention.kernel_files(path):
            return DIR_CONFIDENCE
        return 0.0

    def discover(self, path: Path, settings: Settings) -> list[Target]:
        if path.is_file():
            if not convention.is_kernel_file(path):
                raise UsageError(
                    f"{path} is not a Triton kernel file",
                    hint="a kernel file has a @triton.jit function and defines make_args, launch, "
                    "reference, SHAPE, TOLERANCE and OUTPUTS (docs/triton.md)")
            files = [path]
        else:
            files = convention.kernel_files(path)
            if not files:
                raise UsageError(f"no Triton kernel files in {path}",
                                 hint="docs/triton.md describes a kernel file")
        require_prerequisites()
        return [self._target(f.resolve()) for f in files]

    def _target(self, file: Path) -> Target:
        text = file.read_text(encoding="utf-8", errors="replace")
        tree = convention.parse(text)
        facts: dict[str, Any] = {}
        if tree is not None:
            missing = convention.missing_names(tree)
            if missing:
                raise UsageError(
                    f"{file}: the kernel file does not define {', '.join(missing)}",
                    hint="docs/triton.md lists the names a kernel file defines")
            facts = convention.declared(tree)
        device = gpu_device() or "cpu"
        return Target(
            backend=self.name,
            name=file.stem,
            root=file.parent,
            editable=(file.name,),
            shape=facts.get("SHAPE", ""),
            bytes_moved=facts.get("BYTES"),
            flops=facts.get("FLOPS"),
            knobs=tuple(knobs.detect(file.name, text)),
            bench=BenchSpec(format="json"),
            device=device,
            data={"oracle": file, "device": device},
        )

    # ------------------------------------------------------------------ commands
    def _env(self, target: Target) -> dict[str, str]:
        # Inductor compiles in the process, without a pool of compile workers: nothing the
        # harness starts outlives a request, so any process that does is the candidate's
        env = {"PYTHONDONTWRITEBYTECODE": "1", "TORCHINDUCTOR_COMPILE_THREADS": "1"}
        if (target.data or {}).get("device", target.device) == "cpu":
            env["TRITON_INTERPRET"] = "1"  # no GPU: Triton's interpreter on CPU tensors
        return env

    def _harness(self, target: Target, tree: Tree, mode: str, *extra: str,
                 label: str, timeout_s: float = 600.0) -> Command:
        file = tree.src / target.editable[0]
        argv = [sys.executable, "-m", HARNESS, mode, str(file), *extra]
        oracle = (target.data or {}).get("oracle")
        if oracle is not None:
            argv += ["--oracle", str(oracle)]
        return Command(tuple(argv), tree.src, env=self._env(target), timeout_s=timeout_s,
                       label=label)

    def build(self, target: Target, tree: Tree) -> list[Command]:
        # Nothing to compile ahead of time; a syntax error is still a build failure.
        code = ("import py_compile, sys; "
                "py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)")
        cfile = tree.build / (Path(target.editable[0]).stem + ".pyc")
        return [Command((sys.executable, "-c", code, str(tree.src / target.editable[0]), str(cfile)),
                        tree.src, timeout_s=60.0, label="py_compile")]

    def check(self, target: Target, tree: Tree, seed: int) -> Command:
        return self._harness(target, tree, "check", "--seed", str(seed), label="check")

    def check_seeds(self, target: Target, tree: Tree, seeds: tuple[int, ...]) -> Command:
        # one process for all seeds: torch + Triton + CUDA start-up costs seconds per process
        return self._harness(target, tree, "check", "--seeds", ",".join(map(str, seeds)),
                             label="check")

    def bench(self, target: Target, tree: Tree) -> Command | None:
        return self._harness(target, tree, "bench", label="bench")

    def bench_worker(self, target: Target, tree: Tree) -> Command | None:
        # one process per tree: torch, CUDA and the compile paid once, many readings served
        return self._harness(target, tree, "serve", label="bench worker")

    def engine(self, target: Target, tree: Tree) -> Command | None:
        return None  # a standalone kernel file has no whole program around it
