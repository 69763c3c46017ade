"""An op's slim build: ggml-cuda without the matrix-multiplication files and template instances
the op never calls, and test-backend-ops linked to ggml alone (not libllama and llama-common,
which llama.cpp's tests link and the tool never calls).

The CMake script runs in a real configure of a project laid out as llama.cpp lays out ggml
(project ggml, a ggml-cuda shared library globbing template-instances/), built by the real
compiler; the tool that links it runs, and one that calls a left-out instance stops with the
loader's words, which tbo.py turns into what to do."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from kernelopt_llamacpp import slim
from kernelopt_llamacpp.backend import cmake_args
from kernelopt_llamacpp.tbo_output import left_out_problem

from kernelopt_core.api import cmake_commands

needs_cmake = pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("c++") is None,
                                 reason="needs cmake and a C++ compiler")


def test_an_op_other_than_matmul_or_attention_leaves_all_of_them_out() -> None:
    assert slim.sources("NORM", ("ggml/src/ggml-cuda/norm.cu",)) == slim.LEFT_OUT
    for op in ("MUL_MAT", "MUL_MAT_ID"):  # attention's instances only
        assert slim.sources(op, ("ggml/src/ggml-cuda/mmq.cu",)) == ("template-instances/fattn*",)
    assert slim.label(slim.sources("MUL_MAT", ())) == (
        "build without the ggml-cuda files the op never calls (the fattn template instances), "
        "test-backend-ops without libllama and llama-common")
    assert slim.sources("FLASH_ATTN_EXT", ("ggml/src/ggml-cuda/fattn.cu",)) == ()
    # an op computed in one of those files keeps it and its instances
    kept = slim.sources("X", ("ggml/src/ggml-cuda/mmf.cu", "ggml/src/ggml-cuda/mmf.cuh"))
    assert "mmf" not in kept and "template-instances/mmf*" not in kept and "mmq" in kept


def test_the_slim_arguments_keep_the_users_ldflags_and_a_full_build_has_none(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LDFLAGS", "-L/opt/x/lib")
    args = cmake_args("90", False, False, ("template-instances/mmq*", "mmvq"))
    assert f"-DCMAKE_PROJECT_ggml_INCLUDE={slim.SCRIPT}" in args
    assert "-DKERNELOPT_SLIM_EXCLUDE=template-instances/mmq[^/]*|mmvq" in args
    assert ("-DCMAKE_EXE_LINKER_FLAGS=-L/opt/x/lib -Wl,-z,lazy -Wl,--allow-shlib-undefined"
            in args)
    assert "-DCMAKE_SHARED_LINKER_FLAGS=-L/opt/x/lib -Wl,-z,lazy" in args
    full = cmake_args("90", True, False)
    assert not [a for a in full if "SLIM" in a or "LINKER_FLAGS" in a or "PROJECT_ggml" in a]
    # a matrix multiplication's: the script for the tool's link, nothing undefined to allow
    matmul = cmake_args("90", False, False, ())
    assert f"-DCMAKE_PROJECT_ggml_INCLUDE={slim.SCRIPT}" in matmul
    assert "-DKERNELOPT_SLIM_EXCLUDE=" in matmul and not [a for a in matmul if "LINKER" in a]
    assert slim.SCRIPT.is_file()  # shipped with the package (package-data)


def _project(root: Path) -> None:
    cuda = root / "ggml" / "src" / "ggml-cuda"
    (cuda / "template-instances").mkdir(parents=True)
    (root / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.19)\nproject(llama.cpp CXX)\n"
        "add_subdirectory(ggml)\nadd_library(llama SHARED llama.cpp)\n"
        "target_link_libraries(llama PUBLIC ggml)\n"
        "add_library(llama-common STATIC common.cpp)\n"
        "target_link_libraries(llama-common PUBLIC llama)\nadd_subdirectory(tests)\n")
    # as llama.cpp's tests/CMakeLists.txt (llama_build) links every test (TAG_TESTS_LLAMA_LINK)
    (root / "tests").mkdir()
    (root / "tests" / "CMakeLists.txt").write_text(
        "add_executable(test-backend-ops ../tool.cpp)\n"
        "target_link_libraries(test-backend-ops PRIVATE llama llama-common)\n"
        "set_target_properties(test-backend-ops PROPERTIES RUNTIME_OUTPUT_DIRECTORY "
        "${CMAKE_BINARY_DIR})\n")
    (root / "llama.cpp").write_text("int llama_init() { return 1; }\n")
    (root / "common.cpp").write_text("int llama_init();\nint common_init() { return llama_init(); }\n")
    (root / "ggml" / "CMakeLists.txt").write_text(
        "project(ggml CXX)\nadd_subdirectory(src/ggml-cuda)\nadd_library(ggml INTERFACE)\n"
        "target_link_libraries(ggml INTERFACE ggml-cuda)\n")
    (cuda / "CMakeLists.txt").write_text(
        'file(GLOB SOURCES "*.cu")\nfile(GLOB I "template-instances/*.cu")\n'
        "list(APPEND SOURCES ${I})\nset_source_files_properties(${SOURCES} PROPERTIES "
        "LANGUAGE CXX)\nadd_library(ggml-cuda SHARED ${SOURCES})\n"
        "target_compile_options(ggml-cuda PRIVATE -x c++)\n")
    # norm.cu runs whatever the build; the dispatcher calls mmvq.cu and mmq.cu (which calls its
    # instance) for a matrix multiplication only: a slim build leaves those three out
    (cuda / "norm.cu").write_text("int norm(int x) { return 2 * x; }\n")
    (cuda / "ggml-cuda.cu").write_text(
        "int mmvq(int x);\nint mmq(int x);\nint mul_mat(int x) { return x > 1 ? mmq(x) : mmvq(x); }\n"
        "int fattn(int x);\nint flash_attn_ext(int x) { return fattn(x); }\n")
    # attention: fattn.cu calls its template instance (FLASH_ATTN_EXT alone reaches it)
    (cuda / "fattn.cu").write_text("int fattn_case(int x);\nint fattn(int x) { return fattn_case(x); }\n")
    (cuda / "template-instances" / "fattn-tile-instance-dkq64.cu").write_text(
        "int fattn_case(int x) { return x; }\n")
    (cuda / "mmvq.cu").write_text("int mmvq(int x) { return x + 41; }\n")
    (cuda / "mmq.cu").write_text("int mmq_case(int x);\nint mmq(int x) { return mmq_case(x); }\n")
    (cuda / "template-instances" / "mmq-instance-q4_0.cu").write_text(
        "int mmq_case(int x) { return x + 40; }\n")
    (root / "tool.cpp").write_text(
        "#include <cstdio>\n#include <cstring>\nint norm(int); int mul_mat(int);\n"
        "int main(int argc, char** argv) {\n"
        "  bool mm = argc > 1 && std::strcmp(argv[1], \"MUL_MAT\") == 0;\n"
        "  std::printf(\"%d\\n\", mm ? mul_mat(2) : norm(21)); }\n")


def _build(root: Path, build: Path, args: list[str]) -> tuple[Path, str]:
    """Configure (when the arguments changed: a fresh cache, as in every kernelopt build) and
    build, through the core's own cmake_commands; the tool and what configure said."""
    keep = ("-DCMAKE_PROJECT", "-DKERNELOPT", "-DCMAKE_EXE_LINKER", "-DCMAKE_SHARED_LINKER")
    said = ""
    for command in cmake_commands(root, root, build, [a for a in args if a.startswith(keep)],
                                  targets=["test-backend-ops"], jobs=2):
        done = subprocess.run(command.argv, cwd=command.cwd, check=True, capture_output=True,
                              text=True)
        said += done.stdout + done.stderr
    return build / "test-backend-ops", said


@needs_cmake
def test_the_slim_build_runs_the_op_and_a_left_out_call_is_named(tmp_path: Path) -> None:
    root, build = tmp_path / "llama.cpp", tmp_path / "base-build"
    _project(root)
    tool, said = _build(root, build, cmake_args("90", False, False, slim.sources("NORM", ())))
    assert "kernelopt slim build: 4 files of ggml-cuda left out" in said
    assert "test-backend-ops linked without llama, llama-common (ggml alone)" in said
    objects = {p.name for p in build.rglob("*.o")}
    assert objects >= {"norm.cu.o", "ggml-cuda.cu.o"}
    assert not objects & {"mmq.cu.o", "mmvq.cu.o", "mmq-instance-q4_0.cu.o"}  # never compiled
    assert not objects & {"llama.cpp.o", "common.cpp.o"}  # nor what the tool never calls
    assert subprocess.run([tool, "NORM"], capture_output=True, text=True).stdout == "42\n"
    stopped = subprocess.run([tool, "MUL_MAT"], capture_output=True, text=True)
    assert stopped.returncode == 127
    problem = left_out_problem(stopped.stdout + stopped.stderr)
    assert problem is not None and "mmq" in problem and "--full-build" in problem

    # the same folder built full (MUL_MAT's run after NORM's) is configured afresh: whole again
    tool, said = _build(root, build, cmake_args("90", False, False))
    assert "kernelopt slim build" not in said
    objects = {p.name for p in build.rglob("*.o")}
    assert "mmq-instance-q4_0.cu.o" in objects and "llama.cpp.o" in objects  # linked as given
    assert subprocess.run([tool, "MUL_MAT"], capture_output=True, text=True).stdout == "42\n"

    # MUL_MAT's own run: all of ggml-cuda but attention's instances, the tool without libllama
    tool, said = _build(root, tmp_path / "matmul-build",
                        cmake_args("90", False, False, slim.sources("MUL_MAT", ())))
    assert "kernelopt slim build: 1 files of ggml-cuda left out" in said
    assert "linked without llama" in said
    objects = {p.name for p in (tmp_path / "matmul-build").rglob("*.o")}
    assert "mmq-instance-q4_0.cu.o" in objects and "llama.cpp.o" not in objects
    assert "fattn-tile-instance-dkq64.cu.o" not in objects and "fattn.cu.o" in objects
    assert subprocess.run([tool, "MUL_MAT"], capture_output=True, text=True).stdout == "42\n"


def _ninja_version() -> tuple[int, ...]:
    found = shutil.which("ninja")
    if found is None:
        return ()
    said = subprocess.run([found, "--version"], capture_output=True, text=True).stdout
    return tuple(int(part) for part in said.split(".")[:2] if part.isdigit())


@needs_cmake
@pytest.mark.skipif(_ninja_version() < (1, 12) or shutil.which("make") is None,
                    reason="needs ninja 1.12 or later (earlier ones run ready steps in file order) "
                    "and make")
def test_the_tools_own_object_is_the_first_step_ninja_runs(tmp_path: Path) -> None:
    """Ninja runs first the ready step with the longest chain of steps to the end; the tool's
    object has the shortest (object, link), so it was compiled after every ggml object. The
    script's stamps put it first; the same slim build without them (KERNELOPT_TOOL_FIRST=OFF)
    leaves it last; a Makefile build (no stamps) still builds."""
    root = tmp_path / "llama.cpp"
    _project(root)
    # ggml-cuda on a versioned ggml-base, as ggml's libraries are: longer chains (object,
    # library, symlink, ...) than the tool's
    (root / "ggml" / "base.cpp").write_text("int base(int x) { return x; }\n")
    (root / "ggml" / "CMakeLists.txt").write_text(
        "project(ggml CXX)\nadd_library(ggml-base SHARED base.cpp)\n"
        "set_target_properties(ggml-base PROPERTIES VERSION 0.1.0 SOVERSION 0)\n"
        "add_subdirectory(src/ggml-cuda)\ntarget_link_libraries(ggml-cuda PUBLIC ggml-base)\n"
        "add_library(ggml INTERFACE)\ntarget_link_libraries(ggml INTERFACE ggml-cuda)\n")
    slim_args = [a for a in cmake_args("90", False, False, slim.sources("NORM", ()))
                 if a.startswith(("-DCMAKE_PROJECT", "-DKERNELOPT", "-DCMAKE_EXE_LINKER",
                                  "-DCMAKE_SHARED_LINKER"))]

    def order(build: Path, *extra: str) -> tuple[str, list[str]]:
        """What configure said, and the objects in the order ninja would compile them."""
        [configure, _] = cmake_commands(root, root, build, [*slim_args, *extra],
                                        targets=["test-backend-ops"], jobs=1, generator="Ninja")
        said = subprocess.run(configure.argv, cwd=configure.cwd, check=True, capture_output=True,
                              text=True)
        dry = subprocess.run(["ninja", "-n", "-j1", "test-backend-ops"], cwd=build, check=True,
                             capture_output=True, text=True).stdout
        return said.stdout, [line.rsplit("/", 1)[-1] for line in dry.splitlines()
                             if "Building" in line]

    said, first = order(tmp_path / "slim")
    assert "kernelopt slim build: test-backend-ops.cpp compiled first" in said
    assert first[0] == "tool.cpp.o" and len(first) == 5, first  # + base, fattn, ggml-cuda, norm
    said, control = order(tmp_path / "control", "-DKERNELOPT_TOOL_FIRST=OFF")
    assert "compiled first" not in said
    assert control[-1] == "tool.cpp.o" and sorted(control) == sorted(first), control
    # a Makefile build: no stamps (another target's output has no rule there), and it builds
    made = tmp_path / "make"
    for command in cmake_commands(root, root, made, slim_args, targets=["test-backend-ops"],
                                  jobs=2, generator="Unix Makefiles"):
        done = subprocess.run(command.argv, cwd=command.cwd, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        assert "compiled first" not in done.stdout
    assert subprocess.run([made / "test-backend-ops", "NORM"], capture_output=True,
                          text=True).stdout == "42\n"
