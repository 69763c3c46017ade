"""One test per hook (and a check that every hookspec has one), plus plugin-host behaviour."""

from __future__ import annotations

import inspect
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from kernelopt_tests_support import events

from kernelopt_core import hookspecs
from kernelopt_core.cli import cli
from kernelopt_core.errors import UsageError
from kernelopt_core.hookspecs import hookimpl
from kernelopt_core.loop import Loop
from kernelopt_core.settings import Settings
from kernelopt_core.testing import ScriptedBackend, ScriptedBackendPlugin, plugin_host


def test_every_hookspec_has_a_test_here() -> None:
    source = Path(__file__).read_text()
    specs = [n for n, _ in inspect.getmembers(hookspecs, inspect.isfunction)
             if n.startswith("kernelopt_")]
    assert len(specs) == 9
    for name in specs:
        assert f"def test_{name}" in source, f"no test for hook {name}"


def test_kernelopt_register_backends() -> None:
    host = plugin_host(ScriptedBackendPlugin())
    assert isinstance(host.registry("backends")["scripted"], hookspecs.Backend)
    assert host.owner("backends", "scripted") == "test-plugin-0"


def test_kernelopt_register_backends_a_detect_that_raises_does_not_stop_selection(
        tmp_path) -> None:
    from kernelopt_core.discovery import choose_backend

    project = tmp_path / "p"  # what the scripted backend detects, with no kernelopt.toml
    project.mkdir()
    (project / "kernel.py").write_text("")
    (project / "bench.py").write_text("")

    class Broken:
        name = "broken"

        def detect(self, path):
            raise RuntimeError("boom")

    class BrokenPlugin:
        @hookimpl
        def kernelopt_register_backends(self) -> list[object]:
            return [Broken()]

    host = plugin_host(ScriptedBackendPlugin(), BrokenPlugin())
    assert choose_backend(host, project, None).name == "scripted"
    with pytest.raises(UsageError, match="broken .*detect\\(\\) raised RuntimeError: boom"):
        choose_backend(plugin_host(BrokenPlugin()), project, None)


def test_kernelopt_register_gates_duplicate_names_are_an_error_naming_both() -> None:
    class Twin:
        @hookimpl
        def kernelopt_register_gates(self):
            gate = type("G", (), {"name": "build", "phase": "candidate", "evaluate": None})()
            return [gate]

    host = plugin_host(Twin())
    with pytest.raises(UsageError, match="'build' is offered by both plugin 'core-gates' and "
                                         "plugin 'test-plugin-0'"):
        host.registry("gates")


@pytest.mark.slow
def test_kernelopt_register_planners_a_plugin_planner_drives_the_loop(tmp_path, chunk_project):
    from kernelopt_core.planners.base import Proposal

    class OneShot:
        name = "oneshot"

        def unavailable_reason(self, settings, target):
            return None

        def propose(self, ctx, parent, count):
            if parent.id != "baseline" or hasattr(self, "seen"):
                return []
            text = ctx.files["kernel.py"].replace(b"CHUNK = 1\n", b"CHUNK = 128\n")
            return [Proposal("bigger chunks", {"kernel.py": text}, planner=self.name)]

        def observe(self, ctx, proposal, outcome):
            self.seen = outcome

    planner = OneShot()

    class Plugin:
        @hookimpl
        def kernelopt_register_planners(self):
            return [planner]

    host = plugin_host(ScriptedBackendPlugin(), Plugin())
    settings = Settings(state_root=tmp_path / "s", planner="oneshot", final_rounds=3)
    backend = ScriptedBackend()
    outcome = Loop(host, backend, backend.discover(chunk_project, settings)[0], settings).run()
    assert outcome.status == "optimized", outcome.summary
    assert planner.seen["accepted"] is True
    assert next(e for e in events(outcome.run_dir) if e["event"] == "candidate")["planner"] == \
        "oneshot"


@pytest.mark.slow
def test_kernelopt_register_backends_a_target_preface_is_kept_in_the_run(tmp_path, chunk_project):
    import attrs

    settings = Settings(state_root=tmp_path / "s", iterations=1, final_rounds=2)
    backend = ScriptedBackend()
    target = attrs.evolve(backend.discover(chunk_project, settings)[0],
                          preface="kernel ranking\n  k1  61.0 %\n")
    outcome = Loop(plugin_host(ScriptedBackendPlugin()), backend, target, settings).run()
    assert (outcome.run_dir / "preface.txt").read_text() == "kernel ranking\n  k1  61.0 %\n"


@pytest.mark.slow
def test_kernelopt_register_backends_check_seeds_checks_every_seed_in_one_process(
        tmp_path, chunk_project) -> None:
    """A backend's optional check_seeds replaces the per-seed checks: one process per tree,
    every seed still checked with its own inputs, a failure named by its seeds."""
    import sys

    from kernelopt_core.target import Command

    calls = tmp_path / "calls.txt"
    script = ("import subprocess, sys; open(sys.argv[1], 'a').write(sys.argv[2] + '\\n'); "
              "sys.exit(max(subprocess.run([sys.executable, sys.argv[3], '--seed', s, '--build', "
              "sys.argv[4]]).returncode for s in sys.argv[2].split(',')))")

    class Batched(ScriptedBackend):
        def check(self, target, tree, seed):
            raise AssertionError("check_seeds was offered: no per-seed check")

        def check_seeds(self, target, tree, seeds):
            return Command((sys.executable, "-c", script, str(calls), ",".join(map(str, seeds)),
                            str(tree.src / "check.py"), str(tree.build)), tree.src, timeout_s=60)

    settings = Settings(state_root=tmp_path / "s", iterations=2, final_rounds=2, seeds=(4, 5, 6))
    backend = Batched()
    outcome = Loop(plugin_host(ScriptedBackendPlugin()), backend,
                   backend.discover(chunk_project, settings)[0], settings).run()
    assert outcome.exit_code in (0, 1), outcome.summary
    lines = calls.read_text().split()
    assert lines and set(lines) == {"4,5,6"}  # the baseline's and each candidate's: one call
    correctness = [e for e in events(outcome.run_dir) if e["event"] == "gate"
                   and e["gate"] == "correctness"]
    assert correctness and all(e["passed"] and "[4, 5, 6]" in e["reason"] for e in correctness)


@pytest.mark.slow
def test_kernelopt_register_profilers_wraps_the_bench(tmp_path, chunk_project) -> None:
    import attrs

    class Timer:
        name = "timer"

        def unavailable_reason(self):
            return None

        def wrap(self, command, out_dir):
            script = ("import subprocess, sys; subprocess.run(sys.argv[1:]); "
                      f"open('{out_dir}/p.txt', 'w').write('7')")
            return attrs.evolve(command, argv=("python3", "-c", script, *command.argv))

        def parse(self, out_dir):
            return {"answer": int((out_dir / "p.txt").read_text())}

    class Plugin:
        @hookimpl
        def kernelopt_register_profilers(self):
            return [Timer()]

    host = plugin_host(ScriptedBackendPlugin(), Plugin())
    assert {"ncu", "nsys", "rocprof", "graphsignal", "timer"} <= set(host.registry("profilers"))
    settings = Settings(state_root=tmp_path / "s", profiler="timer", iterations=1, final_rounds=2)
    backend = ScriptedBackend()
    outcome = Loop(host, backend, backend.discover(chunk_project, settings)[0], settings).run()
    profile = next(e for e in events(outcome.run_dir) if e["event"] == "profile")
    assert profile["metrics"] == {"answer": 7}


def test_kernelopt_register_llm_providers() -> None:
    providers = plugin_host().registry("llm_providers")
    assert {"opencode-go", "openai", "openrouter", "ollama", "vllm", "lmstudio"} <= set(providers)
    assert providers["openai"].api_key_env == "OPENAI_API_KEY"
    assert providers["ollama"].api_key_env is None


def test_kernelopt_doc_lookup_greps_local_headers(tmp_path, monkeypatch) -> None:
    include = tmp_path / "cuda" / "include"
    include.mkdir(parents=True)
    (include / "fake_runtime.h").write_text("// returns a warp's sum\nfloat __reduce_fake(float);\n")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    hits = plugin_host().doc_lookup("__reduce_fake", "cuda")
    assert hits and hits[0].line == 2 and "warp's sum" in hits[0].text


def test_kernelopt_prompt_fragments() -> None:
    class Plugin:
        @hookimpl
        def kernelopt_prompt_fragments(self, backend, role):
            return [f"{backend}/{role}: coalesce loads"] if backend == "cuda-ish" else []

    host = plugin_host(Plugin())
    assert host.prompt_fragments("cuda-ish", "planner") == ["cuda-ish/planner: coalesce loads"]
    assert host.prompt_fragments("triton", "planner") == []


def test_kernelopt_register_commands() -> None:
    class Plugin:
        @hookimpl
        def kernelopt_register_commands(self, cli):
            @cli.command()
            @click.option("--name", default="world")
            def hello(name):
                """Say hello."""
                click.echo(f"hello {name}")

    cli.host = plugin_host(Plugin())
    try:
        result = CliRunner().invoke(cli, ["hello", "--name", "kernels"])
        assert result.exit_code == 0 and result.output == "hello kernels\n"
        assert "hello" in CliRunner().invoke(cli, ["--help"]).output
    finally:
        cli.commands.pop("hello", None)
        cli.host = None


def test_kernelopt_run_options_reach_settings_options(chunk_project) -> None:
    seen: dict = {}

    class Recording(ScriptedBackend):
        def discover(self, path, settings):
            seen.update(settings.options)
            raise UsageError("stop here")

    class Plugin:
        @hookimpl
        def kernelopt_register_backends(self):
            return [Recording()]

        @hookimpl
        def kernelopt_run_options(self):
            return [click.Option(["--op"], help="an op"),
                    click.Option(["--top"], type=int, default=3, help="has a click default"),
                    click.Option(["--gamma"], help="clashes with a core flag")]

    cli.host = plugin_host(Plugin())
    try:
        result = CliRunner().invoke(cli, ["run", str(chunk_project), "--backend", "scripted",
                                          "--op", "SOFT_MAX", "-o", "case=big", "--gamma", "1.05"],
                                    standalone_mode=False)
        assert isinstance(result.exception, UsageError), result.output
        # a click default is not "given": -o top=5 wins over it
        assert seen == {"op": "SOFT_MAX", "case": "big"}
        info = next(i for i in cli.host.plugin_infos() if i.name == "test-plugin-0")
        assert "'--gamma' clashes" in (info.error or "")
        help_text = CliRunner().invoke(cli, ["run", "--help"]).output
        assert "--op" in help_text and help_text.count("--gamma") == 1
        seen.clear()
        CliRunner().invoke(cli, ["run", str(chunk_project), "--backend", "scripted", "-o", "top=5"],
                           standalone_mode=False)
        assert seen == {"top": "5"}
        listing = CliRunner().invoke(cli, ["plugins"]).output
        assert "'--gamma' clashes" in listing
    finally:
        cli.host = None


def test_a_registration_hook_that_raises_is_reported_not_fatal() -> None:
    class Broken:
        @hookimpl
        def kernelopt_register_backends(self):
            raise RuntimeError("boom")

    host = plugin_host(Broken(), ScriptedBackendPlugin())
    assert "scripted" in host.registry("backends")
    info = {i.name: i for i in host.plugin_infos()}["test-plugin-0"]
    assert "RuntimeError: boom" in info.error


def _fake_dist(site: Path, dist: str, ep_name: str, module: str, body: str) -> None:
    info = site / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[kernelopt]\n{ep_name} = {module}\n")
    (site / f"{module}.py").write_text(body)


def test_entry_points_that_exit_or_clash_are_reported_not_fatal(tmp_path, monkeypatch) -> None:
    from kernelopt_core.plugins import PluginHost

    site = tmp_path / "site"
    _fake_dist(site, "kernelopt-exiter", "exiter", "exiter_mod",
               'import sys\nsys.exit("needs CUDA")\n')
    _fake_dist(site, "kernelopt-aaa", "same", "aaa_mod", "")
    _fake_dist(site, "kernelopt-bbb", "same", "bbb_mod", "")
    monkeypatch.syspath_prepend(str(site))
    host = PluginHost(autoload=True, disabled=[" core-tuner"], strict=False)
    infos = {i.name: i for i in host.plugin_infos()}
    assert "SystemExit: needs CUDA" in infos["exiter"].error
    clash = [i for i in infos.values() if i.name.startswith("same (")]
    assert len(clash) == 1 and "already used by" in clash[0].error
    assert infos["same"].error is None
    assert "core-tuner" in infos  # only exact names are disabled here
    spaced = PluginHost(autoload=False, disabled=None, strict=False)
    assert "core-tuner" in {i.name for i in spaced.plugin_infos()}
    monkeypatch.setenv("KERNELOPT_DISABLE_PLUGINS", "core-replay, core-tuner")
    names = {i.name for i in PluginHost(autoload=False).plugin_infos()}
    assert "core-tuner" not in names and "core-replay" not in names


def test_a_misspelled_hook_is_reported_on_its_plugin(tmp_path) -> None:
    """A hook implementation no hookspec knows would never be called: `kernelopt plugins`
    names it on its plugin (with the hook it probably meant); the other plugins still load."""
    import os

    from kernelopt_tests_support import kernelopt

    site = tmp_path / "site"
    _fake_dist(site, "kernelopt-typo", "typo", "typo_mod",
               "import pluggy\nhookimpl = pluggy.HookimplMarker('kernelopt')\n\n"
               "@hookimpl\ndef kernelopt_register_backend():\n    return []\n")
    path = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])
    result = kernelopt("plugins", cwd=tmp_path, env={"PYTHONPATH": path})
    out = result.stdout + result.stderr
    assert "unknown hook 'kernelopt_register_backend'" in out, out
    assert "did you mean 'kernelopt_register_backends'" in out, out
    rows = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert "core-tuner" in rows and " ok" in rows["core-tuner"], out  # the others load


def test_specname_and_optional_hooks_are_not_called_unknown() -> None:
    from kernelopt_core.plugins import PluginHost

    class Aliased:
        @hookimpl(specname="kernelopt_register_gates")
        def gates_under_another_name(self):
            return []

        @hookimpl(optionalhook=True)
        def kernelopt_some_future_hook(self):
            return None

    host = PluginHost(autoload=False, extra=[("aliased", Aliased())])
    assert {i.name: i for i in host.plugin_infos()}["aliased"].error is None
