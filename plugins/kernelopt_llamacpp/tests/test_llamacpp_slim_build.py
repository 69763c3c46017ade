"""An op's slim build: ggml-cuda without the matrix-multiplication files and template instances
the op never calls.

The CMake script runs in a real configure of a project laid out as llama.cpp lays out ggml
(project ggml, a ggml-cuda shared library globbing template-instances/), built by the real
compiler; the tool that links it runs, and one that calls a left-out instance stops with the
loader's words, which tbo.py turns into what to do."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from kernelopt_llamacpp.backend import SLIM_SCRIPT, cmake_args
from kernelopt_llamacpp.targets import SLIM_LEFT_OUT, slim_sources
from kernelopt_llamacpp.tbo_output import left_out_problem

needs_cmake = pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("c++") is None,
                                 reason="needs cmake and a C++ compiler")


def test_an_op_other_than_matmul_or_attention_leaves_all_of_them_out() -> None:
    assert slim_sources("NORM", ("ggml/src/ggml-cuda/norm.cu",)) == SLIM_LEFT_OUT
    assert "mmvq" in SLIM_LEFT_OUT and "template-instances/mmq*" in SLIM_LEFT_OUT
    for op in ("MUL_MAT", "MUL_MAT_ID", "FLASH_ATTN_EXT"):
        assert slim_sources(op, ("ggml/src/ggml-cuda/mmq.cu",)) == ()
    # an op computed in one of those files keeps it and its instances
    kept = slim_sources("X", ("ggml/src/ggml-cuda/mmf.cu", "ggml/src/ggml-cuda/mmf.cuh"))
    assert "mmf" not in kept and "template-instances/mmf*" not in kept and "mmq" in kept


def test_a_full_build_undoes_a_slim_configure_of_the_same_folder() -> None:
    slim = cmake_args("90", False, False, ("template-instances/mmq*", "mmvq"))
    assert f"-DCMAKE_PROJECT_ggml_INCLUDE={SLIM_SCRIPT}" in slim
    assert "-DKERNELOPT_SLIM_EXCLUDE=template-instances/mmq[^/]*|mmvq" in slim
    assert "-DCMAKE_EXE_LINKER_FLAGS=-Wl,--allow-shlib-undefined" in slim
    full = cmake_args("90", True, False)
    assert "-UCMAKE_PROJECT_ggml_INCLUDE" in full and "-UKERNELOPT_SLIM_EXCLUDE" in full
    assert "-DCMAKE_EXE_LINKER_FLAGS=" in full
    assert SLIM_SCRIPT.is_file()  # shipped with the package (package-data)


def _project(root: Path) -> None:
    cuda = root / "ggml" / "src" / "ggml-cuda"
    (cuda / "template-instances").mkdir(parents=True)
    (root / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.19)\nproject(llama.cpp CXX)\n"
        "add_subdirectory(ggml)\nadd_executable(test-backend-ops tool.cpp)\n"
        "target_link_libraries(test-backend-ops ggml-cuda)\n")
    (root / "ggml" / "CMakeLists.txt").write_text(
        "project(ggml CXX)\nadd_subdirectory(src/ggml-cuda)\n")
    (cuda / "CMakeLists.txt").write_text(
        'file(GLOB SOURCES "*.cu")\nfile(GLOB I "template-instances/mmq*.cu")\n'
        "list(APPEND SOURCES ${I})\nset_source_files_properties(${SOURCES} PROPERTIES "
        "LANGUAGE CXX)\nadd_library(ggml-cuda SHARED ${SOURCES})\n"
        "target_compile_options(ggml-cuda PRIVATE -x c++)\n")
    # norm.cu runs whatever the build; the dispatcher calls mmvq.cu and mmq.cu (which calls its
    # instance) for a matrix multiplication only: a slim build leaves those three out
    (cuda / "norm.cu").write_text("int norm(int x) { return 2 * x; }\n")
    (cuda / "ggml-cuda.cu").write_text(
        "int mmvq(int x);\nint mmq(int x);\nint mul_mat(int x) { return x > 1 ? mmq(x) : mmvq(x); }\n")
    (cuda / "mmvq.cu").write_text("int mmvq(int x) { return x + 41; }\n")
    (cuda / "mmq.cu").write_text("int mmq_case(int x);\nint mmq(int x) { return mmq_case(x); }\n")
    (cuda / "template-instances" / "mmq-instance-q4_0.cu").write_text(
        "int mmq_case(int x) { return x + 40; }\n")
    (root / "tool.cpp").write_text(
        "#include <cstdio>\n#include <cstring>\nint norm(int); int mul_mat(int);\n"
        "int main(int argc, char** argv) {\n"
        "  bool mm = argc > 1 && std::strcmp(argv[1], \"MUL_MAT\") == 0;\n"
        "  std::printf(\"%d\\n\", mm ? mul_mat(2) : norm(21)); }\n")


def _build(root: Path, build: Path, args: list[str]) -> Path:
    args = [a for a in args if a.startswith(("-DCMAKE_PROJECT", "-DKERNELOPT", "-U",
                                            "-DCMAKE_EXE_LINKER"))]
    subprocess.run(["cmake", "-S", str(root), "-B", str(build), *args], check=True,
                   capture_output=True)
    subprocess.run(["cmake", "--build", str(build), "-j", "2"], check=True, capture_output=True)
    return build / "test-backend-ops"


@needs_cmake
def test_the_slim_build_runs_the_op_and_a_left_out_call_is_named(tmp_path: Path) -> None:
    root, build = tmp_path / "llama.cpp", tmp_path / "base-build"
    _project(root)
    tool = _build(root, build, cmake_args("90", False, False, slim_sources("NORM", ())))
    objects = {p.name for p in build.rglob("*.o")}
    assert objects >= {"norm.cu.o", "ggml-cuda.cu.o"}
    assert not objects & {"mmq.cu.o", "mmvq.cu.o", "mmq-instance-q4_0.cu.o"}  # never compiled
    assert subprocess.run([tool, "NORM"], capture_output=True, text=True).stdout == "42\n"
    stopped = subprocess.run([tool, "MUL_MAT"], capture_output=True, text=True)
    assert stopped.returncode == 127
    problem = left_out_problem(stopped.stdout + stopped.stderr)
    assert problem is not None and "mmq" in problem and "--full-build" in problem

    # the same folder configured for a full build (MUL_MAT's run after NORM's) is whole again
    tool = _build(root, build, cmake_args("90", False, False))
    assert any("instance" in p.name for p in build.rglob("*.o"))
    assert subprocess.run([tool, "MUL_MAT"], capture_output=True, text=True).stdout == "42\n"
