"""The CUDA device-memory ledger (kernelopt_core/cuda_ledger.py, data/cuda_ledger.c) on a CPU:
the real library, built with the machine's C compiler, loaded by a program that plays the CUDA
driver's part (it calls InitializeInjection as cuInit does, then reports allocations, frees and
launches through the callback the library subscribed, with the parameter layouts of CUDA 13's
generated_cuda_meta.h) and a stand-in libcupti that hands that callback over. What CUDA itself
does (the runtime's cudaMalloc and <<<>>> reaching the driver's callbacks) the H200 showed:
`bash bench/h200_faults.sh cuda` rejected tests/faults/cuda/leak.cu in these words
(bench/results/2026-12-04-h200-faults/, ledger-cuda/)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kernelopt_core import cuda_ledger
from kernelopt_core.api import Tree
from kernelopt_core.process import run

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")

FAKE_CUPTI = r"""
typedef void (*callback)(void *, int, unsigned, const void *);
static callback saved;
int cuptiSubscribe(void **handle, callback f, void *data) {
    (void)data; saved = f; *handle = (void *)1; return 0;
}
int cuptiEnableCallback(unsigned on, void *handle, int domain, unsigned id) {
    (void)on; (void)handle; (void)domain; (void)id; return 0;
}
callback fake_cupti_callback(void) { return saved; }
"""

# cuInit's part: load the ledger, then CALLS calls of "allocate 64 MiB, launch" (freed unless
# the mode is "leak"), plus one workspace made after the first launch and kept ("lazy")
DRIVER = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
typedef void (*callback)(void *, int, unsigned, const void *);
typedef struct { int site; const char *name; const void *params; void *ret; const char *symbol;
                 void *context; unsigned uid; unsigned long long *corr; unsigned corr_id; } data_t;
typedef struct { unsigned long long *dptr; size_t bytes; } alloc_t;
static callback cb;
static void call(unsigned cbid, int site, const void *params) {
    int ok = 0;
    data_t d = {site, "", params, &ok, 0, 0, 0, 0, 0};
    cb(0, 1, cbid, &d);
}
int main(int argc, char **argv) {
    void *ledger = dlopen(getenv("CUDA_INJECTION64_PATH"), RTLD_NOW);
    int (*init)(void) = (int (*)(void))dlsym(ledger, "InitializeInjection");
    if (!init || !init()) return 3;
    callback (*get)(void) = (callback (*)(void))dlsym(RTLD_DEFAULT, "fake_cupti_callback");
    cb = get();
    const char *mode = argv[1];
    int calls = atoi(argv[2]);
    unsigned long long input = 0x7f0000000000ull;
    alloc_t in = {&input, 256u << 20};
    call(243, 1, &in);  /* the test's input, before any launch, never freed */
    for (int i = 0; i < calls; ++i) {
        unsigned long long p = 0x10000000ull * (i + 1);
        alloc_t a = {&p, 64u << 20};
        call(243, 1, &a);  /* cuMemAlloc_v2, exit */
        call(307, 0, 0);   /* cuLaunchKernel, enter */
        if (strcmp(mode, "leak") != 0 && strcmp(mode, "fail") != 0)
            call(245, 1, &p);  /* cuMemFree_v2 */
        if (i == 0 && strcmp(mode, "lazy") == 0) {
            unsigned long long w = 0x6f0000000000ull;
            alloc_t ws = {&w, 512u << 20};
            call(243, 1, &ws);
        }
    }
    if (strcmp(mode, "fail") == 0) {  /* a wrong result: it stops, its buffers unfreed */
        printf("rowsum_test: MISMATCH at case 6\n");
        return 1;
    }
    printf("rowsum_test: 28 cases OK\n");  /* buffered: the ledger's exit must flush it */
    return 0;
}
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("ledger")
    (d / "cupti.c").write_text(FAKE_CUPTI)
    (d / "driver.c").write_text(DRIVER)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(d / "libcupti.so"), str(d / "cupti.c")],
                   check=True)
    subprocess.run(["cc", "-o", str(d / "driver"), str(d / "driver.c"), "-ldl"], check=True)
    return {"dir": d, "cupti": d / "libcupti.so", "driver": d / "driver"}


def _trees(root: Path) -> tuple[Tree, Tree]:
    return (Tree("baseline", root / "base-src", root / "base-build"),
            Tree("candidate", root / "cand-src", root / "cand-build"))


def test_a_leak_per_call_fails_the_test_in_its_own_words(built: dict[str, Path], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cuda_ledger.CUPTI_ENV, str(built["cupti"]))
    baseline, candidate = _trees(tmp_path)
    make = cuda_ledger.build(baseline)
    assert make is not None and make.label == "CUDA memory ledger"
    assert run(make).ok and cuda_ledger.library(baseline).is_file()
    assert cuda_ledger.build(candidate) is None  # once per workspace: the trees share it

    def test(tree: Tree, mode: str, seed: int = 1) -> tuple[int, str, str]:
        command = cuda_ledger.watch(
            cuda_ledger.Command((str(built["driver"]), mode, "28"), tmp_path), tree, seed)
        result = run(command)
        return result.returncode, result.stdout, result.stderr

    assert test(baseline, "clean") == (0, "rowsum_test: 28 cases OK\n", "")
    line = cuda_ledger.record(baseline, 1).read_text()
    assert "launches=28 allocations=29 " in line and "late_unfreed_allocations=0 " in line
    assert f"unfreed_bytes={256 << 20} " in line  # the test's own input, held: not late
    code, out, err = test(candidate, "leak")
    assert code == 1 and out == "rowsum_test: 28 cases OK\n"  # its output flushed first
    assert err.startswith("error: device memory leak: 27 device allocations (1728.0 MiB) made "
                          "after the first kernel launch were still held at exit, the "
                          "baseline's test held 0 (0.0 MiB); 28 kernel launches, about 61.7 MiB")
    from kernelopt_core.gates.builtin import failing_line

    assert failing_line(out + err).startswith("error: device memory leak")
    # the same code, correct: passes; one workspace kept after the first launch: not a leak
    assert test(candidate, "clean")[0] == 0 and test(candidate, "lazy")[0] == 0
    # each check's record is its own (the last one's lines only)
    assert len(cuda_ledger.record(candidate, 1).read_text().splitlines()) == 1
    # a test that failed on its own keeps its own words (its buffers left unfreed)
    code, out, err = test(candidate, "fail")
    assert code == 1 and "MISMATCH" in out and "leak" not in err
    # no baseline record for this seed (the baseline's test never ran on it): unjudged
    assert test(candidate, "leak", seed=2)[0] == 0


def test_nothing_is_watched_without_cupti_or_a_compiler(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cuda_ledger.CUPTI_ENV, str(tmp_path / "missing.so"))
    baseline, _ = _trees(tmp_path)
    assert cuda_ledger.build(baseline) is None
    command = cuda_ledger.Command(("true",), tmp_path)
    assert cuda_ledger.watch(command, baseline, 1) == command  # no library: unchanged


def test_a_ledger_that_does_not_build_is_not_tried_again(built: dict[str, Path], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cuda_ledger.CUPTI_ENV, str(built["cupti"]))
    monkeypatch.setenv("CC", "false")  # a compiler that fails
    baseline, candidate = _trees(tmp_path)
    result = run(cuda_ledger.build(baseline))  # type: ignore[arg-type]
    assert result.ok and "did not build" in result.stdout  # the target's build goes on
    assert "error" not in result.stdout.lower()  # the compiler's words are the ledger's file's
    assert not cuda_ledger.library(baseline).is_file()
    assert cuda_ledger.build(candidate) is None  # the failure is kept: not retried per build


def test_the_ledger_can_be_turned_off(built: dict[str, Path], tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """KERNELOPT_NO_CUDA_LEDGER=1: for a test that profiles itself through CUPTI (one
    subscriber per process)."""
    monkeypatch.setenv(cuda_ledger.CUPTI_ENV, str(built["cupti"]))
    baseline, _ = _trees(tmp_path)
    assert run(cuda_ledger.build(baseline)).ok  # type: ignore[arg-type]
    command = cuda_ledger.Command(("true",), tmp_path)
    assert "CUDA_INJECTION64_PATH" in cuda_ledger.watch(command, baseline, 1).env
    monkeypatch.setenv(cuda_ledger.OFF_ENV, "1")
    assert cuda_ledger.watch(command, baseline, 1) == command
    assert cuda_ledger.build(_trees(tmp_path / "other")[0]) is None


def test_the_cmake_backend_watches_its_cuda_tests(built: dict[str, Path], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelopt_cmake.backend import CMakeBackend

    from kernelopt_core.settings import Settings

    monkeypatch.setenv(cuda_ledger.CUPTI_ENV, str(built["cupti"]))
    root = Path(__file__).parent.parent / "examples"
    backend = CMakeBackend()
    [cuda] = backend.discover(root / "cmake-cuda", Settings.make(state_root=tmp_path / "s"))
    [cpu] = backend.discover(root / "cmake-cpu", Settings.make(state_root=tmp_path / "s"))
    baseline, candidate = _trees(tmp_path)
    first = backend.build(cuda, baseline)[0]
    assert first.label == "CUDA memory ledger" and run(first).ok
    assert backend.build(cuda, candidate)[0].label != "CUDA memory ledger"  # built already
    assert all(c.label != "CUDA memory ledger" for c in backend.build(cpu, baseline))
    watched = backend.check(cuda, candidate, 7).env
    assert watched["CUDA_INJECTION64_PATH"] == str(cuda_ledger.library(candidate))
    assert watched["KERNELOPT_CUDA_LEDGER_BASELINE"].endswith("cuda-ledger/baseline-seed7.txt")
    assert "CUDA_INJECTION64_PATH" not in backend.check(cpu, candidate, 7).env


def test_the_table_keeps_many_allocations_through_churn(tmp_path: Path) -> None:
    """The ledger's own table, driven directly: 2 MiB-aligned pointers (device allocations
    share their low bits), many live at once, freed and made again; a double free and an
    unknown pointer change nothing."""
    import ctypes

    lib_path = tmp_path / "ledger.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", str(lib_path), str(cuda_ledger.SOURCE),
                    "-ldl", "-lpthread"], check=True)
    lib = ctypes.CDLL(str(lib_path))
    lib.ko_ledger_alloc.argtypes = [ctypes.c_ulonglong, ctypes.c_size_t]
    lib.ko_ledger_free.argtypes = [ctypes.c_ulonglong]
    lib.ko_ledger_finish.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int]
    pointers = [(i + 1) << 21 for i in range(6000)]
    for p in pointers[:100]:  # before the first launch
        lib.ko_ledger_alloc(p, 4096)
    lib.ko_ledger_launch()
    for p in pointers[100:]:
        lib.ko_ledger_alloc(p, 4096)
    for p in pointers[:5000]:  # churn: most freed, then made again and freed
        lib.ko_ledger_free(p)
    lib.ko_ledger_free(pointers[0])  # twice
    lib.ko_ledger_free(12345)  # never allocated
    for p in pointers[:3000]:
        lib.ko_ledger_alloc(p, 1)
        lib.ko_ledger_free(p)
    record = tmp_path / "record.txt"
    assert lib.ko_ledger_finish(str(record).encode(), None, 0) == 0
    line = record.read_text()
    assert "launches=1 allocations=9000 " in line and "unfreed_allocations=1000 " in line
    assert "late_unfreed_allocations=1000 " in line and f"late_unfreed_bytes={1000 * 4096} " in line
    assert f"peak_bytes={6000 * 4096}" in line
