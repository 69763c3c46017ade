"""The compile probe: knob values that cannot compile are dropped before they cost a candidate
(the real tree's softmax.cu pins CUDA_SOFT_MAX_BLOCK_SIZE with a static_assert; here the
fixture gets the same kind of pin and the whole loop runs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kernelopt_llamacpp.probe import Unredirectable, compile_argv
from llamacpp_fixture import copy_fixture
from test_llamacpp_cli import _run


def test_the_command_reads_the_variant_and_writes_only_its_object(tmp_path: Path) -> None:
    entry = {"directory": str(tmp_path / "build"), "file": str(tmp_path / "src" / "a.cu"),
             "command": f"nvcc -DX=1 -I/inc -MD -MT obj/a.o -MF obj/a.o.d -x cu -c "
                        f"{tmp_path / 'src' / 'a.cu'} -o obj/a.o"}
    argv = compile_argv(entry, tmp_path / "v1" / "a.cu", tmp_path / "v1" / "a.o")
    assert argv == ["nvcc", "-DX=1", "-I/inc", "-x", "cu", "-c", str(tmp_path / "v1" / "a.cu"),
                    f"-I{tmp_path / 'src'}", "-o", str(tmp_path / "v1" / "a.o")]
    joined = {**entry, "command": f"nvcc -oobj/a.o -MFd.d --output-file=x.o "
                                  f"--dependency-output=d.d -MD -c {tmp_path / 'src' / 'a.cu'}"}
    assert compile_argv(joined, tmp_path / "v1" / "a.cu", tmp_path / "v1" / "a.o") == [
        "nvcc", "-c", str(tmp_path / "v1" / "a.cu"), f"-I{tmp_path / 'src'}", "-o",
        str(tmp_path / "v1" / "a.o")]
    with pytest.raises(Unredirectable):
        compile_argv({**entry, "command": "nvcc @flags.rsp"}, tmp_path / "a.cu", tmp_path / "a.o")


@pytest.mark.slow
def test_values_a_static_assert_refuses_never_become_candidates(tmp_path: Path) -> None:
    repo = copy_fixture(tmp_path / "llama.cpp")
    softmax = repo / "ggml" / "src" / "ggml-cuda" / "softmax.cu"
    softmax.write_text(softmax.read_text() + '\nstatic_assert(CUDA_SOFT_MAX_BLOCK_SIZE <= 128, '
                       '"These values need to be adjusted.");\n')
    work = tmp_path / "work"
    work.mkdir()
    result = _run(["run-llamacpp", "--op", "SOFT_MAX", "--repo", str(repo), "--iterations", "3",
                   "--patience", "3", "--screen-runs", "1", "--final-rounds", "2", "--seeds", "1"],
                  work)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    [run_dir] = (work / ".kernelopt" / "runs").iterdir()
    events = [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]
    [probe] = [e for e in events if e["event"] == "knob_probe"]
    assert probe["ok"] and sorted(probe["failed"]["CUDA_SOFT_MAX_BLOCK_SIZE"], key=int) == [
        "256", "512", "1024"]
    assert "static assertion failed" in probe["failed"]["CUDA_SOFT_MAX_BLOCK_SIZE"]["256"] \
        or "static_assert" in probe["failed"]["CUDA_SOFT_MAX_BLOCK_SIZE"]["256"]
    tried = [e["knobs"]["CUDA_SOFT_MAX_BLOCK_SIZE"] for e in events
             if e["event"] == "candidate" and "knobs" in e]
    assert tried and all(int(v) <= 128 for v in tried), tried
    builds = [e for e in events if e["event"] == "gate" and e["gate"] == "build"]
    assert builds and all(e["passed"] for e in builds)  # no candidate failed to compile
    # its scratch is gone, its log stays (the unedited control compile, then each value)
    assert [p.name for p in (run_dir / "knob-probe").iterdir() if p.is_dir()] == []
    assert (run_dir / "knob-probe" / "probe.log").is_file()
