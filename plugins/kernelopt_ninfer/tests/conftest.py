"""Shared fixtures: an upstream-layout NInfer tree with NInfer's real file and target names
(empty or minimal files), fake nvcc/nvidia-smi, and a fresh copy of the CPU fixture tree."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

FIXTURE = Path(__file__).parent / "fixture_repo"

# include/ninfer/ops/*.h, src/ops/**, tests/ops/**, bench/ops/** as in github.com/Neroued/ninfer
# (read through the code index: names and #include lines only; contents are minimal)
UPSTREAM_CMAKE = """cmake_minimum_required(VERSION 3.28)
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 120a CACHE STRING "CUDA architectures to build")
endif()
if(NOT CMAKE_CUDA_ARCHITECTURES STREQUAL "120a")
  message(FATAL_ERROR
    "NInfer supports only CMAKE_CUDA_ARCHITECTURES=120a; got "
    "'${CMAKE_CUDA_ARCHITECTURES}'")
endif()
project(ninfer LANGUAGES C CXX CUDA)
option(NINFER_BUILD_APPS "Build the NInfer CLI and server" ON)
option(BUILD_TESTING "Build NInfer tests" OFF)
option(NINFER_BUILD_BENCHMARKS "Build NInfer benchmarks" OFF)
option(NINFER_BUILD_TOOLS "Build NInfer developer tools" OFF)
if(CMAKE_CUDA_COMPILER_VERSION VERSION_LESS 13.1)
  message(FATAL_ERROR
    "NInfer requires CUDA 13.1 or newer; found CUDA compiler "
    "${CMAKE_CUDA_COMPILER_VERSION}")
endif()
add_subdirectory(src)
if(BUILD_TESTING)
  enable_testing()
  add_subdirectory(tests)
endif()
if(NINFER_BUILD_BENCHMARKS)
  add_subdirectory(bench)
endif()
"""

UPSTREAM_TESTS = """function(ninfer_add_test name)
  cmake_parse_arguments(arg "NEEDS_SOURCE_DIR" "" "SOURCES;LIBRARIES" ${ARGN})
  add_executable(${name} ${arg_SOURCES})
  add_test(NAME ${name} COMMAND ${name})
endfunction()

ninfer_add_test(ninfer_device_test       SOURCES test_device.cpp)
# Shared Op numerical tests.
set(ninfer_op_tests
  silu_mul
  residual_add
  rmsnorm
  gated_delta_rule)
foreach(op IN LISTS ninfer_op_tests)
  ninfer_add_test(ninfer_${op}_test
    SOURCES ops/test_${op}.cpp
    LIBRARIES ninfer_ops)
endforeach()
ninfer_add_test(ninfer_gqa_attention_test
  SOURCES ops/test_gqa_attention.cpp
  LIBRARIES ninfer_ops)
"""

UPSTREAM_BENCH = """function(ninfer_add_op_bench name)
  cmake_parse_arguments(arg "" "" "SOURCES" ${ARGN})
  add_executable(${name} ${arg_SOURCES})
endfunction()

ninfer_add_op_bench(ninfer_silu_mul_bench SOURCES ops/silu_mul_bench.cu)
ninfer_add_op_bench(ninfer_residual_add_bench SOURCES ops/residual_add_bench.cu)
ninfer_add_op_bench(ninfer_rmsnorm_bench SOURCES ops/rmsnorm_bench.cu)
ninfer_add_op_bench(ninfer_gdn_layer_bench SOURCES ops/gdn_layer_bench.cu)
ninfer_add_op_bench(ninfer_gqa_attention_bench SOURCES ops/gqa_attention_bench.cu)

# End-to-end product benchmark: public Engine API and native .ninfer artifacts only.
add_executable(ninfer_bench targets/qwen3_6_27b/ninfer_bench.cpp targets/qwen3_6_27b/ninfer_bench_support.cpp)
"""

# path -> its #include "..." lines (the only content the op table reads)
UPSTREAM_FILES: dict[str, tuple[str, ...]] = {
    "include/ninfer/ops/rmsnorm.h": (), "include/ninfer/ops/gated_rmsnorm.h": (),
    "include/ninfer/ops/silu_mul.h": (), "include/ninfer/ops/residual_add.h": (),
    "include/ninfer/ops/gated_delta_rule.h": (), "include/ninfer/ops/gqa_attention.h": (),
    "src/ops/wrapper/rmsnorm.cpp": ("ninfer/ops/rmsnorm.h", "ninfer/ops/gated_rmsnorm.h",
                                    "ops/launcher/rmsnorm.h"),
    "src/ops/wrapper/silu_mul.cpp": ("ninfer/ops/silu_mul.h", "ops/launcher/silu_and_mul.h"),
    "src/ops/wrapper/gated_delta_rule.cpp": ("ninfer/ops/gated_delta_rule.h",
                                             "ops/launcher/gated_delta_rule.h"),
    "src/ops/wrapper/gqa_attention.cpp": ("ninfer/ops/gqa_attention.h",
                                          "ops/launcher/gqa_attention.h"),
    "src/ops/launcher/rmsnorm.h": (),
    "src/ops/launcher/rmsnorm.cu": ("ops/launcher/rmsnorm.h", "ops/common/device_sm_count.h",
                                    "ops/kernel/rmsnorm.cuh"),
    "src/ops/launcher/silu_and_mul.h": (),
    "src/ops/launcher/silu_and_mul.cu": ("ops/launcher/silu_and_mul.h", "ops/common/math.h",
                                         "ops/kernel/silu_and_mul.cuh"),
    "src/ops/launcher/residual_add.cu": ("ops/kernel/residual_add.cuh",),
    "src/ops/launcher/gated_delta_rule.h": (),
    "src/ops/launcher/gated_delta_rule_chunked.cu": ("ops/launcher/gated_delta_rule.h",
                                                     "ops/kernel/gdn_chunk_output.cuh"),
    "src/ops/launcher/gated_delta_rule_recurrent.cu": ("ops/launcher/gated_delta_rule.h",
                                                       "ops/kernel/gated_delta_rule_recurrent.cuh"),
    "src/ops/launcher/gqa_attention.h": (),
    "src/ops/launcher/gqa_attention_decode.cu": ("ops/launcher/gqa_attention.h",
                                                 "ops/kernel/gqa_attention_decode.cuh"),
    "src/ops/launcher/gqa_attention_prefill.cu": ("ops/launcher/gqa_attention.h",
                                                  "ops/kernel/gqa_attention_prefill_bf16.cuh"),
    "src/ops/launcher/rmsnorm_rope.cu": ("ops/launcher/rmsnorm_rope.h", "ops/kernel/rope.cuh"),
    "src/ops/launcher/rmsnorm_rope.h": (),
    "src/ops/kernel/rmsnorm.cuh": ("ops/common/math.cuh", "ops/common/warp.cuh"),
    "src/ops/kernel/silu_and_mul.cuh": ("ops/common/math.cuh",),
    "src/ops/kernel/residual_add.cuh": (),
    "src/ops/kernel/rope.cuh": (),
    "src/ops/kernel/gdn_chunk_output.cuh": ("ops/kernel/gdn_common.cuh",),
    "src/ops/kernel/gdn_common.cuh": (),
    "src/ops/kernel/gated_delta_rule_recurrent.cuh": ("ops/kernel/gdn_common.cuh",),
    "src/ops/kernel/gqa_attention_decode.cuh": ("ops/kernel/gqa_attention_decode_bf16.cuh",),
    "src/ops/kernel/gqa_attention_decode_bf16.cuh": (),
    "src/ops/kernel/gqa_attention_prefill_bf16.cuh": (),
    "src/ops/common/math.cuh": (), "src/ops/common/warp.cuh": (), "src/ops/common/math.h": (),
    "src/ops/common/device_sm_count.h": (),
    "tests/test_device.cpp": (),
    "tests/ops/op_check.h": (), "tests/ops/op_tester.h": ("ops/op_check.h",),
    "tests/ops/test_rmsnorm.cpp": ("ninfer/ops/rmsnorm.h", "ninfer/ops/gated_rmsnorm.h",
                                   "ops/op_tester.h"),
    "tests/ops/test_silu_mul.cpp": ("ninfer/ops/silu_mul.h", "ops/op_tester.h"),
    "tests/ops/test_residual_add.cpp": ("ninfer/ops/residual_add.h", "ops/op_tester.h"),
    "tests/ops/test_gated_delta_rule.cpp": ("ninfer/ops/gated_delta_rule.h", "ops/op_tester.h"),
    "tests/ops/test_gqa_attention.cpp": ("ninfer/ops/gqa_attention.h", "ops/op_tester.h"),
    "bench/ops/ninfer_bench_common.h": (),
    "bench/ops/rmsnorm_bench.cu": ("ninfer/ops/gated_rmsnorm.h", "ninfer/ops/rmsnorm.h",
                                   "ninfer_bench_common.h", "ops/kernel/rmsnorm.cuh"),
    "bench/ops/silu_mul_bench.cu": ("ninfer/ops/silu_mul.h", "ninfer_bench_common.h"),
    "bench/ops/residual_add_bench.cu": ("ninfer/ops/residual_add.h", "ninfer_bench_common.h"),
    "bench/ops/gdn_layer_bench.cu": ("ninfer_bench_common.h",),
    "bench/ops/gqa_attention_bench.cu": ("ninfer/ops/gqa_attention.h", "ninfer_bench_common.h"),
}


LATER_TESTS = """function(ninfer_add_op_test name)
  cmake_parse_arguments(arg "" "" "SOURCES;LIBRARIES" ${ARGN})
  add_executable(${name} ${arg_SOURCES})
  add_test(NAME ${name} COMMAND ${name})
endfunction()
ninfer_add_op_test(ninfer_device_test SOURCES test_device.cpp)
include("${CMAKE_CURRENT_SOURCE_DIR}/ops/tests.cmake")
"""

LATER_OPS_CMAKE = """set(ninfer_op_tests
  silu_mul
  residual_add
  rmsnorm
  gated_delta_rule)
foreach(op IN LISTS ninfer_op_tests)
  ninfer_add_op_test(ninfer_${op}_test
    SOURCES "${CMAKE_CURRENT_LIST_DIR}/test_${op}.cpp"
    LIBRARIES ninfer_ops)
endforeach()

ninfer_add_op_test(ninfer_gqa_attention_test
  SOURCES "${CMAKE_CURRENT_LIST_DIR}/test_gqa_attention.cpp"
  LIBRARIES ninfer_ops)
"""


def write_upstream_tree(root: Path, later_layout: bool = False) -> Path:
    """An upstream-layout NInfer tree; ``later_layout``: the op tests registered as later
    versions do (``ninfer_add_op_test`` in tests/ops/tests.cmake, pulled in by include())."""
    for rel, includes in UPSTREAM_FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f'#include "{inc}"\n' for inc in includes) + "// minimal\n")
    (root / "CMakeLists.txt").write_text(UPSTREAM_CMAKE)
    (root / "src" / "CMakeLists.txt").write_text("add_library(ninfer_ops STATIC)\n")
    (root / "bench" / "CMakeLists.txt").write_text(UPSTREAM_BENCH)
    (root / "tests" / "CMakeLists.txt").write_text(LATER_TESTS if later_layout else UPSTREAM_TESTS)
    if later_layout:
        (root / "tests" / "ops" / "tests.cmake").write_text(LATER_OPS_CMAKE)
    return root


@pytest.fixture
def upstream_tree(tmp_path: Path) -> Path:
    return write_upstream_tree(tmp_path / "ninfer")


@pytest.fixture
def make_upstream() -> Callable[..., Path]:
    """``make_upstream(root, later_layout=False)``: write_upstream_tree, for tests that need
    either layout (test modules do not import conftest: several suites have one)."""
    return write_upstream_tree


@pytest.fixture
def fixture_root() -> Path:
    """The CPU fixture tree itself (read only)."""
    return FIXTURE


@pytest.fixture
def fixture_copy(tmp_path: Path) -> Path:
    """A fresh copy of the CPU fixture tree (its README says how it works)."""
    return Path(shutil.copytree(FIXTURE, tmp_path / "fixture",
                                ignore=shutil.ignore_patterns("build", ".kernelopt", "__pycache__")))


@pytest.fixture
def fake_tools(tmp_path: Path) -> Callable[..., Path]:
    """``fake_tools(nvcc="13.0", gpu="NVIDIA H200, 9.0")``: a bin/ folder whose nvcc and
    nvidia-smi print what the real ones print (None leaves a tool out); cmake and ninja are
    linked in so that only the CUDA tools are fake."""
    def make(nvcc: str | None = "13.0", gpu: str | None = "NVIDIA H200, 9.0") -> Path:
        folder = tmp_path / f"bin-{nvcc}-{(gpu or 'none').replace(' ', '_').replace(',', '')}"
        folder.mkdir(exist_ok=True)
        scripts = {}
        if nvcc is not None:
            minor = nvcc + ".88"
            scripts["nvcc"] = (
                "#!/bin/sh\necho 'nvcc: NVIDIA (R) Cuda compiler driver'\n"
                "echo 'Copyright (c) 2005-2025 NVIDIA Corporation'\n"
                f"echo 'Cuda compilation tools, release {nvcc}, V{minor}'\n"
                f"echo 'Build cuda_{nvcc}.r{nvcc}/compiler.36424714_0'\n")
        if gpu is not None:
            scripts["nvidia-smi"] = f"#!/bin/sh\necho '{gpu}'\n"
        for name, text in scripts.items():
            path = folder / name
            path.write_text(text)
            path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        for tool in ("cmake", "ninja", "ctest"):
            real = shutil.which(tool)
            if real and not (folder / tool).exists():
                (folder / tool).symlink_to(real)
        return folder
    return make


@pytest.fixture
def only_path(monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], None]:
    """Make ``folder`` (and nothing else) this process's PATH."""
    def use(folder: Path) -> None:
        monkeypatch.setenv("PATH", str(folder))
    return use


@pytest.fixture
def clean_env() -> Callable[..., dict[str, str]]:
    """The environment for a `kernelopt` child: no KERNELOPT_* (but the session's shared
    device cache, root conftest.py) or NINFER_REPO of the caller's, plus ``extra`` (e.g.
    PATH)."""
    def make(**extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if (not k.startswith("KERNELOPT_") or k == "KERNELOPT_DEVICE_CACHE")
               and k != "NINFER_REPO"}
        env.update(extra)
        return env
    return make
