"""A CUDA test's device memory, watched: a leak per call fails the test (docs/faults.md).

A process per command contains a leak (it ends with the process), so a candidate that
allocates device memory on every call and never frees it passed every gate, and would grow
without bound in the long-running program it is meant for. The ledger (data/cuda_ledger.c)
is a library the CUDA driver loads into the test through ``CUDA_INJECTION64_PATH``: it keeps
every device allocation until it is freed and counts kernel launches (CUPTI's driver-API
callbacks), and at exit compares the allocations made after the first launch and still held
with the baseline's same test. More than a few beyond the baseline's, in a test that exited 0,
the test prints why and exits 1: the correctness gate rejects it in the fault's own words.

A backend of CUDA code asks for it with two calls, both of the public api:
``cuda_ledger_build(tree)`` among its build commands (the library, once per workspace: a C
compiler and CUPTI found, else nothing is watched) and ``cuda_ledger_watch(command, tree,
seed)`` around its check command. What it cannot see: memory freed only by a context's end
(cudaDeviceReset), allocations outside the driver's allocators (a library's own pool,
cuMemCreate/cuMemMap). What it cannot tell apart: a bounded cache kept per shape, over a
test's many shapes, from a leak per call."""

from __future__ import annotations

import functools
import glob
import hashlib
import os
import shutil
import sys
from pathlib import Path

from kernelopt_core.backend_kit import find_nvcc
from kernelopt_core.target import Command, Tree

SOURCE = Path(__file__).parent / "data" / "cuda_ledger.c"
FOLDER = "cuda-ledger"  # beside the workspace's trees: the baseline's record is the candidates'
CUPTI_ENV = "KERNELOPT_CUPTI"  # a libcupti to use instead of the one found
# set to 1: no ledger (it takes CUPTI's one subscriber: a test that profiles itself through
# CUPTI, torch.profiler say, would find it taken)
OFF_ENV = "KERNELOPT_NO_CUDA_LEDGER"


def cupti_library() -> Path | None:
    """libcupti from $KERNELOPT_CUPTI, the CUDA toolkit ($CUDA_HOME, $CUDA_PATH, nvcc's,
    /usr/local/cuda) or a pip-installed nvidia-cuda-cupti; None when none is found."""
    given = os.environ.get(CUPTI_ENV)
    if given:
        return Path(given) if Path(given).is_file() else None
    nvcc = find_nvcc()  # the kit's: on PATH, else the toolkit's default place
    homes = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"),
             str(Path(nvcc).resolve().parent.parent) if nvcc else None]
    patterns = [f"{h}/{sub}/libcupti.so*" for h in homes if h
                for sub in ("extras/CUPTI/lib64", "lib64", "targets/*/lib")]
    patterns += [f"{p}/nvidia/*/lib/libcupti.so*" for p in sys.path if p]
    for pattern in patterns:
        found = sorted(glob.glob(pattern))
        if found:
            return Path(found[0])
    return None


def _off() -> bool:
    return os.environ.get(OFF_ENV, "").strip().lower() in ("1", "yes", "true", "on")


@functools.cache
def _source_digest() -> str:  # read once: every build and check asks for the library's name
    return hashlib.sha1(SOURCE.read_bytes()).hexdigest()[:10]


def library(tree: Tree) -> Path:
    """Where the workspace's ledger library is (named by its source, so a new one rebuilds)."""
    return tree.src.parent / FOLDER / f"ledger-{_source_digest()}.so"


def build(tree: Tree, timeout_s: float = 120.0) -> Command | None:
    """The command that builds the ledger library for this workspace, or None: built already,
    or no C compiler or CUPTI here (then checks run unwatched). A compiler that fails says so
    in the build log and the build goes on: the ledger is kernelopt's, not the target's."""
    out = library(tree)
    failed = out.with_suffix(".failed")  # its compiler's output: not tried again
    if _off() or out.is_file() or failed.is_file():
        return None
    compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    cupti = cupti_library()
    if compiler is None or cupti is None:
        return None
    out.parent.mkdir(parents=True, exist_ok=True)
    # the compiler's words go to a file of the ledger's, not the build log (whose failing line
    # a real build failure's reason is read from); a partial library is never loaded
    script = ('"$@" -o "$KO_OUT.$$.part" > "$KO_OUT.log" 2>&1 && mv -f "$KO_OUT.$$.part" '
              '"$KO_OUT" || { mv -f "$KO_OUT.log" "$KO_FAILED"; echo "kernelopt: the CUDA '
              'memory ledger did not build ($KO_FAILED): device memory is not watched"; }')
    return Command(("sh", "-c", script, "sh", compiler, "-shared", "-fPIC", "-O2",
                    f'-DKO_CUPTI_PATH="{cupti}"', str(SOURCE), "-ldl", "-lpthread"),
                   cwd=out.parent, env={"KO_OUT": str(out), "KO_FAILED": str(failed)},
                   timeout_s=timeout_s, label="CUDA memory ledger")


def record(tree: Tree, seed: int | str) -> Path:
    """The ledger's lines for one tree's test on one seed (a line per CUDA process)."""
    return tree.src.parent / FOLDER / f"{tree.role}-seed{seed}.txt"


def watch(command: Command, tree: Tree, seed: int | str) -> Command:
    """``command`` (a CUDA test) with the ledger loaded, when it is built: the baseline's
    test writes the record a candidate's is held to. Called as the check is about to run, it
    starts that check's record afresh (the library appends a line per CUDA process)."""
    lib = library(tree)
    if not lib.is_file() or _off():
        return command
    record(tree, seed).unlink(missing_ok=True)
    baseline = tree.src.parent / FOLDER / f"baseline-seed{seed}.txt"
    env = {"CUDA_INJECTION64_PATH": str(lib), "KERNELOPT_CUDA_LEDGER": str(record(tree, seed))}
    if tree.role != "baseline":
        env["KERNELOPT_CUDA_LEDGER_BASELINE"] = str(baseline)
    return Command(command.argv, command.cwd, {**command.env, **env}, command.timeout_s,
                   command.label)
