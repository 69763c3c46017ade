"""Small CLI contracts: setup, bad paths, unknown or missing backends, plugins listing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from kernelopt_tests_support import REPO, kernelopt

# The whole-loop runs below are on the chunk project, whose clock is counted: one screen run a
# tree and one seed reach the verdict three would. What each test checks is around the run.
SHORT = ("--final-rounds", "2", "--screen-runs", "1", "--seeds", "1")


def test_setup_lists_prerequisites_with_what_to_do(tmp_path: Path) -> None:
    result = kernelopt("setup", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    for name in ("git", "cmake", "python: dulwich", "nvcc", "ncu", "nsys", "hipcc", "GPU",
                 "LLM key", "torch", "triton"):
        assert name in result.stdout
    assert "missing" in result.stdout or "found" in result.stdout


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")
def test_setup_smoke_proves_the_toolchain(tmp_path: Path) -> None:
    result = kernelopt("setup", "--smoke", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    for step in ("cmake configure", "cmake build", "run", "workspace + lock"):
        assert step in result.stdout
    assert "FAILED" not in result.stdout


def test_missing_path_is_a_usage_error(tmp_path: Path) -> None:
    result = kernelopt("run", str(tmp_path / "nope"), cwd=tmp_path)
    assert result.returncode == 2 and "does not exist" in result.stderr


def test_directory_no_backend_recognises(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = kernelopt("run", str(tmp_path / "empty"), cwd=tmp_path)
    assert result.returncode == 2
    assert "no installed backend recognises" in result.stderr and "kernelopt.toml" in result.stderr


@pytest.mark.slow
def test_named_backend_not_installed_exits_3_naming_the_package(chunk_project: Path) -> None:
    result = kernelopt("run", str(chunk_project), "--backend", "ninfer", cwd=chunk_project,
                       env={"KERNELOPT_DISABLE_PLUGINS": "ninfer"})
    assert result.returncode == 3
    assert "backend 'ninfer' is not installed" in result.stderr
    assert (REPO / "plugins" / "kernelopt_ninfer").as_posix() in result.stderr
    from kernelopt_core.discovery import install_hint

    hint = install_hint("llamacpp")  # this checkout's plugin directory: a command that works
    assert hint.startswith("python3 -m pip install -e ") and "not on the package index" in hint
    assert (REPO / "plugins" / "kernelopt_llamacpp").as_posix() in hint
    unknown = kernelopt("run", str(chunk_project), "--backend", "nope", cwd=chunk_project)
    assert unknown.returncode == 2 and "installed backends: cmake" in unknown.stderr


def test_plugins_lists_builtins_and_cmake(tmp_path: Path) -> None:
    result = kernelopt("plugins", cwd=tmp_path)
    assert result.returncode == 0
    for text in ("core-gates", "build, correctness, screen, confirm", "core-tuner", "cmake",
                 "kernelopt-cmake", "opencode-go", "ncu"):
        assert text in result.stdout, text


@pytest.mark.slow
def test_bad_flag_values_exit_2(chunk_project: Path) -> None:
    result = kernelopt("run", str(chunk_project), "--gamma", "0.5", cwd=chunk_project)
    assert result.returncode == 2 and "`gamma` = 0.5" in result.stderr
    result = kernelopt("run", str(chunk_project), "--iterations", "x", cwd=chunk_project)
    assert result.returncode == 2


@pytest.mark.slow
def test_gate_selftest_aa_and_calibrated_planted(chunk_project: Path) -> None:
    import json

    result = kernelopt("gate-selftest", str(chunk_project), "--trials", "3",
                       "--planted-speedup", "2.0", "--final-rounds", "4", "--json",
                       cwd=chunk_project.parent)
    assert result.returncode == 0, result.stderr[-2000:]
    data = json.loads(result.stdout)
    # the chunk project's clock is counted, not timed: every planted 2× is seen, no A/A passes
    assert data["trials"] == 3 and data["false_accepts"] == 0 and data["detections"] == 3, \
        result.stderr[-3000:]
    assert data["results"]["planted"]["median_ratio"] > 1.5, result.stderr[-3000:]
    calibration = data["planted_calibration"]
    assert 0 < calibration["work"] < 1 and calibration["measured_ratio"] > 1.5
    for key in ("seconds_per_decision", "machine", "device", "naive"):
        assert key in data
    saved = Path(data["dir"]) / "selftest.json"
    assert json.loads(saved.read_text())["false_accepts"] == 0


def test_gate_selftest_without_work_placeholder_says_how_to_fix(chunk_project: Path) -> None:
    toml = chunk_project / "kernelopt.toml"
    toml.write_text(toml.read_text().replace(" {work}", ""))
    result = kernelopt("gate-selftest", str(chunk_project), "--trials", "1",
                       "--planted-speedup", "1.5", "--final-rounds", "2", cwd=chunk_project.parent)
    assert result.returncode == 2 and "no {work} placeholder" in result.stderr


@pytest.mark.slow
def test_gate_selftest_no_aa_decides_only_planted(chunk_project: Path) -> None:
    import json

    result = kernelopt("gate-selftest", str(chunk_project), "--trials", "1", "--no-aa",
                       "--planted-speedup", "2.0", "--final-rounds", "2", "--json",
                       cwd=chunk_project.parent)
    assert result.returncode == 0, result.stderr[-2000:]
    data = json.loads(result.stdout)
    assert set(data["results"]) == {"planted"} and data["false_accepts"] is None
    assert data["naive"]["false_accepts"] is None and data["seconds_per_decision"] > 0
    result = kernelopt("gate-selftest", str(chunk_project), "--no-aa", cwd=chunk_project.parent)
    assert result.returncode == 2 and "--no-aa" in result.stderr


@pytest.mark.slow
def test_several_targets_run_in_turn_each_its_own_run(chunk_project: Path, tmp_path: Path) -> None:
    toml = chunk_project / "kernelopt.toml"
    text = toml.read_text()
    second = text[text.index("[[target]]"):].replace('name = "chunk-sum"', 'name = "chunk-sum-2"')
    toml.write_text(text + "\n" + second)
    fast = tmp_path / "fast.py"
    fast.write_text((chunk_project / "kernel.py").read_text().replace("CHUNK = 1\n", "CHUNK = 256\n"))
    result = kernelopt("run", str(chunk_project), "--candidate", f"kernel.py={fast}",
                       *SHORT, cwd=chunk_project.parent)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "[1/2]" in result.stderr and "[2/2]" in result.stderr
    runs = sorted((chunk_project.parent / ".kernelopt" / "runs").iterdir())
    import json

    summaries = [json.loads((r / "summary.json").read_text()) for r in runs]
    assert [x["target"]["name"] for x in summaries] == ["chunk-sum", "chunk-sum-2"]
    # a fresh planner per run: the second target replays the candidate too
    assert [x["status"] for x in summaries] == ["optimized", "optimized"]
    assert "chunk-sum-2" in result.stdout and "report line" in result.stdout
    one = kernelopt("run", str(chunk_project), "--target", "chunk-sum-2", "--candidate",
                    f"kernel.py={fast}", *SHORT, cwd=chunk_project.parent)
    assert one.returncode == 0 and "[1/2]" not in one.stderr


@pytest.mark.slow
def test_interpreter_timings_never_claim_a_speedup(chunk_project: Path, tmp_path: Path) -> None:
    import json

    bench = chunk_project / "bench.py"
    bench.write_text(bench.read_text().replace('"checksum": checksum', '"checksum": checksum, '
                                               '"interpreted": True, "timer": "interpreter"'))
    fast = tmp_path / "fast.py"
    fast.write_text((chunk_project / "kernel.py").read_text().replace("CHUNK = 1\n", "CHUNK = 256\n"))
    result = kernelopt("run", str(chunk_project), "--candidate", f"kernel.py={fast}",
                       *SHORT, cwd=chunk_project.parent)
    assert result.returncode == 1, result.stderr[-3000:]
    summary = json.loads(next((chunk_project.parent / ".kernelopt" / "runs").glob("*/summary.json"))
                         .read_text())
    assert summary["status"] == "unverified" and summary["interpreted"] is True
    assert "under an interpreter" in summary["report_line"]
    assert summary["final_ms"] == summary["baseline_ms"]
    # without the confirm gate too: whatever gates run, interpreter times claim nothing
    result = kernelopt("run", str(chunk_project), "--candidate", f"kernel.py={fast}",
                       "--final-gates", "shape", "--screen-runs", "1", "--seeds", "1",
                       cwd=chunk_project.parent)
    assert result.returncode == 1 and "unverified" in result.stdout, result.stderr[-3000:]


@pytest.mark.slow
def test_on_a_terminal_the_verdict_starts_a_line_of_its_own(chunk_project: Path,
                                                             tmp_path: Path) -> None:
    """Progress redraws one status line on a TTY; the verdict used to be printed on the end of
    it ("[engine] c2  best 1.709×optimized: 1.73× …")."""
    import os
    import pty
    import subprocess
    import sys

    fast = tmp_path / "fast.py"
    fast.write_text((chunk_project / "kernel.py").read_text().replace("CHUNK = 1\n", "CHUNK = 256\n"))
    main, child = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "KERNELOPT_HOME"}
    proc = subprocess.Popen([sys.executable, "-m", "kernelopt_core.cli", "run", str(chunk_project),
                             "--candidate", f"kernel.py={fast}", *SHORT],
                            cwd=chunk_project.parent, stdout=child, stderr=child, env=env)
    os.close(child)
    import select

    chunks = []
    while True:  # a hang fails the test (no output for 120 s), it does not block CI
        ready, _, _ = select.select([main], [], [], 120)
        assert ready, "no output for 120 s"
        try:
            data = os.read(main, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    assert proc.wait(timeout=300) == 0
    os.close(main)
    text = b"".join(chunks).decode("utf-8", errors="replace")
    assert "\x1b[2K" in text  # it was a terminal: status lines were redrawn
    # what the terminal shows: each line after its last carriage return
    shown = [line.split("\r")[-1].replace("\x1b[2K", "")
             for line in text.replace("\r\n", "\n").split("\n")]
    verdict = [line for line in shown if "optimized" in line and "×" in line and "rounds" in line]
    assert verdict and all(line.lstrip("\x1b[0123456789;m").startswith("optimized")
                           for line in verdict), verdict


@pytest.mark.slow
def test_a_run_waiting_for_the_workspace_says_who_holds_it(chunk_project: Path,
                                                           tmp_path: Path) -> None:
    import json
    import os
    import subprocess
    import sys
    import time

    import portalocker

    fast = tmp_path / "fast.py"
    fast.write_text((chunk_project / "kernel.py").read_text().replace("CHUNK = 1\n", "CHUNK = 256\n"))
    flags = ("--candidate", f"kernel.py={fast}", *SHORT)
    assert kernelopt("run", str(chunk_project), *flags, cwd=chunk_project.parent).returncode == 0
    [workspace] = [p.parent for p in (chunk_project.parent / ".kernelopt" / "work").rglob(
        "workspace.lock")]
    (workspace / "workspace.holder").write_text(json.dumps(
        {"run_id": "20991231T000000000Z-abcdef", "pid": 4242, "since": 0}))
    env = {k: v for k, v in os.environ.items() if k != "KERNELOPT_HOME"}
    with portalocker.Lock(str(workspace / "workspace.lock"), timeout=5, fail_when_locked=True):
        proc = subprocess.Popen([sys.executable, "-m", "kernelopt_core.cli", "run",
                                 str(chunk_project), *flags], cwd=chunk_project.parent,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env)
        runs = chunk_project.parent / ".kernelopt" / "runs"
        # the run blocks on the lock this test holds: it cannot finish before it has said so
        # (the bound only turns a hang into a failure)
        deadline = time.time() + 600
        while not any("workspace_wait" in p.read_text() for p in runs.glob("*/journal.jsonl")):
            assert proc.poll() is None, "the run ended without waiting"
            assert time.time() < deadline, "no workspace_wait in 600 s"
            time.sleep(0.05)
        time.sleep(0.3)  # held a moment longer: the wait shows in the report
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-3000:]
    assert "held by run 20991231T000000000Z-abcdef (pid 4242)" in err
    run_dir = sorted(runs.iterdir())[-1]
    s = json.loads((run_dir / "summary.json").read_text())
    assert s["workspace_wait_s"] >= 0.3
    assert "waiting for the workspace" in (run_dir / "report.md").read_text()


@pytest.mark.slow
def test_a_file_or_subdirectory_of_a_project_runs_that_projects_target(tmp_path: Path) -> None:
    """`kernelopt run project/src/kernel.py` (or project/src) with the kernelopt.toml at
    project/: the descriptor is looked for upward, as git looks for .git, and the target that
    edits the given file runs (issue 14 item 6). The chunk project: its build is a copy, its
    clock counted (the subject is which target runs, not the compiler or the timing)."""
    from kernelopt_core.testing import write_chunk_project

    project = write_chunk_project(tmp_path / "p")

    def move(old: str, new: str) -> None:
        (project / old).rename(project / new)
        toml = project / "kernelopt.toml"
        toml.write_text(toml.read_text().replace("{repo}/" + old, "{repo}/" + new)
                        .replace(f'editable = ["{old}"]', f'editable = ["{new}"]'))

    (project / "src").mkdir()
    move("kernel.py", "src/kernel.py")
    (project / "src" / "other.c").write_text("int other;\n")
    flags = ("--iterations", "1", "--final-rounds", "2", "--final-gates", "confirm",
             "--seeds", "1", "--screen-runs", "1")
    for given in (project / "src" / "kernel.py", project / "src"):
        result = kernelopt("run", str(given), *flags, cwd=tmp_path)
        assert result.returncode == 0, result.stderr[-3000:]
        assert "chunk-sum (cmake backend)" in result.stderr
    other = kernelopt("run", str(project / "src" / "other.c"), cwd=tmp_path)
    assert other.returncode == 2
    assert "no target there edits it" in other.stderr and "src/kernel.py" in other.stderr
    # the file right beside its kernelopt.toml (issue 34 item 3), from its own directory
    move("src/kernel.py", "kernel.py")
    beside = kernelopt("run", "kernel.py", *flags, cwd=project)
    assert beside.returncode == 0, beside.stderr[-3000:]
    assert "chunk-sum (cmake backend)" in beside.stderr
    contract = kernelopt("run", "check.py", cwd=project)
    assert contract.returncode == 2 and "no target there edits it" in contract.stderr


def test_history_hides_refused_runs_and_marks_unproven_ratios(chunk_project: Path) -> None:
    from kernelopt_core.history import speed

    # a gate plan that cannot stand is refused before any run folder (issue 34, item 8)
    typo = kernelopt("run", str(chunk_project), "--gates", "build,screen", cwd=chunk_project.parent)
    assert typo.returncode == 2 and "correctness" in typo.stderr and "run:" not in typo.stdout
    assert not (chunk_project.parent / ".kernelopt" / "runs").exists()
    # the agents planner without a key: refused once the run has its folder, before any work
    refused = kernelopt("run", str(chunk_project), "--planner", "agents", cwd=chunk_project.parent)
    assert refused.returncode == 3, refused.stderr
    listed = kernelopt("history", cwd=chunk_project.parent)
    assert "chunk-sum" not in listed.stdout and "1 run(s) refused" in listed.stderr
    everything = kernelopt("history", "--all", cwd=chunk_project.parent)
    assert "chunk-sum" in everything.stdout and "error" in everything.stdout
    assert speed({"status": "matched", "speedup": 1.0, "median_ratio": 2.07}) == \
        "2.070× (median, not proven)"
    assert speed({"status": "optimized", "speedup": 1.8, "median_ratio": 1.8}) == "1.800×"
    assert speed({"status": "fallback", "speedup": 1.0, "median_ratio": None}) == "-"


def test_the_upward_search_stops_at_a_repositorys_top(tmp_path: Path) -> None:
    from kernelopt_core.discovery import enclosing_project

    (tmp_path / "kernelopt.toml").write_text("")
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "k.c").write_text("")
    assert enclosing_project(repo / "src" / "k.c") == tmp_path
    (repo / ".git").mkdir()
    assert enclosing_project(repo / "src" / "k.c") is None  # stops at repo/, the top
    assert enclosing_project(repo) is None
    (repo / "kernelopt.toml").write_text("")
    assert enclosing_project(repo / "src") == repo
    (repo / "src" / "kernelopt.toml").write_text("")  # a file beside its own toml
    assert enclosing_project(repo / "src" / "k.c") == repo / "src"


def test_run_help_shows_the_settings_own_defaults() -> None:
    """One source for a default: the Settings class, not the flag's help text."""
    from click.testing import CliRunner

    from kernelopt_core.cli import cli
    from kernelopt_core.settings import Settings

    text = " ".join(CliRunner().invoke(cli, ["run", "--help"], terminal_width=200).output.split())
    s = Settings(state_root=Path(".")).flat()  # by flat name, as the flags spell them
    from kernelopt_core.planners.tuner_options import TunerOptions

    s["screen_gpu_seconds"] = TunerOptions().screen_gpu_seconds  # the [tuner] table's own
    for flag in ("--iterations", "--patience", "--gamma", "--final-rounds", "--worker-rounds",
                 "--kappa", "--screen-gpu-seconds"):
        value = s[flag[2:].replace("-", "_")]
        after = text[text.index(flag):]
        assert f"[{value}]" in after[:200], (flag, value, after[:200])
    assert "[" + ",".join(map(str, s["seeds"])) + "]" in text
