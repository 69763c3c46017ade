"""A real campaign of two projects through the executor: each job a real run."""

from __future__ import annotations

import json
from pathlib import Path

from kernelopt_core.testing import run_kernelopt, write_chunk_project

RUN_ARGS = "--iterations 2 --patience 2 --final-rounds 2 --seeds 1"


def test_a_campaign_runs_every_job_through_it(tmp_path: Path) -> None:
    for name in ("a", "b"):
        write_chunk_project(tmp_path / name)
    state = tmp_path / "state"
    done = run_kernelopt("campaign", "a", "b", "--executor", "serial", "--gpus", "0,1",
                         "--name", "two", "--run-args", RUN_ARGS, "--state-root", state,
                         cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads((state / "campaigns" / "two" / "summary.json").read_text())
    assert [r["status"] for r in summary["results"]] == ["optimized", "optimized"]
    assert {r["gpu"] for r in summary["results"]} == {"0"}  # one slot, one job at a time
    assert all((state / "campaigns" / "two" / "logs" / f"{r['run']}.log").is_file()
               for r in summary["results"])
