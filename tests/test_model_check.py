"""The model check (kernelopt_core.model_check): after the runs of a program's kernels, the whole
program measured every way with every winner in place, journaled in each run and shown in its
summary.json, report.md and report.html and on the console.

A real loop over the chunk project (kernelopt_core.testing) with a backend that also offers
``model_compare``: its program imports the baseline kernel and the winner's (the files the core
took from the run's workspace tag) and times both with the counted clock, so the numbers are
deterministic; the core parses its marked line and computes the speedups and Amdahl."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import attrs
import pytest
from click.testing import CliRunner

from kernelopt_core import cli as cli_module
from kernelopt_core import model_check
from kernelopt_core.cli import cli
from kernelopt_core.hookspecs import hookimpl
from kernelopt_core.journal import read
from kernelopt_core.settings import Settings
from kernelopt_core.target import Command, Target
from kernelopt_core.testing import COUNTED_CLOCK, ScriptedBackend, plugin_host, write_chunk_project

SHARE = 0.4
PROGRAM = COUNTED_CLOCK + '''
import importlib.util, json, math, random, sys

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
    return module

xs = [random.Random(5).uniform(-1, 1) for _ in range(20000)]
kernels = {"default": load(sys.argv[1], "base")}
if len(sys.argv) > 2:
    kernels["kernelopt"] = load(sys.argv[2], "winner")
# the rest of the program: as much again as the kernel at CHUNK = 1 (share 0.5 of default's)
rest, _ = counted_ms(kernels["default"].total, [0.5] * 10000)
modes = {"eager": {"ms": 3 * rest, "spread_pct": 0.0, "match": True, "windows": 30}}
for label, kernel in kernels.items():
    ms, got = counted_ms(kernel.total, list(xs))
    modes[label] = {"ms": ms + rest, "spread_pct": 0.0, "windows": 30,
                    "match": abs(got - math.fsum(xs)) <= 1e-9 * math.fsum(map(abs, xs))}
print("program log", json.dumps({"not": "the result"}))
print(json.dumps({"kernelopt_model": 1, "modes": modes, "baseline": "default",
                  "kernelopt": "kernelopt" if "kernelopt" in modes else "default",
                  "detail": "30 windows of the whole chunk program"}))
'''


class ModelBackend(ScriptedBackend):
    """The chunk project as one kernel of a program (its share known), with a model check."""

    name = "modelled"

    def __init__(self, program: str = PROGRAM) -> None:
        self.program = program

    def discover(self, path: Path, settings: Settings) -> list[Target]:
        return [attrs.evolve(t, time_share=SHARE) for t in super().discover(path, settings)]

    def model_compare(self, targets: list[Target], winners: dict[str, Path],
                      out_dir: Path) -> Command | None:
        assert out_dir.is_dir()  # the core made it: the command runs there (an H200 run found it missing)
        (out_dir / "program.py").write_text(self.program)
        argv = [sys.executable, str(out_dir / "program.py"), str(targets[0].root / "kernel.py")]
        argv += [str(winners[t.name] / "kernel.py") for t in targets if t.name in winners]
        return Command(tuple(argv), out_dir, timeout_s=120)


class Plugin:
    def __init__(self, backend: ModelBackend) -> None:
        self.backend = backend

    @hookimpl
    def kernelopt_register_backends(self) -> list[object]:
        return [self.backend]


FLAGS = ("--backend", "modelled", "--iterations", "4", "--final-rounds", "3", "--seeds", "1",
         "--final-gates", "confirm,shape")

# one worker for the module under pytest-xdist: optimized_run (a whole run, ~7 s on the 2-core
# machine) is then made once, not once in each worker that draws one of its tests
pytestmark = pytest.mark.xdist_group("model-check")


@pytest.fixture(scope="module")
def optimized_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """`kernelopt run` of the program's kernel, model check on (the default): its run dir,
    the state root and the console output."""
    root = tmp_path_factory.mktemp("model")
    project = write_chunk_project(root / "project")
    state = root / "state"
    saved = cli_module.cli.host
    cli_module.cli.host = plugin_host(Plugin(ModelBackend()))
    try:
        result = CliRunner().invoke(cli, ["run", str(project), *FLAGS, "--state-root", str(state)])
    finally:
        cli_module.cli.host = saved
    assert result.exit_code == 0, result.output
    [run_dir] = list((state / "runs").iterdir())
    return run_dir, state, result.output


def test_the_whole_program_with_the_winner_in_place_is_in_every_report(optimized_run) -> None:
    run_dir, _state, output = optimized_run
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "optimized"
    model = summary["model"]
    assert model["winners"] == ["chunk-sum"] and model["runs"] == [run_dir.name]
    modes = model["modes"]
    assert list(modes) == ["eager", "default", "kernelopt"] and model["match"] is True
    # the winner's kernel really ran in the program: faster than the baseline's
    assert modes["kernelopt"]["ms"] < modes["default"]["ms"]
    assert model["measured_speedup"] == pytest.approx(modes["default"]["ms"] / modes["kernelopt"]["ms"])
    assert model["versus"]["eager"] == pytest.approx(modes["eager"]["ms"] / modes["kernelopt"]["ms"])
    assert model["amdahl_predicted"] == pytest.approx(
        1 / (1 - SHARE * (1 - 1 / summary["speedup"])))
    assert summary["status"] == "optimized"  # information only: the verdict stands
    markdown = (run_dir / "report.md").read_text()
    assert "## The whole model" in markdown and "| kernelopt (kernelopt) |" in markdown
    assert "The check: 30 windows of the whole chunk program." in markdown  # the backend's words
    assert "The whole model" in (run_dir / "report.html").read_text()
    assert "whole model:" in output and "predicted from the kernels (Amdahl)" in output
    [event] = [e for e in read(run_dir / "journal.jsonl") if e["event"] == "model_check"]
    assert event["measured_speedup"] == model["measured_speedup"]


def test_a_failing_model_check_is_reported_and_changes_no_verdict(optimized_run,
                                                                    tmp_path: Path) -> None:
    shared, state, _ = optimized_run
    run_dir = tmp_path / "runs" / shared.name  # a copy: the other tests read the run itself
    shutil.copytree(shared, run_dir)
    target = ModelBackend().discover(write_chunk_project(tmp_path / "p"), Settings())[0]
    broken = ModelBackend('import sys; print("no result line"); sys.exit(3)')
    record = model_check.run(broken, [model_check.Finished(target, run_dir)], state,
                             tmp_path / "check")
    assert record is not None and "exited 3: no result line" in record["error"]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "optimized" and summary["model"]["error"] == record["error"]
    assert "Not measured" in (run_dir / "report.md").read_text()


def test_another_mode_measured_faster_is_what_kernelopt_returns_and_says_why(
        optimized_run, tmp_path: Path) -> None:
    """Issue 53: the backend's line names another mode as kernelopt's (the same process measured
    it faster than the winners' compile): the record, summary.json, report.md and the console
    line say which and why, and the speedups are against it."""
    shared, state, _ = optimized_run
    run_dir = tmp_path / "runs" / shared.name
    shutil.copytree(shared, run_dir)
    target = ModelBackend().discover(write_chunk_project(tmp_path / "p"), Settings())[0]
    why = "graphs ran 1.250x as fast as kernelopt (±0.5 %, 10 paired rounds, outputs matched eager)"
    line = {"kernelopt_model": 1, "baseline": "default", "kernelopt": "graphs",
            "choice": {"over": "kernelopt", "why": why},
            "modes": {m: {"ms": ms, "spread_pct": 0.5, "match": True, "windows": 30}
                      for m, ms in (("default", 2.0), ("kernelopt", 1.9), ("graphs", 1.52))}}
    program = ModelBackend(f"import json; print(json.dumps({line!r}))")
    record = model_check.run(program, [model_check.Finished(target, run_dir)], state,
                             tmp_path / "check")
    assert record is not None and record["kernelopt"] == "graphs" and record["choice"] == why
    assert record["measured_speedup"] == pytest.approx(2.0 / 1.52)
    model = json.loads((run_dir / "summary.json").read_text())["model"]
    assert model["choice"] == why and model["versus"]["kernelopt"] == pytest.approx(1.9 / 1.52)
    markdown = (run_dir / "report.md").read_text()
    assert f"kernelopt returns graphs: {why}." in markdown and "| graphs (kernelopt) |" in markdown
    from kernelopt_core.model_view import verdict_line
    assert f"(graphs: {why})" in verdict_line(record)


def test_no_model_check_flag_and_backends_without_one(tmp_path: Path) -> None:
    project = write_chunk_project(tmp_path / "project")
    saved = cli_module.cli.host
    cli_module.cli.host = plugin_host(Plugin(ModelBackend()))
    try:
        result = CliRunner().invoke(cli, ["run", str(project), *FLAGS[:2], "--iterations", "1",
                                          "--final-rounds", "2", "--seeds", "1",
                                          "--no-model-check", "--state-root", str(tmp_path / "s")])
    finally:
        cli_module.cli.host = saved
    assert result.exit_code in (0, 1), result.output
    [run_dir] = list((tmp_path / "s" / "runs").iterdir())
    assert json.loads((run_dir / "summary.json").read_text())["model"] is None
    assert "model check" not in result.output
    assert model_check.offered(ScriptedBackend()) is False


@pytest.mark.parametrize(("stdout", "why"), [
    ('{"time_ms": 1}', "0 JSON lines marked"),
    ('{"kernelopt_model": 1, "modes": {"a": {"ms": 1}}, "baseline": "a", "kernelopt": "a"}\n' * 2,
     "2 JSON lines marked"),
    ('{"kernelopt_model": 1, "error": "CUDA out of memory"}', "CUDA out of memory"),
    ('{"kernelopt_model": 1, "modes": {}}', '"modes" is missing or empty'),
    ('{"kernelopt_model": 1, "modes": {"a": {"ms": -1}}, "baseline": "a", "kernelopt": "a"}',
     "not a positive finite number"),
    ('{"kernelopt_model": 1, "modes": {"a": {"ms": true}}, "baseline": "a", "kernelopt": "a"}',
     "not a positive finite number"),
    ('{"kernelopt_model": 1, "modes": {"a": {"ms": 1}}, "baseline": "b", "kernelopt": "a"}',
     '"baseline" \'b\' is not one of the modes'),
])
def test_a_result_line_that_breaks_the_contract_is_refused(stdout: str, why: str) -> None:
    line, reason = model_check.parse(stdout)
    assert line is None and why in reason


def test_a_campaign_checks_each_model_once_with_all_its_runs(optimized_run, tmp_path: Path) -> None:
    """commands.campaign after its jobs: the model PATH's runs' winners together, journaled in the
    campaign and in its summary.json's models (the jobs themselves ran --no-model-check)."""
    from kernelopt_core import campaign
    from kernelopt_core.commands import campaign as campaign_cmd
    from kernelopt_core.journal import Journal

    shared, _state, _ = optimized_run
    state = tmp_path / "state"
    shutil.copytree(shared, state / "runs" / shared.name)
    target = ModelBackend().discover(write_chunk_project(tmp_path / "p"), Settings())[0]
    directory = state / "campaigns" / "c"
    ledger = Journal(directory / "campaign.jsonl")
    ledger.write("campaign", name="c", executor="local", gpus=["0"], jobs=[["kernelopt"]],
                 entries=[{"key": shared.name, "path": "/m.py", "target": target.name,
                           "backend": "modelled", "share": SHARE, "headroom": 1.0,
                           "headroom_known": False, "share_known": True}])
    ledger.write("job", key=shared.name, returncode=0, output_tail="", worker="local", gpu="0",
                 seconds=1.0, attempts=1, summary=json.loads((shared / "summary.json").read_text()))
    ledger.close()
    outcome = campaign.summarize(directory / "campaign.jsonl")
    assert campaign_cmd._check_models("c", [("/m.py", [target])], [(ModelBackend(), True)],
                                      outcome, state)
    models = campaign.write_summary(directory)["models"]
    measured = models["/m.py"]["measured"]
    assert measured["runs"] == [shared.name] and measured["winners"] == ["chunk-sum"]
    assert measured["measured_speedup"] > 1.0 and "model_check" in (
        directory / "campaign.jsonl").read_text()
    assert not campaign_cmd._check_models("c", [("/m.py", [target])], [(ModelBackend(), False)],
                                          outcome, state)  # --no-model-check
    assert all("--no-model-check" in job.argv for job in campaign.jobs(
        campaign.plan("c", [("/m.py", [target])], state), state, [], {"c-01": []}, tmp_path))
