"""A profiler's own metric columns (issue 35 item 6): declared in ``parse``'s ``"columns"``,
journaled with the kernels, they reach report.md and ``kernelopt profile``'s table with each
kernel's values; a metric a kernel lacks shows as missing, never as 0; ncu's table is unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from kernelopt_tests_support import records, run_header

from kernelopt_core import events
from kernelopt_core.cli import cli
from kernelopt_core.hookspecs import hookimpl
from kernelopt_core.profiling import view as profile_view
from kernelopt_core.profiling.bench import Profiling
from kernelopt_core.profiling.parsers import KernelProfile, MetricColumn, ncu_kernels
from kernelopt_core.report import render_markdown, summarize
from kernelopt_core.run_context import RunContext
from kernelopt_core.settings import Settings
from kernelopt_core.target import Command, Target, Tree
from kernelopt_core.testing import ScriptedBackend, plugin_host

FIXTURES = Path(__file__).parent / "fixtures" / "profilers"
MISSING = profile_view.MISSING


class CacheProfiler:
    """A profiler of its own metrics: L2 hit rate and the bytes it moved, the second kernel
    measured without the hit rate (as a tool that could not read a counter for it)."""

    name = "l2cache"

    def unavailable_reason(self) -> None:
        return None

    def wrap(self, command: Command, out_dir: Path) -> Command:
        record = json.dumps([["chunk_sum", 4, 80.0, {"l2.hit_pct": 93.25, "l2.bytes": 2.5e6}],
                             ["fill", 1, 20.0, {"l2.bytes": 1e6}]])
        return Command(("sh", "-c", 'printf %s "$0" > "$1"', record, str(out_dir / "l2.json")),
                       out_dir)

    def parse(self, out_dir: Path) -> dict[str, object]:
        kernels = [KernelProfile(name, launches, total, metrics)
                   for name, launches, total, metrics in json.loads((out_dir / "l2.json").read_text())]
        return {"tool": "l2cache", "kernels": [k.to_json() for k in kernels],
                # each form a profiler may give: the record, its JSON, a tuple
                "columns": [MetricColumn("L2 hit %", "l2.hit_pct"),
                            {"header": "L2 MB", "metric": "l2.bytes", "scale": 1e-6, "fmt": "{:.2f}"},
                            ("L2 misses", "l2.misses", 1.0, "{:.0f}")]}


class Plugin:
    @hookimpl
    def kernelopt_register_profilers(self) -> list[object]:
        return [CacheProfiler()]


class Bench:
    def bench(self, target: Target, tree: Tree) -> Command:
        return Command(("true",), tree.src)

    def engine(self, target: Target, tree: Tree) -> None:
        return None


def _profile(tmp_path: Path, profiler: object, files: dict[str, bytes]) -> dict[str, Any]:
    """``profiler`` run by Profiling on a bench of nothing, the target's kernels those of
    ``files``; the profile event as journaled (read back from the JSON lines)."""
    class One:
        @hookimpl
        def kernelopt_register_profilers(self) -> list[object]:
            return [profiler]

    target = Target("cmake", "chunk", tmp_path, ("kernel.cu",))
    context = RunContext.open("r", tmp_path, Bench(), target,  # type: ignore[arg-type]
                              Settings(state_root=tmp_path / "state"))
    profiling = Profiling(profiler.name, plugin_host(One()), context)  # type: ignore[attr-defined]
    tree = Tree("baseline", tmp_path / "src", tmp_path / "build")
    tree.src.mkdir(exist_ok=True)
    profiling.run(tree, files, tmp_path / "profile", "baseline")
    context.journal.close()
    lines = (tmp_path / "journal.jsonl").read_text().splitlines()
    return next(e for e in map(json.loads, lines) if e["event"] == "profile")


def _report(profile_event: dict[str, Any]) -> str:
    """report.md of a run whose journal holds ``profile_event``."""
    journal = records(run_header({"name": "chunk", "files": ["kernel.cu"]}),
                      events.Baseline(ms=1.0, samples=[1.0, 1.0, 1.01]), profile_event,
                      events.Verdict(status="fallback", candidate=None, reason="none faster"),
                      events.End(exit_code=1, wall_seconds=1.0, gpu_seconds=0.5))
    return render_markdown(journal, summarize(journal))


def test_a_profilers_own_columns_reach_the_report_and_a_missing_metric_is_not_0(
        tmp_path: Path) -> None:
    kernel = b"__global__ void chunk_sum(float *x) {}\n"
    event = _profile(tmp_path, CacheProfiler(), {"kernel.cu": kernel})
    # journaled as JSON, whatever form parse gave
    assert event["metrics"]["columns"] == [
        {"header": "L2 hit %", "metric": "l2.hit_pct", "scale": 1.0, "fmt": "{:.1f}"},
        {"header": "L2 MB", "metric": "l2.bytes", "scale": 1e-6, "fmt": "{:.2f}"},
        {"header": "L2 misses", "metric": "l2.misses", "scale": 1.0, "fmt": "{:.0f}"}]
    md = _report(event)
    assert "## Profile (l2cache, per launch)" in md
    # time and share (what every profiler's kernels have), then its own; nothing of ncu's
    assert ("| profile | kernel | launches | µs/launch | share % | L2 hit % | L2 MB | L2 misses |"
            in md)
    assert "DRAM" not in md and "top stalls" not in md
    # the target's kernel: 80 µs over 4 launches, 80 % of the time; no kernel measured misses
    assert f"| baseline | `chunk_sum` | 4 | 20.00 | 80.0 | 93.2 | 2.50 | {MISSING} |" in md
    # every kernel when none is the target's: fill has no hit rate, shown as missing
    event["metrics"]["kernels"] = [{**k, "target": False} for k in event["metrics"]["kernels"]]
    md = _report(event)
    assert f"| baseline | `fill` | 1 | 20.00 | 20.0 | {MISSING} | 1.00 | {MISSING} |" in md


def test_a_profiler_that_declares_no_columns_gets_time_and_share_only() -> None:
    kernels = [k.to_json() for k in ncu_kernels((FIXTURES / "ncu-multikernel.csv").read_text())]
    profile = profile_view.annotate({"tool": "mine", "kernels": kernels}, {})
    table = profile_view.kernel_table([("baseline", profile)])
    # its kernels carry ncu's metrics, but it named none: no column is made up for them
    assert table[0] == "| profile | kernel | launches | µs/launch | share % |"
    assert table[2].startswith("| baseline | `scale_add(") and table[2].endswith(
        "| 6 | 229.23 | 79.7 |")  # 6 × 229.23 µs of 1724.9 µs


def test_ncus_table_is_unchanged_and_a_metric_it_did_not_read_is_not_0() -> None:
    parsed = {"tool": "ncu", "kernels": [k.to_json() for k in ncu_kernels(
        (FIXTURES / "ncu-cmake-cuda-baseline.csv").read_text())]}
    profile = profile_view.annotate(parsed, {"row_sum_kernel": "kernel.cu"})
    table = profile_view.kernel_table([("baseline", profile)])
    assert table[:3] == [
        "| profile | kernel | launches | µs/launch | DRAM read MB | DRAM write MB | DRAM % peak "
        "| SM % peak | occupancy % | regs/thread | smem/block B | top stalls |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
        "| baseline | `void <unnamed>::row_sum_kernel<1>(const float *, float *, in` | 8 | 193.86 "
        "| 268.4 | 2.4 | 29.0 | 9.7 | 47.8 | 44 | 0 | long_scoreboard 72.2, wait 2.3, "
        "branch_resolving 0.3 |"]
    # ncu's whole-program mode reads duration and launch shape only: the rest is missing,
    # shared memory too (two missing values are no sum of 0)
    shape = {"gpu__time_duration.sum.us": 12.5, "launch__registers_per_thread": 32.0}
    whole = {"tool": "ncu", "kernels": [KernelProfile("k", 2, 25.0, shape).to_json()]}
    row = profile_view.kernel_table([("prefill", whole)])[2]
    assert row == f"| prefill | `k` | 2 | 12.50 |{f' {MISSING} |' * 5} 32 | {MISSING} | {MISSING} |"
    # one of the two read: that one, not a sum with a made-up 0
    half = KernelProfile("k", 1, 1.0, {"launch__shared_mem_per_block_dynamic": 4096.0})
    row = profile_view.kernel_table([("b", {"tool": "ncu", "kernels": [half.to_json()]})])[2]
    assert row.endswith(f"| {MISSING} | 4096 | {MISSING} |")
    # columns a profiler reporting as ncu adds follow ncu's, before the stalls
    extra = {**whole, "columns": [MetricColumn("L2 hit %", "l2.hit_pct").to_json()]}
    assert profile_view.kernel_table([("b", extra)])[0].endswith(
        "| smem/block B | L2 hit % | top stalls |")


@pytest.mark.parametrize("columns, says", [
    ([{"header": "L2", "metric": "l2", "fmt": "{:d}"}], "does not format a number"),
    ([{"header": "L2"}], "metric"),
    ("L2 hit %", "a list of columns"),
    ([42], "not a MetricColumn"),
])
def test_a_malformed_column_is_the_profilers_failure(tmp_path: Path, columns: object,
                                                     says: str) -> None:
    class Broken(CacheProfiler):
        name = "broken"

        def parse(self, out_dir: Path) -> dict[str, object]:
            return {**super().parse(out_dir), "columns": columns}

    journaled = _profile(tmp_path, Broken(), {})
    assert journaled["metrics"]["error"].startswith("broken's parse failed: ValueError: ")
    assert says in journaled["metrics"]["error"]
    assert "## Profile" not in _report(journaled)


def test_kernelopt_profile_shows_the_profilers_columns(chunk_project: Path,
                                                       tmp_path: Path) -> None:
    class Scripted(ScriptedBackend):
        def discover(self, path: Path, settings: Settings) -> list[Target]:
            return [Target(self.name, "chunk-sum", path.resolve(), ("kernel.cu",))]

    (chunk_project / "kernel.cu").write_text("__global__ void chunk_sum(float *x) {}\n")

    class Both(Plugin):
        @hookimpl
        def kernelopt_register_backends(self) -> list[object]:
            return [Scripted()]

    cli.host = plugin_host(Both())  # type: ignore[attr-defined]
    try:
        result = CliRunner().invoke(cli, ["profile", str(chunk_project), "--backend", "scripted",
                                          "--profiler", "l2cache", "--state-root",
                                          str(tmp_path / "state")], standalone_mode=False)
    finally:
        cli.host = None  # type: ignore[attr-defined]
    assert result.exception is None, result.output
    row = f"| baseline | `chunk_sum` | 4 | 20.00 | 80.0 | 93.2 | 2.50 | {MISSING} |"
    assert row in result.output
    [folder] = (tmp_path / "state" / "profiles").iterdir()
    markdown = (folder / "profile.md").read_text()
    assert "| L2 hit % | L2 MB | L2 misses |" in markdown and row in markdown
