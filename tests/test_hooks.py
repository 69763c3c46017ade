"""One test per hook (and a check that every hookspec has one), plus plugin-host behaviour."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import attrs
import click
import pytest
from click.testing import CliRunner
from kernelopt_tests_support import events

from kernelopt_core import hookspecs
from kernelopt_core.cli import cli
from kernelopt_core.errors import UsageError
from kernelopt_core.gates.options import ConfirmOptions
from kernelopt_core.hookspecs import hookimpl
from kernelopt_core.loop import Loop
from kernelopt_core.options import option, option_table
from kernelopt_core.settings import Settings
from kernelopt_core.testing import ScriptedBackend, ScriptedBackendPlugin, plugin_host


def test_every_hookspec_has_a_test_here() -> None:
    source = Path(__file__).read_text()
    specs = [n for n, _ in inspect.getmembers(hookspecs, inspect.isfunction)
             if n.startswith("kernelopt_")]
    assert len(specs) == 10
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

    class Broken(ScriptedBackend):  # every method of the protocol; its detect raises
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


def test_kernelopt_register_gates_a_duplicate_name_is_left_out_naming_both() -> None:
    """The first keeps the name (a built-in registers first); the later plugin is FAILED with
    why, and every run goes on with the built-in gate."""
    class Twin:
        @hookimpl
        def kernelopt_register_gates(self):
            gate = type("G", (), {"name": "build", "phase": "candidate",
                                  "evaluate": lambda self, ctx: None})()
            return [gate]

    host = plugin_host(Twin())
    assert host.owner("gates", "build") == "core-gates"
    info = {i.name: i for i in host.plugin_infos()}["test-plugin-0"]
    assert info.error == "gate 'build': gate 'build' is already offered by kernelopt; left out"


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
    settings = Settings.make(state_root=tmp_path / "s", planner="oneshot", final_rounds=3)
    backend = ScriptedBackend()
    outcome = Loop(host, backend, backend.discover(chunk_project, settings)[0], settings).run()
    assert outcome.status == "optimized", outcome.summary
    assert planner.seen["accepted"] is True
    assert next(e for e in events(outcome.run_dir) if e["event"] == "candidate")["planner"] == \
        "oneshot"


def test_kernelopt_register_planners_a_plugin_planner_selects_itself_by_rank(tmp_path,
                                                                            chunk_project):
    """No --planner: the core asks the planners that declare ``select`` by rank (the built-in
    tuner is 0, agents 50 and replay 100), says why the ones above declined, gives the host to
    a planner that ``use_plugins``, and lets it check its own inputs before the search."""
    from kernelopt_core import resolve
    from kernelopt_core.api import ChecksInputs, SelectsItself, UsesPlugins
    from kernelopt_core.errors import UsageError as Usage

    class Picky:
        name = "picky"
        selection_rank = 10  # above the tuner, below an LLM
        host = None

        def use_plugins(self, host):
            self.host = host

        def select(self, settings, target):
            if settings.seeds != (7,):
                return False, "picky wants seed 7"
            return True, "picky was asked for by its seed"

        def check_inputs(self, settings, target, knobs):
            if not any(k.name == "CHUNK" for k in knobs):
                raise Usage("picky needs a CHUNK knob")

        def unavailable_reason(self, settings, target):
            return None

        def propose(self, ctx, parent, count):
            return []

        def observe(self, ctx, proposal, outcome):
            pass

    assert isinstance(Picky(), SelectsItself) and isinstance(Picky(), UsesPlugins)
    assert isinstance(Picky(), ChecksInputs)

    class Broken(Picky):  # ranked above picky: its select raises, so it declines, named
        name = "broken"
        selection_rank = 20

        def select(self, settings, target):
            raise RuntimeError("select is broken")

    class Plugin:
        @hookimpl
        def kernelopt_register_planners(self):
            return [Picky, Broken]

    host = plugin_host(ScriptedBackendPlugin(), Plugin())
    backend = ScriptedBackend()
    chosen_settings = Settings.make(state_root=tmp_path / "s", seeds=(7,))
    target = backend.discover(chunk_project, chosen_settings)[0]
    made, why = resolve.planner(host, chosen_settings, target)
    from kernelopt_core.plugin_guard import unwrapped

    assert made.name == "picky" and unwrapped(made).host is host  # the guard forwards nothing else
    assert why.startswith("picky was asked for by its seed"), why
    assert "broken's select raised RuntimeError: select is broken" in why, why
    # another run: it declines, the tuner is chosen and says why the planners above declined
    tuner, why = resolve.planner(host, Settings.make(state_root=tmp_path / "s", seeds=(1,)),
                                 target)
    assert tuner.name == "tuner" and "using the built-in tuner" in why
    assert "picky wants seed 7" in why, why
    with pytest.raises(Usage, match="picky needs a CHUNK knob"):
        resolve.check_planner_inputs(made, chosen_settings, target, ())
    # a third-party planner is wrapped in the guard: its capabilities are still seen
    from kernelopt_core.plugin_guard import GuardedPlanner

    with pytest.raises(Usage, match="picky needs a CHUNK knob"):
        resolve.check_planner_inputs(GuardedPlanner(Picky(), "picky 1.0"), chosen_settings,
                                     target, ())
    # a whole run: chosen without --planner, its choice journaled with the reason
    outcome = Loop(host, backend, target, chosen_settings).run()
    config = next(e for e in events(outcome.run_dir) if e["event"] == "config")
    assert config["planner"] == "picky" and "asked for by its seed" in config["planner_reason"]


@pytest.mark.slow
def test_kernelopt_register_backends_a_target_preface_is_kept_in_the_run(tmp_path, chunk_project):
    import attrs

    settings = Settings.make(state_root=tmp_path / "s", iterations=1, final_rounds=2)
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

    settings = Settings.make(state_root=tmp_path / "s", iterations=2, final_rounds=2, seeds=(4, 5, 6))
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
            # kernels as ncu recorded them on the H200 (the scripted bench launches none)
            from kernelopt_core.profiling.parsers import ncu_kernels

            recorded = (Path(__file__).parent / "fixtures" / "profilers"
                        / "ncu-multikernel.csv").read_text()
            answer = int((out_dir / "p.txt").read_text())
            kernels = [k.to_json() for k in ncu_kernels(recorded)]
            kernels[0]["metrics"]["timer.answer"] = answer  # its own metric, one kernel's
            return {"answer": answer, "tool": "timer", "kernels": kernels,
                    "columns": [{"header": "answer", "metric": "timer.answer", "fmt": "{:.0f}"}]}

    class Plugin:
        @hookimpl
        def kernelopt_register_profilers(self):
            return [Timer()]

    host = plugin_host(ScriptedBackendPlugin(), Plugin())
    assert {"ncu", "nsys", "rocprof", "graphsignal", "timer"} <= set(host.registry("profilers"))
    settings = Settings.make(state_root=tmp_path / "s", profiler="timer", iterations=1, final_rounds=2)
    backend = ScriptedBackend()
    outcome = Loop(host, backend, backend.discover(chunk_project, settings)[0], settings).run()
    profiles = [e for e in events(outcome.run_dir) if e["event"] == "profile"]
    assert profiles[0]["tree"] == "baseline" and profiles[0]["metrics"]["answer"] == 7
    # none of those kernels is defined in the target's files: none is marked the target's
    kernels = profiles[0]["metrics"]["kernels"]
    assert len(kernels) == 3 and not any(k["target"] for k in kernels)
    # the winner is profiled too (after every timed window): the scripted kernel's win
    assert outcome.summary["status"] == "optimized"
    assert [p["tree"] for p in profiles] == ["baseline", "winner"]
    assert profiles[1]["candidate"] == outcome.summary["winner"]
    report = (outcome.run_dir / "report.md").read_text()
    assert "## Profile (timer, per launch)" in report
    assert "| baseline | `scale_add" in report and "| winner | `scale_add" in report
    # its own column, after time and share; a kernel it did not measure shows as missing
    assert "| launches | µs/launch | share % | answer |" in report
    rows = [line for line in report.splitlines() if line.startswith("| baseline |")]
    assert rows[0].endswith("| 7 |") and all(r.endswith("| — |") for r in rows[1:])


def test_kernelopt_register_executors(tmp_path) -> None:
    """A plugin's executor next to the built-in local one, driving a campaign's jobs: each job's
    command really runs, on the slot the executor gives it, and each result is journaled."""
    import sys

    from kernelopt_core import campaign
    from kernelopt_core.executors import Job, JobResult
    from kernelopt_core.journal import read as read_journal
    from kernelopt_core.process import run as run_process
    from kernelopt_core.target import Command, Target

    class Inline:  # every job in turn on the first slot, in this process's thread
        name = "inline"

        def run(self, jobs, gpus, on_result, log_dir) -> None:
            for job in jobs:
                done = run_process(Command(job.argv, Path(job.cwd),
                                           env={**job.env, "CUDA_VISIBLE_DEVICES": gpus[0]}))
                on_result(JobResult(job.key, done.returncode, done.stdout, "inline", gpus[0],
                                    done.seconds))

    class Plugin:
        @hookimpl
        def kernelopt_register_executors(self) -> list[object]:
            return [Inline()]

    host = plugin_host(Plugin())
    executors = host.registry("executors")
    assert isinstance(executors["inline"], hookspecs.Executor) and "local" in executors
    entries = campaign.plan("h", [("/p", [Target("cmake", "a", tmp_path, ("a.c",)),
                                          Target("cmake", "b", tmp_path, ("b.c",))])], tmp_path)
    jobs = [Job(e.key, (sys.executable, "-c", "import os; print(os.environ['CUDA_VISIBLE_DEVICES'])"),
                str(tmp_path)) for e in entries]
    seen: list[str] = []
    campaign.run("h", entries, jobs, executors["inline"], ["7"], tmp_path,
                 lambda result, summary: seen.append(result.output_tail.strip()))
    assert seen == ["7", "7"]
    journaled = [e for e in read_journal(tmp_path / "campaigns" / "h" / "campaign.jsonl")
                 if e["event"] == "job"]
    assert [(e["key"], e["worker"], e["returncode"]) for e in journaled] == [
        ("h-01", "inline", 0), ("h-02", "inline", 0)]


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


@option_table("chunky")
@attrs.frozen
class ChunkyOptions:
    op: str | None = option(None, "an op")
    top: int = option(3, "how many", validator=attrs.validators.ge(1))
    fast: bool = option(False, "a switch")
    mode: str = option("a", "one of two", choices=("a", "b"))


@option_table("clashing")
@attrs.frozen
class ClashingOptions:
    gamma: float = option(1.5, "clashes with the core's own")


def test_kernelopt_option_tables(chunk_project, monkeypatch) -> None:
    """One declaration: a flag, a key in the plugin's own kernelopt.toml table, a variable and
    -o, coerced and validated; an option named like a core setting is namespaced by its
    table, noted on the plugin."""
    seen: list = []
    gammas: list = []  # (the core's gamma, [clashing]'s)

    class Recording(ScriptedBackend):
        def discover(self, path, settings):
            seen.append((settings.section(ChunkyOptions), dict(settings.origins)))
            gammas.append((settings.section(ConfirmOptions).gamma,
                           settings.section(ClashingOptions).gamma))
            raise UsageError("stop here")

    class Plugin:
        @hookimpl
        def kernelopt_register_backends(self):
            return [Recording()]

        @hookimpl
        def kernelopt_option_tables(self):
            return [ChunkyOptions, ClashingOptions]

    def run(*args: str, toml: str = ""):
        (chunk_project / "kernelopt.toml").write_text(base_toml + toml)
        seen.clear()
        return CliRunner().invoke(cli, ["run", str(chunk_project), "--backend", "scripted", *args],
                                  standalone_mode=False)

    base_toml = (chunk_project / "kernelopt.toml").read_text() \
        if (chunk_project / "kernelopt.toml").exists() else ""
    monkeypatch.delenv("KERNELOPT_TOP", raising=False)
    cli.host = plugin_host(Plugin())
    try:
        result = run("--op", "SOFT_MAX", "--fast")
        assert isinstance(result.exception, UsageError) and str(result.exception) == "stop here"
        options, origins = seen[0]
        assert options == ChunkyOptions(op="SOFT_MAX", top=3, fast=True)
        assert origins["chunky.op"] == "option --op"
        # the plugin's table, then the environment, -o and the flag, each winning over the last
        run(toml="\n[chunky]\ntop = 5\nmode = \"b\"\n")
        assert seen[0][0] == ChunkyOptions(top=5, mode="b")
        assert re.search(r"kernelopt.toml:\d+$", seen[0][1]["chunky.top"])  # file and line
        monkeypatch.setenv("KERNELOPT_TOP", "6")
        run(toml="\n[chunky]\ntop = 5\n")
        assert seen[0][0].top == 6 and seen[0][1]["chunky.top"] == "env KERNELOPT_TOP"
        run("-o", "top=7", toml="\n[chunky]\ntop = 5\n")
        assert seen[0][0].top == 7
        run("-o", "top=7", "--top", "8")
        assert seen[0][0].top == 8
        monkeypatch.delenv("KERNELOPT_TOP")
        # bad input: what, where, how to fix; nothing runs
        bad = run(toml="\n[chunky]\ntop = 5\ntpo = 1\n")
        assert isinstance(bad.exception, UsageError) and not seen
        assert "kernelopt.toml:" in str(bad.exception) and "unknown key `tpo` in [chunky]" in \
            str(bad.exception) and "top" in (bad.exception.hint or "")
        bad = run("--top", "0")
        assert isinstance(bad.exception, UsageError) and "option --top" in str(bad.exception)
        bad = run("-o", "top=many")
        assert isinstance(bad.exception, UsageError) and "-o top" in str(bad.exception)
        bad = run("-o", "nope=1")
        assert isinstance(bad.exception, UsageError) and "no installed plugin" in str(bad.exception)
        bad = run(toml="\n[run]\nop = \"X\"\n")
        assert isinstance(bad.exception, UsageError) and "[chunky]" in (bad.exception.hint or "")
        bad = run(toml="\n[options]\nop = \"X\"\n")
        assert isinstance(bad.exception, UsageError) and "[options]" in str(bad.exception)
        assert CliRunner().invoke(cli, ["run", str(chunk_project), "--mode", "c"]).exit_code == 2
        # a clash with a core flag: the plugin's option is namespaced by its table, noted on
        # the plugin (not a fault), and the core's --gamma stays the core's
        info = next(i for i in cli.host.plugin_infos() if i.name == "test-plugin-0")
        assert info.error is None
        assert info.notes == ["option `gamma` of [clashing] is --clashing-gamma, "
                              "KERNELOPT_CLASHING_GAMMA, -o clashing_gamma= (`gamma` is a core setting)"]
        help_text = CliRunner().invoke(cli, ["run", "--help"]).output
        assert "--op" in help_text and "--no-fast" in help_text and help_text.count("--gamma") == 1
        assert "--clashing-gamma" in help_text
        listed = CliRunner().invoke(cli, ["plugins"])
        assert "--clashing-gamma" in listed.output and "FAILED" not in listed.output
        for args, want in ((("--clashing-gamma", "2.5"), 2.5), (("-o", "clashing_gamma=3"), 3.0),
                           (("-o", "clashing.gamma=4", "--clashing-gamma", "5"), 5.0)):
            gammas.clear()
            run(*args)
            assert gammas and gammas[0][1] == want and gammas[0][0] != want, args
        monkeypatch.setenv("KERNELOPT_CLASHING_GAMMA", "6")
        gammas.clear()
        run()
        assert gammas[0][1] == 6.0
    finally:
        cli.host = None
        (chunk_project / "kernelopt.toml").write_text(base_toml)


@option_table("sharing")
@attrs.frozen
class SharingOptions:
    top: int = option(3, "the same option as [chunky]'s: one flag sets both")


@option_table("differing")
@attrs.frozen
class DifferingOptions:
    top: int = option(2, "another default: not the same option")


def _recording_plugins(seen: list, tables: tuple[type, ...]) -> tuple[object, object]:
    """A backend plugin with [chunky] that records every table it is given (in ``tables``
    order), and a plugin offering ``tables``."""

    class Recording(ScriptedBackend):
        def discover(self, path, settings):
            seen.append((settings.section(ChunkyOptions),
                         *(settings.section(t) for t in tables)))
            raise UsageError("stop here")

    class First:
        @hookimpl
        def kernelopt_register_backends(self):
            return [Recording()]

        @hookimpl
        def kernelopt_option_tables(self):
            return [ChunkyOptions]

    class Second:
        @hookimpl
        def kernelopt_option_tables(self):
            return list(tables)

    return First(), Second()


def test_two_plugins_share_an_option_of_the_same_type_and_default(chunk_project) -> None:
    """--top of a Triton model and of a llama.cpp model: one flag sets both tables, its help
    gives each table's line."""
    seen: list = []
    cli.host = plugin_host(*_recording_plugins(seen, (SharingOptions,)))
    try:
        CliRunner().invoke(cli, ["run", str(chunk_project), "--backend", "scripted", "--top", "4"],
                           standalone_mode=False)
        assert seen == [(ChunkyOptions(top=4), SharingOptions(top=4))]
        assert all(not i.notes for i in cli.host.plugin_infos())
        help_text = " ".join(CliRunner().invoke(cli, ["run", "--help"]).output.split())
        assert help_text.count("--top ") == 1
        assert "how many the same option as [chunky]'s: one flag sets both [3]" in help_text
    finally:
        cli.host = None


def test_a_clash_namespaces_every_table_that_declares_it_in_any_order(chunk_project) -> None:
    """[chunky] and [sharing] declare the same `top`, [differing] another one: each of the
    three gets its table's name (--chunky-top, --sharing-top, --differing-top), noted on its
    plugin, whichever plugin loads first; the flags come in the same order too."""
    from kernelopt_core.options import option_keys
    from kernelopt_core.settings import FIELDS

    tables = [ChunkyOptions, SharingOptions, DifferingOptions]
    want = {("chunky", "top"): "chunky_top", ("sharing", "top"): "sharing_top",
            ("differing", "top"): "differing_top"}
    for ordered in (tables, tables[::-1], tables[1:] + tables[:1]):
        keys = option_keys(ordered, FIELDS)
        assert {k: v for k, v in keys.items() if k[1] == "top"} == want
    flags: list[list[str]] = []
    for order in (1, -1):
        seen: list = []
        cli.host = plugin_host(*_recording_plugins(seen, (SharingOptions, DifferingOptions))[::order])
        try:
            flags.append([o.opts[0] for o in cli.host.run_options(set())])
            CliRunner().invoke(cli, ["run", str(chunk_project), "--backend", "scripted",
                                     "--chunky-top", "4", "--sharing-top", "5",
                                     "--differing-top", "9"], standalone_mode=False)
            assert seen == [(ChunkyOptions(top=4), SharingOptions(top=5),
                             DifferingOptions(top=9))]
            notes = [n for i in cli.host.plugin_infos() for n in i.notes]
            assert sorted(notes) == [
                "option `top` of [chunky] is --chunky-top, KERNELOPT_CHUNKY_TOP, -o chunky_top= "
                "(`top` is also [differing], [sharing]'s)",
                "option `top` of [differing] is --differing-top, KERNELOPT_DIFFERING_TOP, "
                "-o differing_top= (`top` is also [chunky], [sharing]'s)",
                "option `top` of [sharing] is --sharing-top, KERNELOPT_SHARING_TOP, "
                "-o sharing_top= (`top` is also [chunky], [differing]'s)"]
            help_text = CliRunner().invoke(cli, ["run", "--help"]).output
            assert "--top " not in help_text and help_text.count("--differing-top") == 1
        finally:
            cli.host = None
    assert flags[0] == flags[1]
    assert [f for f in flags[0] if f.endswith("-top")][:3] == ["--chunky-top", "--differing-top",
                                                          "--sharing-top"]


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
    assert result.returncode == 1, out  # a FAILED plugin: exit 1, like pip check
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


def test_a_namespaced_option_key_never_lands_on_a_taken_one() -> None:
    """[t] x clashes with the core's x and t_x is the core's too: t_t_x; where a plain field
    of another table has that name, the namespaced key moves on (t_t_t_x), in either order."""
    from kernelopt_core.options import option_keys

    @option_table("t")
    @attrs.frozen
    class T:
        x: int = option(1, "clashes")

    @option_table("u")
    @attrs.frozen
    class U:
        t_t_x: int = option(2, "named like [t] x's key")

    keys = option_keys([T, U], {"x", "t_x"})
    assert keys == {("t", "x"): "t_t_t_x", ("u", "t_t_x"): "t_t_x"}
    assert option_keys([U, T], {"x", "t_x"}) == keys
    assert option_keys([T], {"x", "t_x"}) == {("t", "x"): "t_t_x"}


def test_tables_whose_names_differ_only_in_punctuation_still_get_apart_keys() -> None:
    """[t-t] and [t_t] clean to the same prefix: the keys part by spelling the punctuation
    out, in either order, and the search ends (it once looped forever)."""
    import attrs

    from kernelopt_core.options import option, option_keys, option_table

    @option_table("t-t")
    @attrs.frozen
    class Dashed:
        x: int = option(1, "a count")

    @option_table("t_t")
    @attrs.frozen
    class Underscored:
        x: str = option("s", "a word")

    keys = option_keys([Dashed, Underscored], set())
    assert keys == option_keys([Underscored, Dashed], set())
    assert keys == {("t-t", "x"): "t_2d_t_x", ("t_t", "x"): "t_t_x"}
