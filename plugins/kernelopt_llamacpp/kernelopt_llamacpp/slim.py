"""An op's slim build (docs/llamacpp.md): ggml-cuda without the files only matrix
multiplications and attention call, and test-backend-ops without libllama and llama-common
(it needs ggml alone), so a fresh machine reaches its first candidate sooner.

backend.cmake_args adds ``slim_args`` to an op's configure; slim_build.cmake, included right
after ggml's ``project()``, drops the files from the ggml-cuda target; tbo_output names the
loader's error if an op reaches them after all."""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

SCRIPT = Path(__file__).with_name("slim_build.cmake")

# What an op's slim build leaves out of ggml-cuda (globs under ggml/src/ggml-cuda/, no .cu): the
# matrix multiplications' translation units and the template instances of mul_mat_q, mul_mat_f
# and flash attention. The dispatcher (ggml-cuda.cu) calls them directly, for MUL_MAT and
# MUL_MAT_ID nodes only (fused or not); mmvq.cu and mmvf.cu alone took 72 s and 58 s of a 95 s
# build on an H100 (bench/results/2026-12-06-h100-llamacpp-fresh).
LEFT_OUT = ("template-instances/mmq*", "template-instances/mmf*", "template-instances/fattn*",
            "mmq", "mmf", "mmvq", "mmvf", "mmid")
MATMULS = frozenset({"MUL_MAT", "MUL_MAT_ID"})
ATTENTION = "FLASH_ATTN_EXT"  # reaches everything LEFT_OUT: its build leaves out nothing
# A matrix multiplication's build still leaves out attention's template instances: only
# FLASH_ATTN_EXT reaches them (fattn.cu, kept, calls them); they were 37 files, 377 of MUL_MAT's
# 2486 compile-seconds on an H200 (bench/results/2026-12-06-h200-llamacpp-lean).
MATMUL_LEFT_OUT = ("template-instances/fattn*",)


def sources(op: str, files: tuple[str, ...]) -> tuple[str, ...]:
    """What an op's build leaves out (LEFT_OUT): nothing for attention, attention's instances
    for a matrix multiplication, else everything; never what the op's own files are, or
    belong to."""
    if op == ATTENTION:
        return ()
    own = {Path(f).stem for f in files}
    return tuple(glob for glob in (MATMUL_LEFT_OUT if op in MATMULS else LEFT_OUT)
                 if not any(fnmatch.fnmatchcase(name, Path(glob).name) for name in own))


def regex(globs: tuple[str, ...]) -> str:
    """The CMake regex alternation of ``globs`` (``template-instances/mmq*``, ``mmvq``): paths
    under ggml-cuda without their ``.cu`` (letters, digits, ``-_/`` and ``*``: literal in a
    regex but for the ``*``)."""
    return "|".join(g.replace("*", "[^/]*") for g in globs)


def args(globs: tuple[str, ...]) -> list[str]:
    """The configure arguments of a slim build. The calls into the left-out files stay
    undefined in libggml-cuda.so: the tool links with --allow-shlib-undefined, and both are
    linked ``-z lazy`` (a toolchain that binds at load would stop every op), the user's LDFLAGS
    kept. A full build passes none of these: a change of arguments configures afresh
    (cmake_support.needs_configure), so nothing of a slim configure stays."""
    include = [f"-DCMAKE_PROJECT_ggml_INCLUDE={SCRIPT}", f"-DKERNELOPT_SLIM_EXCLUDE={regex(globs)}"]
    if not globs:  # a matrix multiplication's: the tool's lean link only, nothing undefined
        return include
    ldflags = os.environ.get("LDFLAGS", "").strip()
    lazy = f"{ldflags} -Wl,-z,lazy".strip()
    return [*include, f"-DCMAKE_EXE_LINKER_FLAGS={lazy} -Wl,--allow-shlib-undefined",
            f"-DCMAKE_SHARED_LINKER_FLAGS={lazy}"]


def label(globs: tuple[str, ...]) -> str:
    """The build step's words on the console."""
    lean = "test-backend-ops without libllama and llama-common"
    if not globs:
        return f"build with {lean}"
    files = [f"{g}.cu" for g in globs if "/" not in g]
    families = [g.split("/")[1].rstrip("*") for g in globs if "/" in g]
    left_out = "; ".join(filter(None, (", ".join(files), f"the {', '.join(families)} template "
                                       "instances" if families else "")))
    return f"build without the ggml-cuda files the op never calls ({left_out}), {lean}"
