"""The compile probe: knob values that cannot compile are dropped before they cost a candidate
(the real tree's softmax.cu pins CUDA_SOFT_MAX_BLOCK_SIZE with a static_assert; here the
fixture gets the same kind of pin and the whole loop runs)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from kernelopt_llamacpp.probe import Unredirectable, compile_argv
from llamacpp_fixture import copy_fixture
from test_llamacpp_cli import _run

from kernelopt_core import journal


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


def _run_softmax(repo: Path, work: Path, iterations: int) -> tuple[Path, list[dict[str, Any]]]:
    """A short tuner run of SOFT_MAX on ``repo``: its run directory and journal events."""
    work.mkdir()
    result = _run(["run-llamacpp", "--op", "SOFT_MAX", "--repo", str(repo), "--iterations",
                   str(iterations), "--patience", str(iterations), "--screen-runs", "1",
                   "--final-rounds", "2", "--seeds", "1"], work)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    [run_dir] = (work / ".kernelopt" / "runs").iterdir()
    return run_dir, journal.read(run_dir / "journal.jsonl")


@pytest.mark.slow
def test_values_a_static_assert_refuses_never_become_candidates(tmp_path: Path) -> None:
    repo = copy_fixture(tmp_path / "llama.cpp")
    softmax = repo / "ggml" / "src" / "ggml-cuda" / "softmax.cu"
    softmax.write_text(softmax.read_text() + '\nstatic_assert(CUDA_SOFT_MAX_BLOCK_SIZE <= 128, '
                       '"These values need to be adjusted.");\n')
    run_dir, events = _run_softmax(repo, tmp_path / "work", iterations=3)
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


def test_a_compile_that_did_not_finish_judges_nothing(tmp_path: Path) -> None:
    """All values at once through ninja: a value that compiles is ok, one that fails is not,
    and one whose compile never finished (here: its directory is gone) has no verdict, so the
    core keeps it; the same alone, without ninja's fan-out."""
    from kernelopt_llamacpp.probe import _compile_all

    if shutil.which("cc") is None or shutil.which("ninja") is None:
        pytest.skip("needs cc and ninja")
    build = tmp_path / "build"
    build.mkdir()
    good, bad = tmp_path / "good.c", tmp_path / "bad.c"
    good.write_text("int f(void) { return 1; }\n")
    bad.write_text('_Static_assert(0, "These values need to be adjusted.");\n')

    def entry(directory: Path, source: Path) -> dict[str, object]:
        return {"directory": str(directory), "file": str(source),
                "arguments": ["cc", "-c", str(source), "-o", "x.o"]}

    jobs = {"good": (entry(build, good), good, tmp_path / "good.o"),
            "bad": (entry(build, bad), bad, tmp_path / "bad.o"),
            "gone": (entry(tmp_path / "no-such-dir", good), good, tmp_path / "gone.o")}
    out = _compile_all(jobs, tmp_path / "jobs")  # type: ignore[arg-type]
    assert out["good"][0] is True and out["gone"][0] is None
    assert out["bad"][0] is False and "need to be adjusted" in out["bad"][1]
    alone = _compile_all({"gone": jobs["gone"]}, tmp_path / "alone")  # type: ignore[arg-type]
    assert alone["gone"][0] is None


def test_a_selection_caps_values_are_judged_without_compiling(tmp_path: Path) -> None:
    """Issue 54: a selection cap's values are its switch's cases, each compiled in every build
    (mmvf.cu's cap took an 87 s probe on the H200): with --compiles the probe compiles none of
    them, not even the unedited file; another knob's values are still compiled."""
    import json

    from kernelopt_llamacpp.probe import probe

    if shutil.which("cc") is None:
        pytest.skip("needs cc")
    src, build, probe_dir = tmp_path / "src", tmp_path / "build", tmp_path / "probe"
    for d in (src, build, probe_dir / "v1", probe_dir / "v2"):
        d.mkdir(parents=True)
    (src / "mmvf.cu").write_text("int cap = 256;\n")
    (build / "compile_commands.json").write_text(json.dumps([{
        "directory": str(build), "file": str(src / "mmvf.cu"),
        "arguments": ["cc", "-x", "c", "-c", str(src / "mmvf.cu"), "-o", "x.o"]}]))
    (probe_dir / "v1" / "mmvf.cu").write_text("int cap = 128;\n")
    (probe_dir / "v2" / "mmvf.cu").write_text("int cap = 128; int block = ;\n")
    (probe_dir / "variants.json").write_text(json.dumps([
        {"id": "v1", "knob": "max_block_size", "value": "128", "files": ["mmvf.cu"]},
        {"id": "v2", "knob": "other", "value": "7", "files": ["mmvf.cu"]}]))
    capped = probe(build, src, probe_dir, ["mmvf.cu"], compiles=frozenset({"max_block_size"}))
    assert capped["v1"] == {"ok": True} and capped["v2"]["ok"] is False
    (probe_dir / "variants.json").write_text(json.dumps([
        {"id": "v1", "knob": "max_block_size", "value": "128", "files": ["mmvf.cu"]}]))
    (src / "mmvf.cu").write_text("this does not compile\n")  # so nothing may have compiled
    shutil.rmtree(probe_dir / "jobs")
    assert probe(build, src, probe_dir, ["mmvf.cu"],
                 compiles=frozenset({"max_block_size"})) == {"v1": {"ok": True}}
    assert not (probe_dir / "jobs").exists()


@pytest.mark.slow
def test_a_define_pinned_with_its_clamp_is_searched_as_one_knob(tmp_path: Path) -> None:
    """llama.cpp's softmax.cu pattern on the fixture: the block size asserted equal to 64 and
    clamped to 64 in the kernel file. The whole loop then tries other values with the assert
    and the clamp moved along: every value compiles, builds and passes the op's test."""
    repo = copy_fixture(tmp_path / "llama.cpp")
    softmax = repo / "ggml" / "src" / "ggml-cuda" / "softmax.cu"
    text = softmax.read_text()
    assert "    const int block_size = CUDA_SOFT_MAX_BLOCK_SIZE;\n" in text
    softmax.write_text(text.replace(
        "    const int block_size = CUDA_SOFT_MAX_BLOCK_SIZE;\n",
        "    const int block_size = (CUDA_SOFT_MAX_BLOCK_SIZE > 64 ? 64 : CUDA_SOFT_MAX_BLOCK_SIZE);\n")
        + '\nstatic_assert(CUDA_SOFT_MAX_BLOCK_SIZE == 64, "These values need to be adjusted.");\n')
    _, events = _run_softmax(repo, tmp_path / "work", iterations=2)
    [knobs] = [e for e in events if e["event"] == "knobs"]
    assert knobs["knobs"][0]["also"] == ["ggml/src/ggml-cuda/softmax.cu"] * 2
    [probe] = [e for e in events if e["event"] == "knob_probe"]
    assert probe["ok"] and probe["failed"] == {}  # alone, the define would fail every value
    candidates = [e for e in events if e["event"] == "candidate" and "knobs" in e]
    assert candidates and all(e["knobs"]["CUDA_SOFT_MAX_BLOCK_SIZE"] != "64" for e in candidates)
    assert all(sorted(e["files"]) == ["ggml/src/ggml-cuda/softmax.cu", "ggml/src/ggml-cuda/softmax.cuh"]
               for e in candidates)
    gates = [e for e in events if e["event"] == "gate" and e["gate"] in ("build", "correctness")]
    assert len(gates) == 2 * len(candidates) and all(e["passed"] for e in gates), gates
