"""The profiler around a real command, then in a whole run: its columns in report.md."""

from __future__ import annotations

import sys
from pathlib import Path

from kernelopt_example_profiler import RusageProfiler

from kernelopt_core.api import Command, run_process
from kernelopt_core.testing import last_summary, run_kernelopt, write_chunk_project


def test_it_wraps_a_command_and_reads_what_it_used(tmp_path: Path) -> None:
    profiler = RusageProfiler()
    busy = Command((sys.executable, "-c", "sum(range(3_000_000)); print('done')"), tmp_path)
    done = run_process(profiler.wrap(busy, tmp_path))
    assert done.returncode == 0 and "done" in done.stdout
    parsed = profiler.parse(tmp_path)
    (bench,) = parsed["kernels"]
    assert bench["launches"] == 1 and bench["metrics"]["rusage.cpu_s"] > 0
    assert [c["header"] for c in parsed["columns"]] == ["CPU s", "CPU/wall", "peak RSS MiB"]
    assert "error" in profiler.parse(tmp_path / "nothing")


def test_a_run_shows_its_columns_in_the_report(tmp_path: Path) -> None:
    project = write_chunk_project(tmp_path / "p")
    done = run_kernelopt("run", project, "--profiler", "rusage", "--iterations", "2",
                         "--final-rounds", "2", "--seeds", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert last_summary(tmp_path / ".kernelopt")["status"] == "optimized"
    report = next((tmp_path / ".kernelopt" / "runs").glob("*/report.md")).read_text()
    assert "## Profile (rusage" in report and "| CPU s | CPU/wall | peak RSS MiB |" in report
