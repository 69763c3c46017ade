"""`kernelopt setup`: the prerequisite table and a seconds-long smoke test of the toolchain."""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
import time
from pathlib import Path

import attrs

from kernelopt_core import process
from kernelopt_core.errors import PrerequisiteError
from kernelopt_core.plugins import PluginHost
from kernelopt_core.target import Command


@attrs.frozen
class Check:
    name: str
    found: bool
    detail: str


def _tool(name: str, *alternatives: str, fix: str) -> Check:
    for candidate in (name, *alternatives):
        path = shutil.which(candidate)
        if path:
            return Check(name, True, path)
    return Check(name, False, fix)


def _module(name: str, fix: str) -> Check:
    spec = importlib.util.find_spec(name)
    return Check(f"python: {name}", spec is not None, spec.origin or "" if spec else fix)


def _gpu() -> Check:
    smi = shutil.which("nvidia-smi") or shutil.which("rocm-smi")
    if smi is None:
        return Check("GPU", False, "no nvidia-smi or rocm-smi: CPU targets only")
    result = process.run(Command((smi, "-L") if "nvidia" in smi else (smi,), Path.cwd(),
                                 timeout_s=20))
    first = result.stdout.strip().splitlines()[0] if result.stdout.strip() else result.describe()
    return Check("GPU", result.ok, first)


def prerequisites(host: PluginHost) -> list[Check]:
    providers = host.registry("llm_providers")
    keys = sorted({p.api_key_env for p in providers.values() if p.api_key_env})
    from kernelopt_core.settings import read_dotenv

    dotenv = read_dotenv(Path.cwd() / ".env")  # as runs read keys: the real environment wins
    have_key = [k for k in keys if os.environ.get(k) or dotenv.get(k)]
    return [
        _tool("git", fix="apt-get install git"),
        _tool("cc", "gcc", "clang", fix="apt-get install build-essential"),
        _tool("c++", "g++", "clang++", fix="apt-get install build-essential"),
        _tool("cmake", fix="apt-get install cmake (or pip install cmake)"),
        _tool("ninja", fix="optional: apt-get install ninja-build (faster rebuilds)"),
        *[_module(m, f"pip install {m}") for m in
          ("pluggy", "attrs", "cattrs", "click", "httpx", "dulwich", "portalocker", "scipy")],
        _module("torch", "for Triton/torch targets: pip install torch"),
        _module("triton", "for Triton targets: pip install triton"),
        _tool("nvcc", fix="for CUDA targets: install the CUDA toolkit"),
        _tool("ncu", fix="optional profiler: install Nsight Compute"),
        _tool("nsys", fix="optional profiler: install Nsight Systems"),
        _tool("hipcc", fix="for HIP targets: install ROCm"),
        _gpu(),
        Check("LLM key", bool(have_key),
              ", ".join(have_key) if have_key else
              f"optional: set one of {', '.join(keys)} (without one the built-in tuner runs)"),
    ]


CMAKELISTS = """cmake_minimum_required(VERSION 3.16)
project(kernelopt_smoke CXX)
add_executable(smoke smoke.cpp)
"""
SOURCE = '#include <cstdio>\nint main() { std::printf("{\\"time_ms\\": 1.0}\\n"); return 0; }\n'


def smoke() -> list[Check]:
    """Configure, build and run a one-file CMake project; commit and lock as a run would."""
    results: list[Check] = []
    with tempfile.TemporaryDirectory(prefix="kernelopt-smoke-") as tmp:
        root = Path(tmp)
        (root / "src").mkdir()
        (root / "src" / "CMakeLists.txt").write_text(CMAKELISTS)
        (root / "src" / "smoke.cpp").write_text(SOURCE)
        steps = [
            ("cmake configure", ("cmake", "-S", str(root / "src"), "-B", str(root / "build"))),
            ("cmake build", ("cmake", "--build", str(root / "build"))),
            ("run", (str(root / "build" / "smoke"),)),
        ]
        for name, argv in steps:
            start = time.perf_counter()
            result = process.run(Command(argv, root, timeout_s=120))
            results.append(Check(name, result.ok, f"{time.perf_counter() - start:.2f} s"
                                 if result.ok else f"{result.describe()}: {result.tail(300)}"))
            if not result.ok:
                return results
        try:
            from kernelopt_core.lock import gpu_lock
            from kernelopt_core.measure.parsers import parse
            from kernelopt_core.target import BenchSpec, Target
            from kernelopt_core.workspace import Workspace

            parse(BenchSpec(), result.stdout, "smoke")
            ws = Workspace(root / "state", Target("smoke", "smoke", root / "src", ("smoke.cpp",)))
            ws.start("smoke")
            with gpu_lock(root / "state"):
                pass
            results.append(Check("workspace + lock", True, "dulwich commit and portalocker ok"))
        except Exception as exc:
            results.append(Check("workspace + lock", False, f"{type(exc).__name__}: {exc}"))
    return results


def measure_peak(state_root: Path, kind: str) -> str:
    """`kernelopt setup --measure-peak KIND`: the device's peak bandwidth measured again now
    (the roofline gate's bound), as a line to print."""
    from kernelopt_core.measure.device import device_info

    info = device_info(state_root, kind, remeasure=True)
    if info.peak_gbps is None:
        raise PrerequisiteError(f"could not measure the {kind} peak: {info.method}")
    spread = f" (spread {info.spread_pct:.1f} %)" if info.spread_pct is not None else ""
    return (f"{info.name}: peak {info.peak_gbps:.1f} GB/s{spread}, {info.method}; kept in "
            f"{info.cache_path}")
