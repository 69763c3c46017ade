"""The backend with kernelopt's testing kit (``pip install kernelopt[testing]``): a real
project on disk, the plugin host a run sees, the whole loop through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

from kernelopt_example_backend import ScriptDirBackend

from kernelopt_core.testing import plugin_host, run_kernelopt, write_chunk_project


def scriptdir_project(root: Path) -> Path:
    """The testing kit's chunk project, as a scriptdir project: its CHUNK marked a knob."""
    write_chunk_project(root)
    (root / "kernelopt.toml").unlink()  # no descriptor: the scriptdir backend claims it
    kernel = root / "kernel.py"
    kernel.write_text(kernel.read_text().replace("CHUNK = 1\n", "CHUNK = 1  # knob\n"))
    return root


def test_it_claims_a_scriptdir_project_and_finds_its_knob(tmp_path: Path) -> None:
    project = scriptdir_project(tmp_path / "sum")
    backends = plugin_host(autoload=True).registry("backends")
    assert isinstance(backends["scriptdir"], ScriptDirBackend)
    assert backends["scriptdir"].detect(project) == 0.5
    assert backends["scriptdir"].detect(tmp_path) == 0.0
    (target,) = backends["scriptdir"].discover(project, None)
    assert [k.name for k in target.knobs] == ["CHUNK"] and "256" in target.knobs[0].values


def test_a_run_ends_optimized(tmp_path: Path) -> None:
    project = scriptdir_project(tmp_path / "sum")
    done = run_kernelopt("run", project, "--iterations", "3", "--final-rounds", "2", "--seeds", "1",
                         cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "(scriptdir backend)" in done.stderr
    (summary,) = (tmp_path / ".kernelopt" / "runs").glob("*/summary.json")
    assert json.loads(summary.read_text())["status"] == "optimized"
