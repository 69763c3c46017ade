"""The child programs the core spawns: check (ctest_run), bench (bench_run), engine — each run
in-process against small stand-ins (a CTest project of scripts, fake bench programs)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kernelopt_ninfer import bench_run, ctest_run, engine

TEST_SCRIPT = """import os, sys
mode = sys.argv[1]
seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else 0
assert os.environ.get("FROM_CTEST") == "1", "the registered environment is missing"
if os.environ.get("NINFER_OP_REPORT_STATS") == "1":
    print(f"OP_ERROR_STATS op=t case=rows4_cols8 max_abs_err=1e-07 limit=1e-05 ratio={0.01 * (seed + 1)}")
if mode == "skip":
    sys.exit(77)
if mode == "skipprint":
    print("SKIP: no usable CUDA device")
    sys.exit(0)
sys.exit(1 if mode == "bad" or seed == 13 else 0)
"""


@pytest.fixture(scope="module")
def ctest_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A configured CTest project whose tests are Python scripts (no compiler needed)."""
    root = tmp_path_factory.mktemp("ctest")
    (root / "t.py").write_text(TEST_SCRIPT)
    lines = ["cmake_minimum_required(VERSION 3.20)", "project(t NONE)", "enable_testing()"]
    for mode in ("ok", "skip", "skipprint", "bad"):
        lines += [f"add_test(NAME ninfer_{mode}_test COMMAND {sys.executable} {root / 't.py'} {mode})",
                  f"set_tests_properties(ninfer_{mode}_test PROPERTIES SKIP_RETURN_CODE 77 "
                  'ENVIRONMENT "FROM_CTEST=1")']
    (root / "CMakeLists.txt").write_text("\n".join(lines) + "\n")
    subprocess.run(["cmake", "-S", str(root), "-B", str(root / "build")], check=True,
                   capture_output=True)
    return root / "build"


def _last_json(out: str) -> dict:
    return json.loads(out.strip().splitlines()[-1])


def test_check_once_through_ctest_passes_and_sums_up_the_records(ctest_build: Path, capsys) -> None:
    assert ctest_run.main(["--build", str(ctest_build), "--test", "ninfer_ok_test"]) == 0
    out = capsys.readouterr().out
    assert "takes no --seed" in out and "OP_ERROR_STATS: 1 records" in out
    summary = _last_json(out)
    assert summary["passed"] and summary["seeds"] is None
    assert summary["op_error_stats"]["worst_case"] == "rows4_cols8"


def test_seeded_check_runs_the_registered_command_per_seed(ctest_build: Path, tmp_path: Path,
                                                           capsys) -> None:
    record = tmp_path / "record.json"
    assert ctest_run.main(["--build", str(ctest_build), "--test", "ninfer_ok_test",
                           "--seeds", "1,2", "--record", str(record)]) == 0
    out = capsys.readouterr().out
    assert "--seed 1 passed" in out and "--seed 2 passed" in out
    assert _last_json(out)["op_error_stats"]["records"] == 2
    assert json.loads(record.read_text())["cases"] == ["rows4_cols8"]
    assert ctest_run.main(["--build", str(ctest_build), "--test", "ninfer_ok_test",
                           "--seeds", "1,13"]) == 1
    assert "--seed 13 FAILED" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["ninfer_skip_test", "ninfer_skipprint_test"])
@pytest.mark.parametrize("seeds", [None, "1"])
def test_a_skipped_test_is_not_a_pass(ctest_build: Path, capsys, name: str,
                                      seeds: str | None) -> None:
    args = ["--build", str(ctest_build), "--test", name] + (["--seeds", seeds] if seeds else [])
    assert ctest_run.main(args) == 1
    out = capsys.readouterr().out
    assert "not a pass" in out and not _last_json(out)["passed"]


def test_a_failing_or_missing_test_fails(ctest_build: Path, capsys) -> None:
    assert ctest_run.main(["--build", str(ctest_build), "--test", "ninfer_bad_test"]) == 1
    assert ctest_run.main(["--build", str(ctest_build), "--test", "ninfer_none_test",
                           "--seeds", "1"]) == 1
    assert "lists no test ninfer_none_test" in capsys.readouterr().out


def test_covers_requires_the_timed_dimensions(ctest_build: Path, capsys) -> None:
    base = ["--build", str(ctest_build), "--test", "ninfer_ok_test", "--seeds", "1", "--covers"]
    assert ctest_run.main([*base, "t rows=4 cols=8"]) == 0
    assert ctest_run.main([*base, "t rows=4 cols=16"]) == 1
    assert "no OP_ERROR_STATS case" in capsys.readouterr().out
    assert ctest_run.covers("rows4096_cols4096", "rmsnorm rows=4096 cols=4096")
    assert not ctest_run.covers("rows64_cols4096", "rmsnorm rows=4096 cols=4096")
    assert not ctest_run.covers("rmsnorm layer [5120,1]", "rmsnorm layer")  # no dimensions


def test_stats_records_in_either_field_order() -> None:
    text = ("1: OP_ERROR_STATS op=rmsnorm case=rows64_cols4096 max_abs_err=1.2e-07 limit=3e-05 "
            "ratio=4e-03\nOP_ERROR_STATS kind=pointwise count=10 max_abs=1e-3 max_limit_ratio=0.5 "
            "non_finite=0 case=rmsnorm layer [5120,1]\n"
            "OP_ERROR_STATS op=x case=bad max_abs_err=nan limit=1e-5 ratio=nan\n")
    records = ctest_run.parse_stats(text)
    assert [r["case"] for r in records] == ["rows64_cols4096", "rmsnorm layer [5120,1]", "bad"]
    summary = ctest_run.summarize(records)
    assert summary == {"records": 3, "non_finite": 1, "worst_ratio": 0.5,
                       "worst_field": "max_limit_ratio", "worst_case": "rmsnorm layer [5120,1]"}


LINE = ("{tag}  median={median:7.2f} us  min={median:7.2f} us  p95={median:7.2f} us {gbps:5.1f} GB/s"
        "  (0.1% of 1792 GB/s roofline)")
BENCH = f"""#!{{python}}
import os
print({LINE.format(tag="rmsnorm rows=4096 cols=4096", median=19.5, gbps=6.9)!r})
print({LINE.format(tag="rmsnorm rows=64 cols=4096  ", median=0.5, gbps=4.2)!r})
if os.environ.get("FAKE_TWICE"):
    print({LINE.format(tag="rmsnorm rows=4096 cols=4096", median=1.0, gbps=9.9)!r})
"""


def _program(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text.replace("{python}", sys.executable))
    path.chmod(0o755)
    return path


def test_bench_pins_the_largest_case_and_reads_only_it(tmp_path: Path, capsys, monkeypatch) -> None:
    build = tmp_path / "build"
    _program(build / "bench" / "ninfer_rmsnorm_bench", BENCH)
    pin = tmp_path / "pin.json"
    args = ["--build", str(build), "--target", "ninfer_rmsnorm_bench", "--op", "rmsnorm",
            "--pin", str(pin), "--may-pin"]
    candidate = args[:-1]  # a candidate's tree never pins
    assert bench_run.main(candidate) == 1
    assert "the baseline's bench pins it first" in capsys.readouterr().err
    assert bench_run.main(args) == 0
    line = _last_json(capsys.readouterr().out)
    # the pinned case is `shape`, as on every backend's line (BenchLine): the journal shows it
    assert line["shape"] == "rmsnorm rows=4096 cols=4096" and line["time_ms"] == pytest.approx(0.0195)
    assert line["kernelopt_bench"] == 1 and "case" not in line
    assert line["bytes"] == round(6.9e9 * 19.5e-6)
    saved = json.loads(pin.read_text())
    assert saved["chosen_by"].startswith("the largest median") and len(saved["cases"]) == 2
    # --case picks another; an unknown one lists the cases (exit 2)
    assert bench_run.main([*args, "--case", "rmsnorm rows=64   cols=4096"]) == 0
    assert _last_json(capsys.readouterr().out)["time_ms"] == pytest.approx(0.0005)
    assert bench_run.main([*args, "--case", "rmsnorm rows=1 cols=1"]) == 2
    assert "rmsnorm rows=64 cols=4096" in capsys.readouterr().err
    # a default pin whose case the bench no longer prints (another tree at this path) is redone
    # by the baseline; a candidate's bench that lacks it fails and leaves the pin alone
    saved["case"] = "rmsnorm rows=1 cols=1"
    pin.write_text(json.dumps(saved))
    assert bench_run.main(candidate) == 1
    assert "is not among the cases this tree's" in capsys.readouterr().err
    assert json.loads(pin.read_text())["case"] == "rmsnorm rows=1 cols=1"
    assert bench_run.main(args) == 0
    assert "pinning again" in capsys.readouterr().err
    assert json.loads(pin.read_text())["case"] == "rmsnorm rows=4096 cols=4096"
    # a pinned tag printed twice is refused (the code under test shares the stdout)
    monkeypatch.setenv("FAKE_TWICE", "1")
    assert bench_run.main([*args, "--case", "rmsnorm rows=4096 cols=4096"]) == 1
    assert "printed 2 times" in capsys.readouterr().err


def test_bench_that_skips_or_is_missing(tmp_path: Path, capsys, monkeypatch) -> None:
    build = tmp_path / "build"
    args = ["--build", str(build), "--target", "ninfer_x_bench", "--op", "x", "--pin",
            str(tmp_path / "pin.json")]
    assert bench_run.main(args) == 1
    assert "did its build succeed" in capsys.readouterr().err
    _program(build / "bin" / "ninfer_x_bench", "#!{python}\nprint('SKIP: no usable CUDA device')\n")
    assert bench_run.main(args) == 3


ENGINE = """#!{python}
import json, os, sys
assert sys.argv[1:3] == ["--weights", os.environ["FAKE_ARTIFACT"]], sys.argv
assert sys.argv[3:] == ["-p", "512", "-n", "128", "-r", "5", "--warmup", "1", "-o", "json"]
tokens = int(os.environ.get("FAKE_TOKENS", "129"))
report = {"schema_version": 1, "tool": "ninfer_bench", "tests": [
    {"label": "pp512", "kind": "pp", "n_prompt": 512, "n_gen": 0, "prefill_tok_s_mean": 5000.0,
     "total_seconds_mean": 0.1, "workspace_peak_bytes": 123, "reps": [{"generated_output_tokens": 1}]},
    {"label": "tg128", "kind": "tg", "n_prompt": 512, "n_gen": 128, "decode_output_tok_s_mean": 64.0,
     "total_seconds_mean": float(os.environ.get("FAKE_SECONDS", "2.0")),
     "reps": [{"generated_output_tokens": tokens, "timings": {"total_seconds": 2.0}}]}]}
print("loading artifact ...")
print(json.dumps(report, indent=2))
"""


def test_engine_times_the_whole_program_and_compares_what_it_reports(
        tmp_path: Path, capsys, monkeypatch) -> None:
    build = tmp_path / "build"
    _program(build / "bench" / "ninfer_bench", ENGINE)
    artifact = tmp_path / "model.ninfer"
    artifact.write_text("weights")
    monkeypatch.setenv("FAKE_ARTIFACT", str(artifact))
    reference = tmp_path / "baseline.out"
    monkeypatch.setenv("KERNELOPT_ENGINE_OUT", str(reference))
    args = ["--build", str(build), "--artifact", str(artifact)]
    assert engine.main(args) == 0
    base = _last_json(capsys.readouterr().out)
    assert base["time_ms"] == pytest.approx(2100.0) and base["match"] is None
    assert base["tokens_per_s"] == 64.0 and base["prompt_tokens_per_s"] == 5000.0
    monkeypatch.setenv("KERNELOPT_ENGINE_OUT", str(tmp_path / "candidate.out"))
    monkeypatch.setenv("KERNELOPT_ENGINE_REFERENCE", str(reference))
    monkeypatch.setenv("FAKE_SECONDS", "1.5")  # faster, same work: matches
    assert engine.main(args) == 0
    same = _last_json(capsys.readouterr().out)
    assert same["match"] is True and same["time_ms"] == pytest.approx(1600.0)
    assert "no generated text" in same["detail"]
    monkeypatch.setenv("FAKE_TOKENS", "100")  # stopped early: not the same run
    assert engine.main(args) == 0
    assert _last_json(capsys.readouterr().out)["match"] is False
