"""The rough edges a newcomer hits in the first hour (issue 34, item 8), each through the CLI
in a child process: every unknown key of a file named at once, a CMake project without a
descriptor pointed at `kernelopt init`, and an error's report.html headline said once."""

from __future__ import annotations

import shutil
from pathlib import Path

from kernelopt_tests_support import REPO, counted_cpu_example, kernelopt


def _example(tmp_path: Path) -> Path:
    return Path(shutil.copytree(REPO / "examples" / "cmake-cpu", tmp_path / "transpose"))


def test_every_unknown_key_is_named_at_once(tmp_path: Path) -> None:
    project = _example(tmp_path)
    toml = project / "kernelopt.toml"
    original = toml.read_text()
    toml.write_text(original.replace("[run]\n", "[run]\nitrations = 3\npatiense = 2\n"))
    run_keys = kernelopt("run", str(project), cwd=tmp_path)
    assert run_keys.returncode == 2
    assert "unknown key `itrations` in [run]" in run_keys.stderr
    assert "unknown key `patiense` in [run]" in run_keys.stderr
    toml.write_text(original.replace('name = "transpose"\n',
                                     'name = "transpose"\nedtiable = 1\nshpe = 2\n'))
    target_keys = kernelopt("run", str(project), cwd=tmp_path)
    assert target_keys.returncode == 2
    assert "unknown key `edtiable`" in target_keys.stderr and "unknown key `shpe`" in \
        target_keys.stderr
    assert not (project / ".kernelopt").exists() and not (tmp_path / ".kernelopt").exists()


def test_a_cmake_project_without_a_descriptor_is_pointed_at_init(tmp_path: Path) -> None:
    project = _example(tmp_path)
    (project / "kernelopt.toml").unlink()
    for where in (project, project / "kernel.cpp"):
        refused = kernelopt("run", str(where), cwd=tmp_path)
        assert refused.returncode == 2
        assert f"`kernelopt init {project}` writes one" in refused.stderr


def test_an_errors_html_headline_says_error_once() -> None:
    from kernelopt_core.report_html import render_html

    summary = {"status": "error", "report_line": "error: the baseline fails its own test",
               "run_id": "r1", "planner": None, "target": {"name": "t"}}
    html = render_html([], summary)
    assert "error: the baseline fails its own test" in html
    assert "error: error:" not in html and "planner -" in html


def test_the_charts_axes_and_bars_read_plainly() -> None:
    """report.html's charts (issue 34, item 8): a speedup or time axis does not start below zero;
    a bar dwarfed by the peak line still shows its value."""
    from kernelopt_core import svg_plots

    assert svg_plots.Axes((0, 1), (0.05, 3.0)).y0 == 0.0  # padded, but not below zero
    assert svg_plots.Axes((0, 1), (-2.0, 3.0)).y0 < -2.0  # a signed quantity keeps its pad
    drawn = svg_plots.bars("Roofline", "GB/s", [("baseline", 26.3, "baseline")],
                           [("peak", 4198.0)])
    assert ">26.3</text>" in drawn
    # round ticks (issue 55: they were fractions of the maximum, 0, 1.02, 2.04, ...)
    assert svg_plots.nice_ticks(0.0, 5.1) == [0.0, 2.0, 4.0, 6.0]
    assert svg_plots.nice_ticks(0.93, 1.31) == [0.9, 1.0, 1.1, 1.2, 1.3, 1.4]
    assert svg_plots.nice_ticks(0.0, 4198.0) == [0.0, 1000.0, 2000.0, 3000.0, 4000.0, 5000.0]
    assert ">2,000</text>" in drawn and ">1.02</text>" not in drawn
    # the confirm chart numbers its rounds; the dashed reference line is in the legend
    confirm = svg_plots.lines("Confirm", "round", "ms", {"baseline": [1.0] * 12,
                                                         "candidate": [0.8] * 12}, None, "")
    assert all(f">{r}</text>" in confirm for r in (1, 3, 5, 7, 9, 11, 12)), confirm
    scatter = svg_plots.scatter("Candidates", "candidate", "speedup ×",
                                [(1, 1.2, "accepted", "c1: 1.2×")], 1.0, "baseline (1×)")
    assert "stroke-dasharray" in scatter and ">baseline (1×)</text>" in scatter


def test_a_cpu_runs_html_does_not_speak_of_gpu_seconds() -> None:
    from kernelopt_core.report_html import lock_seconds

    assert lock_seconds({"target": {"device": "cpu"}}) == "s holding the bench lock (CPU)"
    assert lock_seconds({"target": {"device": "cuda"}}) == "GPU-s"
    assert lock_seconds({"target": {}}) == "GPU-s"  # a journal from before the device was kept


def test_a_test_program_the_build_never_made_is_a_config_error_naming_it(tmp_path: Path) -> None:
    """Exit 2 and the path, not "missing prerequisite … install it or put it on PATH"."""
    project = _example(tmp_path)
    toml = project / "kernelopt.toml"
    text = toml.read_text()
    assert "{build}/transpose_test" in text
    toml.write_text(text.replace("{build}/transpose_test", "{build}/transpose_tset"))
    run = kernelopt("run", str(project), "--state-root", str(tmp_path / "s"), cwd=tmp_path)
    out = run.stdout + run.stderr
    assert run.returncode == 2, out
    assert "transpose_tset does not exist" in out and "install" not in out, out
    assert "check the command's path in kernelopt.toml" in out, out


def test_apply_names_the_state_root_it_searched(tmp_path: Path) -> None:
    # a finished run to search among; what it found is not the subject here: the example with
    # its bench's time counted (kernelopt_tests_support) and the shortest search to a verdict
    project = counted_cpu_example(tmp_path / "transpose")
    done = kernelopt("run", str(project), "--state-root", str(tmp_path / "s"), "--iterations", "1",
                     "--final-rounds", "2", "--screen-runs", "1", "--seeds", "1", cwd=tmp_path)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    missed = kernelopt("apply", "zzz", "--state-root", str(tmp_path / "s"), cwd=project)
    assert missed.returncode == 2
    assert f"no run under {tmp_path / 's' / 'runs'} match 'zzz'" in missed.stderr, missed.stderr
    assert "pass its --state-root" in missed.stderr


def test_a_test_program_without_its_execute_bit_is_said_so(tmp_path: Path) -> None:
    """A script the user forgot to chmod: 'not executable', not 'does not exist'."""
    project = _example(tmp_path)
    (project / "check.sh").write_text("#!/bin/sh\nexit 0\n")  # no +x
    toml = project / "kernelopt.toml"
    text = toml.read_text()
    toml.write_text(text.replace('"{build}/transpose_test', '"{repo}/check.sh', 1))
    run = kernelopt("run", str(project), "--state-root", str(tmp_path / "s"), cwd=tmp_path)
    out = run.stdout + run.stderr
    assert run.returncode == 2, out
    assert "check.sh is not executable" in out and "chmod +x" in out, out
