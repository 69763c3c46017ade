"""The triton backend's bench worker for real (Triton's interpreter on CPU torch): one process
per tree serving load, check, bench and sweep requests through the core's Runner."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from kernelopt_triton.backend import TritonBackend, gpu_device
from kernelopt_triton_testpaths import EXAMPLES

from kernelopt_core.journal import Journal
from kernelopt_core.runner import Runner
from kernelopt_core.settings import Settings
from kernelopt_core.target import Tree

pytestmark = pytest.mark.usefixtures("small")


@pytest.fixture
def served(tmp_path: Path):
    original = tmp_path / "original" / "softmax.py"
    original.parent.mkdir()
    shutil.copy(EXAMPLES / "softmax.py", original)
    trees = []
    for role in ("baseline", "candidate"):
        (tmp_path / role).mkdir()
        shutil.copy(original, tmp_path / role / "softmax.py")
        trees.append(Tree(role, tmp_path / role, tmp_path / f"{role}-build"))
    settings = Settings(state_root=tmp_path / "state", seeds=(1, 2))
    target = TritonBackend().discover(original, settings)[0]
    runner = Runner(TritonBackend(), target, settings, Journal(tmp_path / "journal.jsonl"))
    yield runner, trees[0], trees[1]
    runner.close_workers()


@pytest.mark.slow
def test_check_and_bench_are_served_by_one_worker_per_tree(served, tmp_path: Path) -> None:
    runner, baseline, candidate = served
    assert runner.served(baseline) and runner.served(candidate)
    assert runner.check_all(baseline, tmp_path / "log") is None
    readings = [runner.bench(baseline, tmp_path / "log", "screen") for _ in range(2)]
    interpreted = gpu_device() is None
    assert all(r.time_ms > 0 and bool(r.extra.get("interpreted")) == interpreted
               for r in readings)
    assert readings[0].extra["checksum"] == pytest.approx(4.0, rel=1e-5)  # rows sum to 1
    # a wrong candidate: its check fails with the harness's own words, the baseline is served on
    path = candidate.src / "softmax.py"
    path.write_text(path.read_text().replace("tl.exp(x - m) / s", "tl.exp(x - m) / s * 1.01"))
    failed = runner.check_all(candidate, tmp_path / "log")
    assert failed is not None and "MISMATCH" in failed[1].stderr
    assert runner.bench(baseline, tmp_path / "log", "screen").time_ms > 0
    assert set(runner.workers) == {"baseline", "candidate"}
    pids = {worker.pid for _digest, worker in runner.workers.values()}
    assert len(pids) == 2


@pytest.mark.slow
def test_sweep_screens_configurations_in_one_process(served, tmp_path: Path) -> None:
    runner, _baseline, candidate = served
    knob = next(k.name for k in runner.target.knobs if k.name.startswith("BLOCK_SIZE"))
    results = runner.sweep(candidate, [{knob: "256"}, {knob: "64"}, {knob: "3"}],
                           tmp_path / "log")
    assert results is not None and len(results) == 3
    assert results[0]["ok"] and results[1]["ok"] and results[0]["time_ms"] > 0
    assert not results[2]["ok"] and results[2]["error"]  # 3 is no power of two: cannot compile
    assert all(r["reference_ms"] > 0 for r in results)
    assert len({w.pid for _d, w in runner.workers.values()}) == 1  # one process for all


def test_sweep_refuses_unknown_knobs(served, tmp_path: Path) -> None:
    from kernelopt_core.errors import UsageError

    runner, _baseline, candidate = served
    with pytest.raises(UsageError, match="unknown knob"):
        runner.sweep(candidate, [{"NOT_A_KNOB": "1"}], tmp_path / "log")


@pytest.mark.slow
def test_a_configuration_past_its_deadline_fails_alone(served, tmp_path: Path) -> None:
    """A configuration that takes too long (here: its module sleeps on import, as a huge tile
    can compile for minutes) fails on its own; the worker screens the next one."""
    import attrs

    runner, _baseline, candidate = served
    from kernelopt_core.planners.tuner_options import TunerOptions

    runner.settings = attrs.evolve(runner.settings, tables={
        **runner.settings.tables, "tuner": TunerOptions(screen_config_timeout_s=2.0)})
    path = candidate.src / "softmax.py"
    path.write_text(path.read_text() + '\nimport time as _time\n'
                    'if "BLOCK_SIZE=" + "1024," in open(__file__).read():\n    _time.sleep(60)\n')
    knob = next(k.name for k in runner.target.knobs if k.name.startswith("BLOCK_SIZE"))
    results = runner.sweep(candidate, [{knob: "1024"}, {knob: "256"}], tmp_path / "log")
    assert results is not None
    assert not results[0]["ok"] and "longer than 2 s" in results[0]["error"]
    assert results[1]["ok"] and results[1]["time_ms"] > 0, results[1]
    # an interrupted configuration may leave the process unusable for the tree's readings:
    # the worker is retired, and the next request starts a fresh one
    assert "candidate" not in runner.workers
    again = runner.sweep(candidate, [{knob: "256"}], tmp_path / "log")
    assert again is not None and again[0]["ok"]
