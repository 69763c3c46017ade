"""The llama.cpp GPU fault corpus (bench/llamacpp_faults.py) against the real softmax.cu.

The source is the vendored tree's, unmodified (fixtures/h200-llama-model/ggml-cuda-src.tgz).
On a CPU: every kind is written, each is its base plus inserted lines only, and the policy
gate refuses none (no kind's expected gate is ``policy``). The GPU run is bench/h200_faults.sh.
"""

from __future__ import annotations

import difflib
import importlib.util
import json
import sys
import tarfile
from pathlib import Path

import pytest

from kernelopt_core.gates.policy import POLICY_RULES, added_code

ROOT = Path(__file__).resolve().parents[3]
SOURCES = Path(__file__).parent / "fixtures" / "h200-llama-model" / "ggml-cuda-src.tgz"


def _load_module(name: str, path: Path):  # bench/ is scripts, not a package on the path
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


faults = _load_module("llamacpp_faults", ROOT / "bench" / "llamacpp_faults.py")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("llamacpp-src")
    source = root / faults.SOFTMAX
    source.parent.mkdir(parents=True)
    with tarfile.open(SOURCES) as tar:
        source.write_bytes(tar.extractfile(faults.SOFTMAX).read())
    return root


@pytest.fixture(scope="module")
def written(tree: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("variants")
    assert faults.main([str(tree), str(out)]) == 0
    return out


def _changes(old: str, new: str) -> tuple[list[str], list[str]]:
    """(lines removed, lines added) from old to new."""
    removed, added = [], []
    for line in difflib.ndiff(old.splitlines(), new.splitlines()):
        if line.startswith("- "):
            removed.append(line[2:])
        elif line.startswith("+ "):
            added.append(line[2:])
    return removed, added


def test_every_kind_and_the_clean_variant_are_written(written: Path) -> None:
    expected = {f"{kind}.cu" for kind in faults.KINDS} | {"clean.cu", "expect.json"}
    assert {p.name for p in written.iterdir()} == expected
    assert set(faults.KINDS) == {"illegal_address", "hang", "oom", "trap", "leak", "stray_child",
                                 "outside_write", "no_result"}
    table = json.loads((written / "expect.json").read_text())
    assert set(table) == set(faults.KINDS)


def test_headers_are_read_as_the_cuda_corpus_headers_are(written: Path) -> None:
    # the summary reads the generated folder as it reads tests/faults/cuda: clean.cu is no kind
    summary = _load_module("faults_summary", ROOT / "bench" / "faults_summary.py")
    headers = summary.expectations(written)
    assert set(headers) == {f"{kind}.cu" for kind in faults.KINDS}
    table = json.loads((written / "expect.json").read_text())
    for kind in faults.KINDS:
        h = headers[f"{kind}.cu"]
        assert h["kind"] == kind
        assert {"expect": h["expect"], "reason": h["reason"]} == table[kind]


def test_clean_variant_moves_the_block_size_and_both_pins(tree: Path, written: Path) -> None:
    original = (tree / faults.SOFTMAX).read_text()
    removed, added = _changes(original, (written / "clean.cu").read_text())
    pin = '    static_assert(CUDA_SOFT_MAX_BLOCK_SIZE == {}, "These values need to be adjusted.");'
    assert removed == ["        constexpr int block = (ncols > 1024 ? 1024 : ncols);", pin.format(1024)]
    assert added == ["#undef CUDA_SOFT_MAX_BLOCK_SIZE", "#define CUDA_SOFT_MAX_BLOCK_SIZE 64",
                     "        constexpr int block = (ncols > 64 ? 64 : ncols);", pin.format(64)]


@pytest.mark.parametrize("kind", faults.KINDS)
def test_each_fault_is_its_base_plus_inserted_lines(tree: Path, written: Path, kind: str) -> None:
    original = (tree / faults.SOFTMAX).read_text()
    base = faults.with_block_size(original, faults.FAULTS[kind][4])
    removed, added = _changes(base, (written / f"{kind}.cu").read_text())
    assert removed == []
    inserted = [line for _, lines in faults.FAULTS[kind][3] for line in lines.splitlines()]
    assert sorted(added) == sorted(faults.header(kind).splitlines() + inserted)


def test_faults_sit_in_the_dispatched_kernel_or_the_op_host_function(written: Path) -> None:
    for kind in faults.KINDS:
        text = (written / f"{kind}.cu").read_text()
        for anchor, lines in faults.FAULTS[kind][3]:
            at = text.index(lines)
            if anchor == "kernel":
                assert text.rfind("static __global__ void soft_max_f32(", 0, at) > \
                    text.rfind("\n}\n", 0, at)
            elif anchor == "host":
                assert text[:at].endswith(
                    "void ggml_cuda_op_soft_max(ggml_backend_cuda_context & ctx, ggml_tensor * dst) {\n")


def test_the_policy_gate_refuses_none_of_them(tree: Path, written: Path) -> None:
    original = (tree / faults.SOFTMAX).read_bytes()
    table = json.loads((written / "expect.json").read_text())
    for name in ["clean.cu", *(f"{kind}.cu" for kind in faults.KINDS)]:
        kind = name[:-3]
        findings = [f"{n}: {reason}" for n, code in
                    added_code(faults.SOFTMAX, original, (written / name).read_bytes())
                    for reason, pattern in POLICY_RULES if pattern.search(code)]
        refused_expected = kind in table and table[kind]["expect"] == "policy"
        assert bool(findings) == refused_expected, (name, findings)


def test_a_missing_anchor_stops_loudly(tmp_path: Path) -> None:
    source = tmp_path / faults.SOFTMAX
    source.parent.mkdir(parents=True)
    source.write_text('#include "softmax.cuh"\nvoid unrelated() {}\n')
    with pytest.raises(faults.AnchorMissing, match="static_assert anchor"):
        faults.variants(source.read_text())
    assert faults.main([str(tmp_path), str(tmp_path / "out")]) == 1
    assert not (tmp_path / "out").exists()



def test_a_tool_that_leaves_a_process_fails_with_those_words_on_their_own_line() -> None:
    """The H200's stray_child candidate (bench/results/2026-12-04-h200-faults, llamacpp): the
    wrapper's message followed the tool's multi-kilobyte command line and ran into the next
    shard's output, so the reason was 500 characters of case names. A real shell leaves a
    sleeper behind; the wrapper fails, and the gate's line names the fault."""
    from kernelopt_llamacpp import tbo

    from kernelopt_core.gates.builtin import failing_line

    cases = ",".join(f"SOFT_MAX(type=f32,ne=[{n},{n},1,1])" for n in range(200))
    code, output = tbo._run(["sh", "-c", f"echo '{cases}'; sleep 30 & echo started"])
    assert code == 1
    line = failing_line(output + "Testing 2 devices\n")
    assert line == ("test-backend-ops left processes running after it exited (killed; the tool "
                    "exited 0)")
