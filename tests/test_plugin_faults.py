"""Plugin authors' faults (issue 35): checked at registration, contained to their scope, named
with the plugin's package and version; and a plugin's table in a cmake project's kernelopt.toml.

The plugins here are installed distributions as importlib.metadata finds them (a dist-info
with METADATA and entry_points.txt on the child's path), run through the real CLI in a child
process on a copy of examples/cmake-cpu (real CMake build and test; the counted bench clock)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from kernelopt_tests_support import (
    counted_cpu_example,
    events,
    install_plugin,
    kernelopt,
    last_run,
    summary,
)

RAISER = '''"""kernelopt-raiser: a candidate gate that raises on every call, with its own table,
and a profiler whose wrap raises."""
import attrs
from kernelopt_core.api import hookimpl, option, option_table


@option_table("raiser")
@attrs.frozen
class RaiserOptions:
    message: str = option("no reason given", "what the gate's exception says")


class RaisingGate:
    name = "raiser"
    phase = "candidate"

    def evaluate(self, ctx):
        raise ZeroDivisionError(ctx.settings.section(RaiserOptions).message)


class RaisingProfiler:
    name = "raiser"

    def unavailable_reason(self):
        return None

    def wrap(self, command, out_dir):
        raise OSError("no counters on this machine")

    def parse(self, out_dir):
        return {}


@hookimpl
def kernelopt_register_gates():
    return [RaisingGate()]


@hookimpl
def kernelopt_register_profilers():
    return [RaisingProfiler()]


@hookimpl
def kernelopt_option_tables():
    return [RaiserOptions]
'''

MALFORMED = '''"""kernelopt-malformed: three objects kernelopt cannot use."""
from kernelopt_core.api import hookimpl


class NoCheck:  # a backend without check()
    name = "nocheck"

    def detect(self, path):
        return 0.0

    def discover(self, path, settings):
        return []

    def build(self, target, tree):
        return []

    def bench(self, target, tree):
        return None

    def engine(self, target, tree):
        return None


class Plural:  # a phase no gate list has
    name = "plural"
    phase = "candidates"

    def evaluate(self, ctx):
        raise AssertionError("never registered")


class Build:  # a built-in's name
    name = "build"
    phase = "candidate"

    def evaluate(self, ctx):
        raise AssertionError("never registered")


@hookimpl
def kernelopt_register_backends():
    return [NoCheck()]


@hookimpl
def kernelopt_register_gates():
    return [Plural(), Build()]
'''


FLAKY = '''"""kernelopt-flaky: a backend whose build step raises."""
from pathlib import Path

from kernelopt_core.api import Command, Knob, Target, hookimpl


class Flaky:
    name = "flaky"

    def detect(self, path):
        return 1.0 if (Path(path) / "flaky.txt").is_file() else 0.0

    def discover(self, path, settings):
        return [Target(backend="flaky", name="k", root=Path(path).resolve(),
                       editable=("flaky.txt",),
                       knobs=(Knob("N", "flaky.txt", ("1", "2"), r"^(\\d+)"),))]

    def build(self, target, tree):
        return {}["the build step of a plugin"]

    def check(self, target, tree, seed):
        return Command(("true",), tree.src)

    def bench(self, target, tree):
        return None

    def engine(self, target, tree):
        return None


@hookimpl
def kernelopt_register_backends():
    return [Flaky()]
'''


def _env(site: Path) -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}


def test_a_malformed_plugin_is_failed_at_registration_and_runs_go_on(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_plugin(site, "kernelopt-malformed", "malformed_plugin", MALFORMED)
    listed = kernelopt("plugins", cwd=tmp_path, env=_env(site))
    out = listed.stdout + listed.stderr
    assert listed.returncode == 1, out  # like `pip check`: a CI notices
    row = next(line for line in out.splitlines() if line.startswith("malformed_plugin "))
    assert "FAILED" in row and "kernelopt-malformed" in row, row
    assert "backend 'nocheck': no `check` method" in out, out
    assert "phase 'candidates' is not one of 'candidate', 'final'" in out, out
    assert "gate 'build' is already offered by kernelopt" in out, out
    core = next(line for line in out.splitlines() if line.startswith("core-gates "))
    assert " ok " in core and "build" in core, core  # the built-in keeps its name
    # a run still works; naming the left-out gate says why it is not there
    project = counted_cpu_example(tmp_path / "project")
    run = kernelopt("run", str(project), "--iterations", "1", "--final-rounds", "2",
                    "--screen-runs", "2", "--seeds", "1", "--state-root", str(tmp_path / "s"),
                    cwd=tmp_path, env=_env(site))
    assert run.returncode in (0, 1), run.stdout + run.stderr
    refused = kernelopt("run", str(project), "--gates", "build,correctness,plural",
                        "--state-root", str(tmp_path / "s"), cwd=tmp_path, env=_env(site))
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "gate 'plural' was left out at registration: plugin kernelopt-malformed 0.3" in \
        refused.stderr, refused.stderr


def test_a_gate_that_raises_fails_each_candidate_there_and_the_run_ends_with_a_verdict(
        tmp_path: Path) -> None:
    """Its table and [agents] in the project's kernelopt.toml are accepted by the cmake
    descriptor and take effect; each candidate is rejected at the gate with the exception and
    the plugin's package and version; the verdict is reached (fallback, exit 1), not exit 4.
    Its profiler's fault drops the profile with a warning naming it; the run goes on."""
    site = tmp_path / "site"
    install_plugin(site, "kernelopt-raiser", "raiser_plugin", RAISER)
    project = counted_cpu_example(tmp_path / "project")
    toml = project / "kernelopt.toml"
    toml.write_text(toml.read_text() + '\n[agents]\nretries = 5\n\n[raiser]\nmessage = '
                    '"divided by the number of reviewers"\n\n[gates]\n'
                    'candidate = ["build", "correctness", "raiser", "screen"]\n')
    state = tmp_path / "s"
    run = kernelopt("run", str(project), "--iterations", "2", "--final-rounds", "2",
                    "--screen-runs", "2", "--seeds", "1", "--profiler", "raiser",
                    "--state-root", str(state), cwd=tmp_path, env=_env(site))
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "bug in kernelopt" not in out, out
    assert ("warning: no raiser profile of the baseline: raiser's wrap failed: OSError: no "
            "counters on this machine (plugin kernelopt-raiser 0.3)") in run.stderr, run.stderr
    run_dir = last_run(state)
    [profile] = [e for e in events(run_dir) if e["event"] == "profile"]
    assert "OSError" in profile["metrics"]["error"], profile
    assert summary(run_dir)["status"] == "fallback"
    header = events(run_dir)[0]
    assert "kernelopt.toml" in header["origins"]["agents.retries"], header["origins"]
    assert "kernelopt.toml" in header["origins"]["raiser.message"], header["origins"]
    results = [e for e in events(run_dir) if e["event"] == "candidate_result"]
    assert len(results) == 2 and all(r["failed_gate"] == "raiser" for r in results), results
    for result in results:
        assert result["reason"] == ("ZeroDivisionError: divided by the number of reviewers "
                                    "(plugin kernelopt-raiser 0.3)"), result
    report = (run_dir / "report.md").read_text()
    assert "raiser" in report and "kernelopt-raiser 0.3" in report, report
    assert json.loads((run_dir / "summary.json").read_text())["candidates"]["accepted"] == 0


def test_a_backend_that_raises_in_the_baselines_build_stops_the_run_naming_it(
        tmp_path: Path) -> None:
    """Exit 3 and the plugin's package and version, not 4 and "a bug in kernelopt"."""
    site = tmp_path / "site"
    install_plugin(site, "kernelopt-flaky", "flaky_plugin", FLAKY)
    project = tmp_path / "project"
    project.mkdir()
    (project / "flaky.txt").write_text("1\n")
    run = kernelopt("run", str(project), "--state-root", str(tmp_path / "s"), cwd=tmp_path,
                    env=_env(site))
    out = run.stdout + run.stderr
    assert run.returncode == 3, out
    assert "plugin flaky_plugin (kernelopt-flaky 0.3) raised KeyError" in out, out
    assert "bug in kernelopt" not in out, out


def test_the_guards_contain_a_plugins_faults_and_pass_kernelopts_own_errors() -> None:
    import copy

    import pytest

    from kernelopt_core.errors import PlannerError, PrerequisiteError
    from kernelopt_core.gates.base import FALLBACK
    from kernelopt_core.plugin_guard import GuardedGate, GuardedPlanner

    class Gate:
        name, phase = "odd", "final"

        def __init__(self, answer):
            self.answer = answer

        def evaluate(self, ctx):
            if isinstance(self.answer, BaseException):
                raise self.answer
            return self.answer

    origin = "plugin kernelopt-odd 1.0"
    truthy = GuardedGate(Gate(True), origin).evaluate(None)  # type: ignore[arg-type]
    assert (truthy.passed, truthy.failed_verdict) == (False, FALLBACK)
    assert "returned True, not a GateResult (plugin kernelopt-odd 1.0)" in truthy.reason
    broken = GuardedGate(Gate(KeyError("x")), origin)
    assert broken.evaluate(None).reason == "KeyError: 'x' (plugin kernelopt-odd 1.0)"  # type: ignore[arg-type]
    assert (broken.name, broken.phase) == ("odd", "final") and copy.copy(broken).name == "odd"
    with pytest.raises(PrerequisiteError):  # kernelopt's own exit (3) is not the gate's row
        GuardedGate(Gate(PrerequisiteError("ncu missing")), origin).evaluate(None)  # type: ignore[arg-type]

    class Planner:
        name = "odd"

        def propose(self, ctx, parent, count):
            return []

        def observe(self, ctx, proposal, outcome):
            raise ValueError("bad outcome")

    planner = GuardedPlanner(Planner(), origin)
    planner.observe(None, None, {})  # the candidate's result stands ...
    with pytest.raises(PlannerError, match="observe raised ValueError: bad outcome .plugin"):
        planner.propose(None, None, 1)  # ... and the next attempt is the failed one
    assert planner.propose(None, None, 1) == []


def test_a_trylast_gate_cannot_take_a_builtins_name() -> None:
    from kernelopt_core.hookspecs import hookimpl
    from kernelopt_core.testing import plugin_host

    class Late:
        name, phase = "build", "candidate"

        def evaluate(self, ctx):
            raise AssertionError("never registered")

    class Plugin:
        @hookimpl(trylast=True)
        def kernelopt_register_gates(self):
            return [Late()]

    host = plugin_host(Plugin())
    assert host.owner("gates", "build") == "core-gates"
    failed = [i for i in host.plugin_infos() if i.error]
    assert [i.name for i in failed] == ["test-plugin-0"], failed
