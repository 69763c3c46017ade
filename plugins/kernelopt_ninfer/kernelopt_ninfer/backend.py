"""The ``ninfer`` backend: one op of an NInfer tree, through its CTest test and op bench.

``kernelopt run-ninfer --op rmsnorm [--repo PATH]`` is ``kernelopt run PATH --backend ninfer
--ninfer-op rmsnorm``. docs/ninfer.md is the user's page. The target is targets.py, the op
table layout.py (files and CMake targets), the guards and the device choice toolchain.py, the
knobs tuning.py, and the child programs the core spawns are ctest_run.py (check), bench_run.py
(bench) and engine.py (the engine gate).

The CPU seam: a tree that declares ``option(NINFER_CPU_KERNELS ...)`` (our fixture; upstream
never does) can compile its kernels as C++ for the CPU (``--device cpu``, or ``auto`` without a
GPU). A real NInfer tree has no such option, so the seam cannot hide a missing GPU.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kernelopt_core.api import (
    Command,
    Settings,
    Target,
    Tree,
    cmake_commands,
    cuda_kernel_names,
    read_pin,
)
from kernelopt_ninfer import targets
from kernelopt_ninfer.ctest_run import covers
from kernelopt_ninfer.targets import ENGINE_TARGET, OpData

STEP_TIMEOUT_S = 3600.0


def _python(module: str, *args: str) -> tuple[str, ...]:
    return (sys.executable, "-m", f"kernelopt_ninfer.{module}", *args)


class NInferBackend:
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
        data: OpData = target.data
        args = ["-DCMAKE_BUILD_TYPE=Release", "-DBUILD_TESTING=ON", "-DNINFER_BUILD_BENCHMARKS=ON",
                "-DNINFER_BUILD_APPS=OFF", "-DNINFER_BUILD_TOOLS=OFF"]
        if data.device == "cuda":
            args += [f"-DCMAKE_CUDA_ARCHITECTURES={data.arch}"]
            args += [f"-DCMAKE_CUDA_COMPILER={data.nvcc}"] if data.nvcc else []
        else:
            args.append("-DNINFER_CPU_KERNELS=ON")
        built = [data.test, *([data.bench] if data.bench else []),
                   *([ENGINE_TARGET] if data.artifact else [])]
        return cmake_commands(tree.src, tree.src, tree.build, args, targets=built,
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
