"""The llama.cpp backend's GPU fault corpus (issue 36), generated from the tree's own softmax.cu.

  python3 bench/llamacpp_faults.py TREE OUTDIR

writes, from TREE/ggml/src/ggml-cuda/softmax.cu, whole replacements of that file for
``--candidate ggml/src/ggml-cuda/softmax.cu=OUTDIR/<kind>.cu`` (bench/h200_faults.sh llamacpp):

* ``clean.cu``: a correct faster variant, CUDA_SOFT_MAX_BLOCK_SIZE 64. The define lives in
  softmax.cuh, and softmax.cu pins it (``static_assert(... == 1024, "These values need to be
  adjusted.")``, and the kernels' template block size ``(ncols > 1024 ? 1024 : ncols)``), so
  the variant redefines it after the include and moves both pins to 64: what the tuner's knob
  writes (kernelopt_llamacpp/tuning.py), in one file. The tuner's 64 candidate passed the check
  and screened 3.42x on the H200 at the model's node [512,512,32,1] (2026-12-04).
* ``<kind>.cu`` for each kind of KINDS: the clean variant plus a few lines at anchors found in
  the real file (a missing anchor stops with the anchor's name), with the header lines
  ``// kind:``, ``// expect:``, ``// reason:`` that bench/faults_summary.py reads, as it does
  the CUDA corpus's (tests/faults/cuda). Faults sit on the clean variant, as the CUDA corpus's
  sit on the fast knobs: a fault that slips through then passes every gate and shows, instead
  of being rejected for being slow. The leak sits on block size 128, faster than the
  baseline but not the clean variant: were it missed, the verdict would stay the clean one.
* ``expect.json``: kind -> {"expect": gate, "reason": substring}, the same as the headers.

Each fault is in the kernel the pinned SOFT_MAX case dispatches (``soft_max_f32``) or in the
host function every SOFT_MAX launch goes through (``ggml_cuda_op_soft_max``).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

SOFTMAX = "ggml/src/ggml-cuda/softmax.cu"
CLEAN_BLOCK = 64  # screened 3.42x on the H200 at [512,512,32,1]
LEAK_BLOCK = 128  # screened 2.74x there: faster than the baseline, slower than the clean one


class AnchorMissing(RuntimeError):
    pass


# Where lines go, each found in the real file (a regex that must match exactly once).
ANCHORS = {
    # after the op's own header: the block size is redefined, and includes are added, here
    "include": re.compile(r'^#include "softmax\.cuh"[^\n]*\n', re.M),
    # the first statement after tid in the kernel the pinned case dispatches
    "kernel": re.compile(r"static __global__ void soft_max_f32\((?:(?!\n}\n).)*?\n"
                         r"[ \t]*const int tid\s*=\s*threadIdx\.x;[^\n]*\n", re.S),
    # the first line of the host function every SOFT_MAX launch goes through
    "host": re.compile(r"^void ggml_cuda_op_soft_max\(\s*ggml_backend_cuda_context\s*&\s*ctx\s*,"
                       r"\s*ggml_tensor\s*\*\s*dst\s*\)\s*\{[^\n]*\n", re.M),
}
# The two places softmax.cu pins CUDA_SOFT_MAX_BLOCK_SIZE's value (see the module docstring).
PINS = {
    "static_assert": re.compile(r"(static_assert\(\s*CUDA_SOFT_MAX_BLOCK_SIZE\s*==\s*)(\d+)\b"),
    "template block clamp": re.compile(r"(\(\s*ncols\s*>\s*)(\d+)(\s*\?\s*)(\d+)(\s*:\s*ncols\s*\))"),
}


def _find(text: str, name: str, pattern: re.Pattern[str]) -> re.Match[str]:
    found = list(pattern.finditer(text))
    if len(found) != 1:
        raise AnchorMissing(f"{SOFTMAX}: the {name} anchor ({pattern.pattern!r}) matched "
                            f"{len(found)} times, not once: the file's layout changed; update "
                            "bench/llamacpp_faults.py")
    return found[0]


def insert(text: str, anchor: str, lines: str) -> str:
    """``lines`` (whole lines) right after the anchor's match."""
    end = _find(text, anchor, ANCHORS[anchor]).end()
    return text[:end] + lines + text[end:]


def with_block_size(text: str, block: int) -> str:
    """softmax.cu with CUDA_SOFT_MAX_BLOCK_SIZE ``block``: redefined after the include (the
    define is softmax.cuh's), and both of softmax.cu's pins moved with it."""
    assert_ = _find(text, "static_assert", PINS["static_assert"])
    value = assert_.group(2)
    clamp = _find(text, "template block clamp", PINS["template block clamp"])
    if clamp.group(2) != value or clamp.group(4) != value:
        raise AnchorMissing(f"{SOFTMAX}: the template block clamp {clamp.group(0)!r} does not "
                            f"clamp to the asserted block size {value}")
    text = (text[:clamp.start()] + f"{clamp.group(1)}{block}{clamp.group(3)}{block}{clamp.group(5)}"
            + text[clamp.end():])
    assert_ = _find(text, "static_assert", PINS["static_assert"])
    text = text[:assert_.start()] + f"{assert_.group(1)}{block}" + text[assert_.end():]
    return insert(text, "include", f"#undef CUDA_SOFT_MAX_BLOCK_SIZE\n"
                                   f"#define CUDA_SOFT_MAX_BLOCK_SIZE {block}\n")


# kind -> (expect, reason, why: the header's prose, [(anchor, lines)], block size it sits on)
FAULTS: dict[str, tuple[str, str, str, list[tuple[str, str]], int]] = {
    "illegal_address": (
        "correctness", "illegal memory access",
        "A write 2^40 floats past dst from one thread: the first launch hits an unmapped address,\n"
        "a sticky error; ggml's CUDA_CHECK aborts test-backend-ops with the driver's words.",
        [("kernel", "    if (tid == 0 && blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0) {\n"
                    "        dst[int64_t(1) << 40] = 0.0f;  // 4 TiB past dst\n"
                    "    }\n")], CLEAN_BLOCK),
    "hang": (
        "correctness", "timed out",
        "Every thread spins on a __device__ flag no one sets, read through a volatile pointer\n"
        "(a load from global memory per turn): the first launch never finishes, and the check is\n"
        "killed at its timeout (the tool dies with the wrapper: PR_SET_PDEATHSIG). Two spins\n"
        "that did not hang on the H200 (2026-12-04): a static __shared__ flag failed the launch\n"
        "set-up with `invalid argument` (soft_max_f32 opts in to the most dynamic shared memory\n"
        "a block may have, so 4 more static bytes do not fit), and a volatile local was elided\n"
        "(the candidate ran correct at full speed).",
        [("include", "static __device__ int hang_flag_never_set;  // zero: nothing writes it\n"),
         ("kernel", "    while (*(volatile int *) &hang_flag_never_set == 0) {\n"
                    "    }\n")], CLEAN_BLOCK),
    "oom": (
        "correctness", "out of memory",
        "The first call cudaMallocs 1 GiB, then ever smaller chunks down to 1 MiB, until the\n"
        "allocator refuses, and keeps it all: the pending error fails ggml's check after the op.",
        [("host", "    static bool hoarded = false;\n"
                  "    if (!hoarded) {\n"
                  "        hoarded = true;\n"
                  "        for (size_t chunk = size_t(1) << 30; chunk >= (size_t(1) << 20); chunk >>= 1) {\n"
                  "            void * held = nullptr;\n"
                  "            while (cudaMalloc(&held, chunk) == cudaSuccess) {\n"
                  "            }\n"
                  "        }\n"
                  "    }\n")], CLEAN_BLOCK),
    "trap": (
        "correctness", "device-side assert",
        "A failed device assert (NDEBUG undone so the Release build keeps it): the first launch\n"
        "stops with `device-side assert triggered`, sticky like an illegal address.",
        [("include", "#undef NDEBUG  // keep assert() in the Release build\n#include <cassert>\n"),
         ("kernel", '    assert(tid < 0 && "a thread index is never negative");\n')], CLEAN_BLOCK),
    "leak": (
        "correctness", "device memory leak",
        "8 MiB of device memory cudaMalloc'd per call, never freed. test-backend-ops is a process\n"
        "per command, so the leak would end with it; the check runs it with the CUDA ledger\n"
        "(kernelopt_core/cuda_ledger.py), which fails a test that exits holding more allocations\n"
        "made after its first launch than the baseline's. Block size 128: faster than the\n"
        "baseline, slower than the clean variant, so were it missed the verdict stays clean.",
        [("host", "    void * scratch = nullptr;\n"
                  "    if (cudaMalloc(&scratch, size_t(8) << 20) != cudaSuccess) {\n"
                  "        (void) cudaGetLastError();  // a refused leak is no error of the op's\n"
                  "    }\n")], LEAK_BLOCK),
    "stray_child": (
        "correctness", "left processes running",
        "The first call leaves a copy of the process sleeping 600 s, through a raw clone(2) the\n"
        "policy gate's names do not cover (tests/faults/cpu/stray_child.cpp). The tbo wrapper\n"
        "runs test-backend-ops as code under test (run_process(..., under_test=True)): what it\n"
        "leaves running in its session is killed and fails the check.",
        [("include", "#include <csignal>\n#include <sys/syscall.h>\n#include <unistd.h>\n"),
         ("host", "    static bool started = false;\n"
                  "    if (!started) {\n"
                  "        started = true;\n"
                  "        if (syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0) == 0) {\n"
                  "            sleep(600);\n"
                  "            syscall(SYS_exit_group, 0);\n"
                  "        }\n"
                  "    }\n")], CLEAN_BLOCK),
    "outside_write": (
        "workspace", "wrote outside its workspace",
        "The first call writes kernelopt_fault_outside_write.txt into each of the four directories\n"
        "above the tool's working directory (the candidate's source tree: its workspace, work/,\n"
        "the state root, the one above) and into $HOME; h200_faults.sh lists and removes them.",
        [("include", "#include <cstdlib>\n#include <string>\n#include <fcntl.h>\n#include <unistd.h>\n"),
         ("host", "    static bool written = false;\n"
                  "    if (!written) {\n"
                  "        written = true;\n"
                  "        char here[4096];\n"
                  "        std::string dir = getcwd(here, sizeof here) ? here : \"\";\n"
                  "        for (int level = 0; level <= 4; ++level) {\n"
                  "            std::string target;\n"
                  "            if (level < 4) {\n"
                  "                const size_t slash = dir.rfind('/');\n"
                  "                if (slash == std::string::npos || slash == 0) continue;\n"
                  "                dir.resize(slash);\n"
                  "                target = dir;\n"
                  "            } else if (const char * home = std::getenv(\"HOME\")) {\n"
                  "                target = home;\n"
                  "            } else {\n"
                  "                continue;\n"
                  "            }\n"
                  "            const std::string path = target + \"/kernelopt_fault_outside_write.txt\";\n"
                  "            const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);\n"
                  "            if (fd < 0) continue;\n"
                  "            const char note[] = \"written by a candidate\\n\";\n"
                  "            if (::write(fd, note, sizeof note - 1) < 0) {\n"
                  "            }\n"
                  "            ::close(fd);\n"
                  "        }\n"
                  "    }\n")], CLEAN_BLOCK),
    "no_result": (
        "correctness", "nothing was checked",
        "stdout pointed at /dev/null by a static initializer of libggml-cuda (before main): the\n"
        "tool prints no case line. test-backend-ops is the check program too, and the wrapper\n"
        "demands case lines (`tbo check`), so the check fails before any bench: no SOFT_MAX case\n"
        "ran OK, nothing was checked. (/dev/null, not a bare close: fd 1 must not be reused.)",
        [("include", "#include <fcntl.h>\n#include <unistd.h>\n"
                     "[[maybe_unused]] static const int stdout_silenced =\n"
                     "    (close(1), open(\"/dev/null\", O_WRONLY));  // runs before main()\n")],
        CLEAN_BLOCK),
}
KINDS = tuple(FAULTS)


def header(kind: str) -> str:
    expect, reason, why, _, _ = FAULTS[kind]
    prose = "".join(f"// {line}\n" for line in why.splitlines())
    return f"// kind: {kind}\n// expect: {expect}\n// reason: {reason}\n{prose}"


def variants(original: str) -> dict[str, str]:
    """file name -> content: clean.cu and one <kind>.cu per kind."""
    out = {"clean.cu": with_block_size(original, CLEAN_BLOCK)}
    for kind, (_, _, _, edits, block) in FAULTS.items():
        text = with_block_size(original, block)
        for anchor, lines in edits:
            text = insert(text, anchor, lines)
        out[f"{kind}.cu"] = header(kind) + text
    return out


def expectations() -> dict[str, dict[str, str]]:
    return {kind: {"expect": FAULTS[kind][0], "reason": FAULTS[kind][1]} for kind in KINDS}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.split("\n\n", 2)[1], file=sys.stderr)
        return 2
    tree, outdir = Path(argv[0]), Path(argv[1])
    source = tree / SOFTMAX
    if not source.is_file():
        print(f"llamacpp_faults: {source} is not a file", file=sys.stderr)
        return 2
    try:
        written = variants(source.read_text(encoding="utf-8"))
    except AnchorMissing as exc:
        print(f"llamacpp_faults: {exc}", file=sys.stderr)
        return 1
    outdir.mkdir(parents=True, exist_ok=True)
    for name, text in written.items():
        (outdir / name).write_text(text, encoding="utf-8")
    (outdir / "expect.json").write_text(json.dumps(expectations(), indent=1) + "\n")
    print(f"llamacpp_faults: {len(written)} files in {outdir}: {', '.join(sorted(written))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
