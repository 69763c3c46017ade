"""The guards of a tree against the GPU and nvcc found, and the refusal before any build."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from kernelopt_ninfer.toolchain import decide, read_guards

from kernelopt_core.api import PrerequisiteError, UsageError

KERNELOPT = [sys.executable, "-c", "from kernelopt_core.cli import main; main()"]

VOLTA_PORT = """
if(NOT CMAKE_CUDA_ARCHITECTURES STREQUAL "120a" AND NOT CMAKE_CUDA_ARCHITECTURES STREQUAL "70")
  message(FATAL_ERROR
    "NInfer supports only CMAKE_CUDA_ARCHITECTURES=120a or 70 (Volta port); got "
    "'${CMAKE_CUDA_ARCHITECTURES}'")
endif()
if(CMAKE_CUDA_ARCHITECTURES STREQUAL "120a" AND CMAKE_CUDA_COMPILER_VERSION VERSION_LESS 13.1)
  message(FATAL_ERROR "sm_120a requires CUDA 13.1 or newer; found CUDA compiler "
    "${CMAKE_CUDA_COMPILER_VERSION}")
endif()
if(CMAKE_CUDA_ARCHITECTURES STREQUAL "70" AND
   CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 13.0)
  message(FATAL_ERROR "sm_70 requires CUDA 12.8; found ${CMAKE_CUDA_COMPILER_VERSION}")
endif()
"""


def test_guards_of_upstream_the_fixture_a_port_and_none(upstream_tree: Path, fixture_root: Path,
                                                        tmp_path: Path) -> None:
    upstream = read_guards(upstream_tree)
    assert upstream.archs == ("120a",) and not upstream.cpu_kernels
    assert upstream.version_problem("120a", "13.0") == "CUDA ≥ 13.1"
    assert upstream.version_problem("120a", "13.1") is None
    assert "NInfer supports only CMAKE_CUDA_ARCHITECTURES=120a" in upstream.arch_text

    fixture = read_guards(fixture_root)  # set(NINFER_ALLOWED_CUDA_ARCHITECTURES 120a 90)
    assert fixture.archs == ("120a", "90") and fixture.cpu_kernels
    assert fixture.version_problem("90", "13.0") is None
    assert fixture.version_problem("90", "12.2") == "CUDA ≥ 12.4"

    (tmp_path / "CMakeLists.txt").write_text(VOLTA_PORT)
    port = read_guards(tmp_path)
    assert port.archs == ("120a", "70")
    assert port.version_problem("70", "13.0") == "CUDA < 13.0"  # per-architecture floors
    assert port.version_problem("70", "12.8") is None
    assert port.version_problem("120a", "12.8") == "CUDA ≥ 13.1"

    (tmp_path / "CMakeLists.txt").write_text(
        'if(NINFER_USE_HIP)\n  message(STATUS "hip")\n'
        'elseif(NOT CMAKE_CUDA_ARCHITECTURES STREQUAL "120a")\n'
        '  message(FATAL_ERROR "NInfer supports only CMAKE_CUDA_ARCHITECTURES=120a; got x")\n'
        'endif()\n')
    assert read_guards(tmp_path).archs == ("120a",)  # a guard in an elseif() branch counts

    (tmp_path / "CMakeLists.txt").write_text("project(ninfer LANGUAGES CXX CUDA)\n")
    free = read_guards(tmp_path)
    assert free.archs is None and free.arch_allowed("90") and free.versions == ()


def test_decide_builds_for_the_gpu_only_where_the_tree_allows_it(
        upstream_tree: Path, fixture_root: Path, fake_tools, only_path) -> None:
    only_path(fake_tools(nvcc="13.0", gpu="NVIDIA H200, 9.0"))
    on_h200 = decide(fixture_root, "auto", None)
    assert (on_h200.device, on_h200.arch) == ("cuda", "90")
    assert on_h200.nvcc is not None and on_h200.nvcc.release == "13.0"
    assert decide(fixture_root, "cuda", "90").arch == "90"  # forced, allowed, runnable here
    with pytest.raises(UsageError, match="builds code this GPU cannot run"):
        decide(fixture_root, "cuda", "120a")  # allowed by the tree, but not for an sm_90 GPU
    with pytest.raises(UsageError, match="--cuda-arch 86"):
        decide(fixture_root, "cuda", "86")
    assert decide(fixture_root, "cpu", None).device == "cpu"
    with pytest.raises(PrerequisiteError, match="no NINFER_CPU_KERNELS option"):
        decide(upstream_tree, "cpu", None)


def test_without_a_gpu_auto_takes_the_cpu_stand_in_or_refuses(
        upstream_tree: Path, fixture_root: Path, fake_tools, only_path) -> None:
    only_path(fake_tools(nvcc="13.0", gpu=None))  # nvcc, but nvidia-smi lists no GPU
    chosen = decide(fixture_root, "auto", None)
    assert chosen.device == "cpu" and "no NVIDIA GPU" in chosen.why
    with pytest.raises(PrerequisiteError) as refused:
        decide(fixture_root, "cuda", None)
    assert "no NVIDIA GPU" in str(refused.value)
    with pytest.raises(PrerequisiteError) as upstream:
        decide(upstream_tree, "auto", None)
    assert "no NVIDIA GPU" in str(upstream.value) and "120a" in str(upstream.value)


def test_run_ninfer_refuses_upstream_on_an_h200_before_any_build(
        upstream_tree: Path, tmp_path: Path, fake_tools, clean_env) -> None:
    tools = fake_tools(nvcc="13.0", gpu="NVIDIA H200, 9.0")
    result = subprocess.run([*KERNELOPT, "run-ninfer", "--op", "rmsnorm", "--repo",
                             str(upstream_tree)], cwd=tmp_path, capture_output=True, text=True,
                            env=clean_env(PATH=str(tools)), timeout=120)
    out = result.stdout + result.stderr
    assert result.returncode == 3, out
    assert "sm_90" in out and "9.0" in out and "NVIDIA H200" in out
    assert "CUDA 13.0" in out and "V13.0.88" in out
    assert "120a" in out and "CUDA ≥ 13.1" in out
    assert "NInfer requires CUDA 13.1 or newer" in out  # the tree's own words, quoted
    assert not list(tmp_path.rglob("CMakeCache.txt"))  # nothing configured, nothing built
