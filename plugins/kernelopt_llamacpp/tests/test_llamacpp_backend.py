"""Detection, discovery, prerequisites and build orchestration of the llamacpp backend."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import attrs
import pytest
from kernelopt_llamacpp import slim as targets_slim
from kernelopt_llamacpp import targets
from kernelopt_llamacpp.backend import LlamaCppBackend
from kernelopt_llamacpp.slim import label
from llamacpp_fixture import copy_fixture, settings_with

from kernelopt_core.errors import PrerequisiteError, UsageError
from kernelopt_core.settings import Settings
from kernelopt_core.target import Tree
from kernelopt_core.workspace import materialize, snapshot


def test_detect(repo: Path, tmp_path: Path):
    backend = LlamaCppBackend()
    assert backend.detect(repo) == 0.9
    assert backend.detect(tmp_path) == 0.0


def test_discover_one_target_for_the_op(repo: Path, tmp_path: Path):
    [target] = LlamaCppBackend().discover(repo, settings_with(tmp_path / ".kernelopt", op="SOFT_MAX"))
    assert target.name == "SOFT_MAX" and target.backend == "llamacpp"
    assert target.editable == ("ggml/src/ggml-cuda/softmax.cu", "ggml/src/ggml-cuda/softmax.cuh")
    assert "tests/test-backend-ops.cpp" in target.contract
    assert [k.name for k in target.knobs] == ["CUDA_SOFT_MAX_BLOCK_SIZE"]
    assert target.bench.format == "json"  # tbo.bench_line: time, case timed, bytes
    assert LlamaCppBackend().engine(target, None) is None  # type: ignore[arg-type]
    assert target.data.standins is True
    # --target OP works too
    [same] = LlamaCppBackend().discover(repo, Settings(state_root=tmp_path / "s", target="SOFT_MAX"))
    assert same.name == "SOFT_MAX"
    # the tool takes -j (as upstream's does since late 2025): the check runs its parallel workers
    assert target.data.test_jobs == max(1, min(16, len(os.sched_getaffinity(0))))
    tree = Tree("candidate", repo, tmp_path / "build")
    argv = LlamaCppBackend().check(target, tree, 1).argv
    assert (argv[argv.index("--jobs") + 1] == str(target.data.test_jobs)) if target.data.test_jobs > 1 \
        else "--jobs" not in argv
    # every seed's run at once (tbo check --runs), and with more CPUs than the runs keep busy
    # each run split over processes by the test set's case list (--shards, --cases)
    assert target.data.cases is not None and target.data.cases.name.endswith(".cases.json")
    sixteen = attrs.evolve(target, data=attrs.evolve(target.data, test_jobs=16))

    def flags(t, seeds):  # type: ignore[no-untyped-def]
        argv = LlamaCppBackend().check_seeds(t, tree, seeds).argv
        return {f: argv[argv.index(f) + 1] for f in ("--runs", "--shards", "--cases", "--jobs")
                if f in argv}

    assert flags(sixteen, (1, 2, 3)) == {"--runs": "3", "--shards": "2", "--jobs": "4",
                                         "--cases": str(target.data.cases)}
    assert flags(sixteen, (1,))["--shards"] == "4"
    two = attrs.evolve(target, data=attrs.evolve(target.data, test_jobs=2))
    assert flags(two, (1, 2, 3)) == {"--runs": "3", "--shards": "1", "--cases": str(target.data.cases)}
    unlisted = attrs.evolve(target, data=attrs.evolve(target.data, test_jobs=16, cases=None))
    assert flags(unlisted, (1, 2, 3)) == {"--runs": "3", "--jobs": "4"}
    tool = repo / "tests" / "test-backend-ops.cpp"
    tool.write_text(tool.read_text().replace('strcmp(argv[i], "-j")', 'strcmp(argv[i], "-J")'))
    [older] = LlamaCppBackend().discover(repo, settings_with(tmp_path / ".kernelopt", op="SOFT_MAX"))
    assert older.data.test_jobs == 1  # a tool without -j: one case at a time, as before


def test_unknown_and_library_ops(repo: Path, tmp_path: Path):
    with pytest.raises(UsageError, match="unknown op 'NOPE'") as exc:
        LlamaCppBackend().discover(repo, settings_with(tmp_path / ".kernelopt", op="NOPE"))
    assert "SOFT_MAX" in str(exc.value) and "RMS_NORM" in str(exc.value)
    with pytest.raises(UsageError, match="cuBLAS"):
        LlamaCppBackend().discover(repo, settings_with(tmp_path / ".kernelopt", op="OUT_PROD"))


def test_real_layout_without_gpu_is_a_prerequisite_error(tmp_path: Path, monkeypatch):
    real = copy_fixture(tmp_path / "real", marker=False)
    monkeypatch.setattr(targets, "gpu_problem", lambda: "no NVIDIA GPU is visible")
    with pytest.raises(PrerequisiteError, match="nvcc and an NVIDIA GPU"):
        LlamaCppBackend().discover(real, settings_with(tmp_path / ".kernelopt", op="SOFT_MAX"))


def _objects(build: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in build.rglob("*.o")}


@pytest.mark.slow
def test_configure_once_then_incremental(repo: Path, tmp_path: Path, monkeypatch):
    # the tree's own commands (where a libcupti is found the ledger's build comes first:
    # test_an_ops_check_runs_with_the_cuda_memory_ledger)
    monkeypatch.setenv("KERNELOPT_NO_CUDA_LEDGER", "1")
    backend = LlamaCppBackend()
    [target] = backend.discover(repo, settings_with(tmp_path / ".kernelopt", op="SOFT_MAX"))
    files, modes = snapshot(repo)
    tree = Tree("candidate", tmp_path / "src", tmp_path / "build")
    materialize(tree.src, files, modes)
    first = backend.build(target, tree)
    # SOFT_MAX's build is slim, and its build step says so on the console
    slim = ("build without the ggml-cuda files the op never calls (mmq.cu, mmf.cu, mmvq.cu, "
            "mmvf.cu, mmid.cu; the mmq, mmf, fattn template instances), test-backend-ops without "
            "libllama and llama-common")
    assert slim == label(targets_slim.LEFT_OUT)
    assert [c.label for c in first] == ["configure", slim]
    configure = first[0].argv
    for flag in ("-DGGML_CUDA=ON", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF", "-DLLAMA_BUILD_TESTS=ON",
                 "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_SERVER=OFF", "-DCMAKE_BUILD_TYPE=Release"):
        assert flag in configure
    assert "test-backend-ops" in first[1].argv
    for command in first:
        subprocess.run(command.argv, cwd=command.cwd, check=True, capture_output=True)
    assert (tree.build / "bin" / "test-backend-ops").is_file()
    before = _objects(tree.build)
    assert "softmax.cu.o" in before and "ggml-cuda.cu.o" in before
    # a candidate edits one file: only that translation unit is rebuilt, no reconfigure
    edited = dict(files)
    edited["ggml/src/ggml-cuda/softmax.cu"] += b"\n// candidate edit\n"
    materialize(tree.src, edited, modes)
    second = backend.build(target, tree)
    assert [c.label for c in second] == [slim]
    subprocess.run(second[0].argv, cwd=second[0].cwd, check=True, capture_output=True)
    after = _objects(tree.build)
    changed = sorted(name for name in before if after[name] != before[name])
    assert changed == ["softmax.cu.o"]
    # a configure that failed leaves a cache but no build system: the next build configures again
    for generated in ("build.ninja", "Makefile"):
        (tree.build / generated).unlink(missing_ok=True)
    assert [c.label for c in backend.build(target, tree)] == ["configure", slim]


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_an_ops_check_runs_with_the_cuda_memory_ledger(repo: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch):
    """The kit's ledger (docs/faults.md): built before the tree, once per workspace, and loaded
    into the check; every seed's check at once names its record by all the seeds, and the
    baseline's check of the same seeds writes the bar (its processes may be split otherwise:
    the whole op in one before the case list exists). What the ledger judges is
    tests/test_cuda_ledger.py's, and the H200's (bench/results/2026-12-04-h200-faults/,
    ledger-llamacpp/)."""
    from kernelopt_core import cuda_ledger
    from kernelopt_core.process import run

    cupti = tmp_path / "libcupti.so"  # only its path is built in; opened at run time
    cupti.write_bytes(b"")
    monkeypatch.setenv(cuda_ledger.CUPTI_ENV, str(cupti))
    [target] = LlamaCppBackend().discover(repo, settings_with(tmp_path / ".kernelopt", op="SOFT_MAX"))
    work = tmp_path / "work"
    baseline = Tree("baseline", work / "base-src", work / "base-build")
    candidate = Tree("candidate", work / "cand-src", work / "cand-build")
    first = LlamaCppBackend().build(target, baseline)[0]
    assert first.label == "CUDA memory ledger" and run(first).ok
    assert all(c.label != "CUDA memory ledger" for c in LlamaCppBackend().build(target, candidate))
    watched = LlamaCppBackend().check_seeds(target, candidate, (1, 2, 3)).env
    assert watched["CUDA_INJECTION64_PATH"] == str(cuda_ledger.library(candidate))
    assert watched["KERNELOPT_CUDA_LEDGER"].endswith("cuda-ledger/candidate-seed1-2-3.txt")
    assert watched["KERNELOPT_CUDA_LEDGER_BASELINE"].endswith("cuda-ledger/baseline-seed1-2-3.txt")
    own = LlamaCppBackend().check_seeds(target, baseline, (1, 2, 3)).env
    assert own["KERNELOPT_CUDA_LEDGER"].endswith("baseline-seed1-2-3.txt")
    assert "KERNELOPT_CUDA_LEDGER_BASELINE" not in own
    assert LlamaCppBackend().check(target, candidate, 4).env["KERNELOPT_CUDA_LEDGER"] \
        .endswith("candidate-seed4.txt")
    monkeypatch.setenv(cuda_ledger.OFF_ENV, "1")
    assert "CUDA_INJECTION64_PATH" not in LlamaCppBackend().check_seeds(target, candidate, (1,)).env
