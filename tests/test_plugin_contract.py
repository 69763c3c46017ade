"""A plugin author's mistakes end as exit 3 naming the plugin and its package, never as exit 4
"a bug in kernelopt" (issue 55): a backend hook that returns the wrong type, a record made with
a wrong field type, a plugin that fails to load under strict mode; and api.run's keywords.

The plugins are installed distributions as importlib.metadata finds them (a dist-info with
METADATA and entry_points.txt on the child's path), run through the real CLI in a child."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from kernelopt_tests_support import install_plugin, kernelopt

from kernelopt_core.api import Command, Knob, Target, Tree, UsageError, run
from kernelopt_core.errors import PluginError
from kernelopt_core.plugin_checks import returned

WRONG = '''"""kernelopt-wrong: a backend whose hooks return the wrong types, chosen by wrong.txt."""
from pathlib import Path

from kernelopt_core.api import Command, Knob, Target, hookimpl

MISTAKE = (Path.cwd() / "mistake.txt").read_text().strip() if (Path.cwd() / "mistake.txt").is_file() else ""


class Wrong:
    name = "wrong"

    def detect(self, path):
        return 1.0 if (Path(path) / "wrong.txt").is_file() else 0.0

    def discover(self, path, settings):
        if MISTAKE == "discover":
            return {"k": "wrong.txt"}
        editable = "wrong.txt" if MISTAKE == "record" else ("wrong.txt",)
        return [Target(backend="wrong", name="k", root=Path(path).resolve(), editable=editable,
                       knobs=(Knob("N", "wrong.txt", ("1", "2"), r"^(\\d+)"),))]

    def build(self, target, tree):
        return "make" if MISTAKE == "build" else []

    def check(self, target, tree, seed):
        return Command(("true",), tree.src)

    def bench(self, target, tree):
        return "./bench" if MISTAKE == "bench" else None

    def engine(self, target, tree):
        return None


@hookimpl
def kernelopt_register_backends():
    return [Wrong()]
'''


@pytest.fixture
def wrong(tmp_path: Path) -> tuple[Path, Path]:
    site = tmp_path / "site"
    install_plugin(site, "kernelopt-wrong", "wrong_plugin", WRONG)
    project = tmp_path / "project"
    project.mkdir()
    (project / "wrong.txt").write_text("1\n")
    return site, project


@pytest.mark.parametrize("mistake, said", [
    ("discover", "the wrong backend's discover() returned dict {'k': 'wrong.txt'}, not a list of "
                 "Target (kernelopt-wrong 0.3)"),
    ("build", "the wrong backend's build() returned str 'make', not a list of Command "
              "(kernelopt-wrong 0.3)"),
    ("bench", "the wrong backend's bench() returned str './bench', not a Command or None "
              "(kernelopt-wrong 0.3)"),
    ("record", "Target.editable must be a tuple of strings, got str 'wrong.txt' (one path: "
               "('wrong.txt',))"),
])
def test_a_backend_breaking_its_contract_is_exit_3_naming_its_package(
        wrong: tuple[Path, Path], tmp_path: Path, mistake: str, said: str) -> None:
    site, project = wrong
    (tmp_path / "mistake.txt").write_text(mistake)
    proc = kernelopt("run", str(project), "--state-root", str(tmp_path / "s"), cwd=tmp_path,
                     env={"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 3, out
    assert said in out, out
    assert "kernelopt: plugin fault: " in out and "missing prerequisite" not in out, out
    assert "bug in kernelopt" not in out, out
    if mistake == "record":  # the plugin's own fault, named by its package
        assert "plugin wrong_plugin (kernelopt-wrong 0.3) raised TypeError" in out, out


def test_a_plugin_that_fails_to_load_under_strict_mode_is_exit_3(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_plugin(site, "kernelopt-broken", "broken_plugin", "raise ImportError('no such thing')\n")
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
           "KERNELOPT_STRICT_PLUGINS": "1"}
    proc = kernelopt("plugins", cwd=tmp_path, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 3, out
    assert "kernelopt: plugin fault: " in out, out
    assert "plugin 'broken_plugin' (kernelopt-broken 0.3) failed to load: ImportError: no such thing" \
        in out, out
    assert "bug in kernelopt" not in out, out


def test_records_check_their_field_types(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"Target.editable must be a tuple of strings, got str 'k.cu'"):
        Target(backend="b", name="n", root=tmp_path, editable="k.cu")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Target.bytes_moved must be int or None, got str '12'"):
        Target(backend="b", name="n", root=tmp_path, editable=("k.cu",),
               bytes_moved="12")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Target.flops must be int or None, got bool True"):
        Target(backend="b", name="n", root=tmp_path, editable=("k.cu",), flops=True)
    with pytest.raises(TypeError, match=r"Command.env must be a dict of str -> str"):
        Command(("true",), tmp_path, env={"N": 4})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="Command.argv is empty"):
        Command((), tmp_path)
    with pytest.raises(TypeError, match=r"Knob.values must be a tuple of strings"):
        Knob("N", "k.cu", (16, 32), r"N (\d+)")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Tree.src must be Path"):
        Tree("baseline", 3, tmp_path)  # type: ignore[arg-type]
    # a list is taken for a tuple, a string for a path
    target = Target(backend="b", name="n", root=str(tmp_path), editable=["k.cu"])  # type: ignore[arg-type]
    assert target.editable == ("k.cu",) and target.root == tmp_path


def test_returned_names_the_hook_and_the_package() -> None:
    class Backend:
        name = "mine"

    with pytest.raises(PluginError, match=r"the mine backend's check\(\) returned NoneType None, "
                                          r"not a Command \(module test_plugin_contract\)"):
        returned(Backend(), "check", None)
    command = Command(("true",), Path("."))
    assert returned(Backend(), "build", [command]) == [command]
    assert PluginError("x").exit_code == 3


def test_api_run_refuses_a_keyword_it_does_not_know(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"unknown setting 'iteration' \(did you mean 'iterations'\?\)"):
        run(tmp_path, iteration=3)


def test_a_run_names_the_plugins_that_failed_to_load(tmp_path: Path) -> None:
    from kernelopt_tests_support import counted_cpu_example

    site = tmp_path / "site"
    install_plugin(site, "kernelopt-broken", "broken_plugin", "raise ImportError('no such thing')\n")
    # the CPU example, its bench's time counted (the run's verdict is not the subject here) and
    # the shortest search that still ends a whole run
    project = counted_cpu_example(tmp_path / "project")
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    proc = kernelopt("run", str(project), "--state-root", str(tmp_path / "s"), "--iterations", "1",
                     "--final-rounds", "2", "--screen-runs", "1", "--seeds", "1", cwd=tmp_path,
                     env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode in (0, 1), out
    assert "plugin broken_plugin (kernelopt-broken 0.3) is not loaded: ImportError: no such thing" \
        in out, out


def test_a_descriptor_naming_a_backend_that_failed_to_load_says_so(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_plugin(site, "kernelopt-broken", "broken_plugin", "raise ImportError('no such thing')\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "kernelopt.toml").write_text('backend = "broken_plugin"\n')
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    proc = kernelopt("run", str(project), "--state-root", str(tmp_path / "s"), cwd=tmp_path, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 3, out
    assert ("backend 'broken_plugin': plugin broken_plugin (kernelopt-broken 0.3) failed: "
            "ImportError: no such thing") in out, out
    assert "is not installed" not in out, out


def test_the_registration_checks_are_read_from_the_protocols() -> None:
    """plugin_checks holds no table of its own (issue 56): each kind's (attribute, arity) list
    is its protocol's annotated attributes, then its methods with the arguments the core
    passes; a method added to a protocol is checked with no other change."""
    from typing import Protocol

    from kernelopt_core import hookspecs, plugin_checks

    assert plugin_checks.REQUIRED["gates"] == (("name", None), ("phase", None), ("evaluate", 1))
    assert plugin_checks.REQUIRED["backends"] == (
        ("name", None), ("detect", 1), ("discover", 2), ("build", 2), ("check", 3),
        ("bench", 2), ("engine", 2))
    assert plugin_checks.REQUIRED["planners"] == (
        ("name", None), ("unavailable_reason", 2), ("propose", 3), ("observe", 3))
    assert plugin_checks.REQUIRED["llm_providers"] == (("name", None), ("base_url", None))
    assert plugin_checks.members(hookspecs.Profiler) == plugin_checks.REQUIRED["profilers"]

    class Grown(Protocol):
        name: str

        def measure(self, ctx: object, extra: int) -> None: ...

    assert plugin_checks.members(Grown) == (("name", None), ("measure", 2))


def test_a_gates_and_a_planners_optional_attributes_have_defaults() -> None:
    """``requires``, ``claims_speedup`` and ``exhaustive`` are read through capability
    protocols: left out, they take their defaults; a plugin's guard carries them as read."""
    from kernelopt_core.capabilities import claims_speedup, is_exhaustive, required_gates
    from kernelopt_core.plugin_guard import GuardedGate, GuardedPlanner

    class Plain:
        name, phase = "plain", "final"

        def evaluate(self, ctx: object) -> None: ...

    class Claiming(Plain):
        requires = ("confirm",)
        claims_speedup = True

    assert (required_gates(Plain()), claims_speedup(Plain())) == ((), False)
    assert (required_gates(Claiming()), claims_speedup(Claiming())) == (("confirm",), True)
    guarded = GuardedGate(Claiming(), "plugin kernelopt-x 1.0")
    assert (guarded.requires, guarded.claims_speedup, guarded.name) == (("confirm",), True, "plain")
    assert (required_gates(guarded), claims_speedup(guarded)) == (("confirm",), True)

    class Walker:
        name = "walker"

    class Replayer(Walker):
        exhaustive = True

    assert not is_exhaustive(Walker()) and is_exhaustive(Replayer())
    assert is_exhaustive(GuardedPlanner(Replayer(), "x")) and not is_exhaustive(
        GuardedPlanner(Walker(), "x"))


def test_a_planner_written_for_the_dicts_still_reads_them() -> None:
    """Outcome and Profile were dicts before issue 56: ``get`` and ``[key]`` still answer."""
    from kernelopt_core.api import Outcome, PlanContext, Profile, Settings, TunerFrontier

    outcome = Outcome("c3", False, None, "build", "does not compile", "error: x")
    assert outcome.get("accepted") is False and outcome["failed_gate"] == "build"
    assert outcome.get("replayed") is None and Outcome("c4", True, replayed=True)["replayed"]
    profile = Profile({"tool": "ncu", "kernels": []},
                      TunerFrontier(8, 8, 1, [{"knobs": {"B": "64"}, "ratio": 0.9}]))
    assert profile["tool"] == "ncu" and profile.get("tuner_frontier")["grid"] == 8
    ctx = PlanContext(Target("any", "k", Path("."), ("k.cu",)), Settings(), {}, (), {}, None,  # type: ignore[arg-type]
                      "r", profile={"tool": "nsys"})  # type: ignore[arg-type]
    assert ctx.profile.metrics == {"tool": "nsys"} and ctx.profile.tuner_frontier is None
