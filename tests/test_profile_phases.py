"""`kernelopt profile --engine` on a backend that splits its whole program into phases
(``profile_phases``: llama.cpp's prompt and generation) and labels its kernels
(``kernel_labels``): each phase profiled apart, every launch (the profiler's whole-program
mode), ranked with the backend's label; and a target with nothing to edit is refused by `run`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from click.testing import CliRunner

from kernelopt_core.cli import cli
from kernelopt_core.errors import UsageError
from kernelopt_core.hookspecs import hookimpl
from kernelopt_core.profiling.builtin import Ncu
from kernelopt_core.target import Command, Target, Tree
from kernelopt_core.testing import ScriptedBackend, plugin_host

RECORDED = Path(__file__).parent / "fixtures" / "profilers" / "ncu-cmake-cuda-baseline.csv"


class Phased(ScriptedBackend):
    name = "phased"

    def detect(self, path: Path) -> float:
        return 0.0

    def profile_phases(self, target: Target, tree: Tree) -> dict[str, Command]:
        return {phase: Command((sys.executable, "-c", "pass"), tree.src, label=phase)
                for phase in ("prefill", "decode")}

    def kernel_labels(self, target: Target, tree: Tree, kernels: list[str]) -> dict[str, str]:
        return {k: "OP-" + k.split("(")[0].split()[-1] for k in kernels}


class Replay:  # what ncu recorded on the H200 for examples/cmake-cuda, as the phase's output
    name = "replay"
    whole: list[bool] = []

    def unavailable_reason(self) -> None:
        return None

    def wrap(self, command: Command, out_dir: Path, whole_program: bool = False) -> Command:
        self.whole.append(whole_program)
        return Command(("cp", str(RECORDED), str(out_dir / "ncu.csv")), out_dir)

    def parse(self, out_dir: Path) -> dict[str, object]:
        return Ncu().parse(out_dir)


class Plugin:
    @hookimpl
    def kernelopt_register_backends(self) -> list[object]:
        return [Phased()]

    @hookimpl
    def kernelopt_register_profilers(self) -> list[object]:
        return [Replay()]


def test_each_phase_is_profiled_apart_and_ranked_with_the_backends_labels(
        chunk_project: Path, tmp_path: Path) -> None:
    cli.host = plugin_host(Plugin())  # type: ignore[attr-defined]
    try:
        result = CliRunner().invoke(cli, ["profile", str(chunk_project), "--backend", "phased",
                                          "--engine", "--profiler", "replay", "--state-root",
                                          str(tmp_path / "state")], standalone_mode=False)
    finally:
        cli.host = None  # type: ignore[attr-defined]
    assert result.exception is None, result.output
    assert Replay.whole == [True, True]  # whole-program mode: every launch, one pass each
    out = result.output
    assert out.index("prefill:") < out.index("decode:") and "what" in out
    assert "OP-<unnamed>::row_sum_kernel<1>" in out
    [folder] = (tmp_path / "state" / "profiles").iterdir()
    markdown = (folder / "profile.md").read_text()
    assert "## prefill" in markdown and "## decode" in markdown and "| what |" in markdown
    assert (folder / "prefill" / "ncu.csv").is_file() and (folder / "decode" / "ncu.csv").is_file()
    events = [json.loads(line) for line in (folder / "journal.jsonl").read_text().splitlines()]
    assert [e["phase"] for e in events if e["event"] == "profile"] == ["prefill", "decode"]


def test_a_target_with_nothing_to_edit_is_refused_by_run(chunk_project: Path,
                                                         tmp_path: Path) -> None:
    class WholeProgram(ScriptedBackend):
        name = "whole"

        def detect(self, path: Path) -> float:
            return 0.0

        def discover(self, path, settings):  # type: ignore[no-untyped-def]
            return [Target(self.name, "model", path.resolve(), ())]

    class Whole:
        @hookimpl
        def kernelopt_register_backends(self) -> list[object]:
            return [WholeProgram()]

    cli.host = plugin_host(Whole())  # type: ignore[attr-defined]
    try:
        result = CliRunner().invoke(cli, ["run", str(chunk_project), "--backend", "whole",
                                          "--state-root", str(tmp_path / "state")])
    finally:
        cli.host = None  # type: ignore[attr-defined]
    assert result.exit_code == 2, result.output
    assert "model has no file to edit: it can be profiled" in result.output
    assert not list((tmp_path / "state").glob("work/*/base-build/*"))
    # `kernelopt profile` without --engine: it has no bench of its own, said before any build
    cli.host = plugin_host(Whole())  # type: ignore[attr-defined]
    try:
        result = CliRunner().invoke(cli, ["profile", str(chunk_project), "--backend", "whole",
                                          "--state-root", str(tmp_path / "state")])
    finally:
        cli.host = None  # type: ignore[attr-defined]
    assert isinstance(result.exception, UsageError)  # main() exits 2 with it
    assert "is a whole program with no kernel to edit: profile it with --engine" in str(
        result.exception)
