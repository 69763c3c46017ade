"""The only module that prints. Progress goes to stderr; results to stdout."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any

import click

from kernelopt_core import events

_status = {"open": False}  # a TTY status line without its newline is on the terminal


def _end_status() -> None:
    """Clear an open status line, so what is printed next starts on a line of its own."""
    if _status["open"]:
        click.echo("\r\x1b[2K", err=True, nl=False)
        _status["open"] = False


def echo(text: str = "") -> None:
    _end_status()
    click.echo(text)


def note(text: str) -> None:
    _end_status()
    click.echo(text, err=True)


PLUGIN_FAULTS = ("PluginError", "plugin")  # RunError kinds of a plugin's fault (exit 3 too)


def error(text: str, exit_code: int, kind: str | None = None) -> None:
    """``kind``: the error's kind (a RunError's) where it tells more than the exit code."""
    _end_status()
    kind = "plugin fault" if kind in PLUGIN_FAULTS else {
        2: "error", 3: "missing prerequisite", 4: "internal error", 130: "stopped"}.get(exit_code, "error")
    click.secho(f"kernelopt: {kind}: {text}", err=True, fg="red")


def table(rows: Sequence[Sequence[Any]], headers: Sequence[str]) -> None:
    _end_status()
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for n, row in enumerate(cells):
        click.echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if n == 0:
            click.echo("  ".join("-" * w for w in widths))


class Progress:
    """Journal listener: stage, candidate and best-so-far while the loop runs."""

    def __init__(self) -> None:
        self.best = 1.0
        self.candidate = "-"
        self.tty = sys.stderr.isatty()
        self.started = time.time()
        self.of: int | None = None  # the iteration budget, from the run's header

    def _line(self, text: str, final: bool = True) -> None:
        if not final and not self.tty:  # a log keeps the lines that say something, not each stage
            return
        if self.tty and not final:
            click.echo(f"\r\x1b[2K{text}", err=True, nl=False)
            _status["open"] = True
        else:
            click.echo(("\r\x1b[2K" if self.tty else "") + text, err=True)
            _status["open"] = False

    def __call__(self, record: dict[str, Any]) -> None:
        match events.parse(record):
            case events.Config() as e:
                self._line(f"planner: {e.planner} ({e.planner_reason})")
                self._line(f"gates: {' → '.join(e.candidate_gates)}, then "
                           f"{' → '.join(e.final_gates)}")
            case events.Stage(stage="baseline build", earlier_seconds=float() | int() as s) as e:
                # said in a log too: a build can be long, and the last one says how long
                self._line(f"[baseline build] building the unmodified target (its last build, "
                           f"in run {e.earlier_run}, took {s:.0f} s)")
            case events.Stage() as e:
                self.candidate = e.candidate or self.candidate
                self._line(f"[{e.stage}] {self.candidate}  best {self.best:.3f}×", final=False)
            case events.Built(tree="baseline") as e if e.ok is not False:
                steps = ", ".join(f"{s['label']} {s['seconds']:.1f} s" for s in e.steps)
                self._line(f"baseline built in {e.seconds:.1f} s ({steps})")
            case events.Baseline(ms=float() | int() as ms, samples=samples):
                self._line(f"baseline: {ms:.4g} ms (median of {len(samples)})")
            case events.WorkspaceWait() as e:
                who = f"run {e.run_id} (pid {e.pid})" if e.run_id else "another run"
                self._line(f"waiting: the workspace of {e.target} is held by {who}; this run "
                           "starts when it ends")
            case events.Run() as e:
                self.started = record.get("t", time.time())
                self.of = e.settings.get("iterations")
            case events.Candidate() as e:
                self.candidate = e.candidate
                of = f" of at most {self.of}" if self.of else ""
                elapsed = time.time() - self.started
                self._line(f"{e.candidate} ({e.candidate.lstrip('c')}{of}, {elapsed:.0f} s, best "
                           f"{self.best:.3f}×): {e.description[:100]}")
            case events.CandidateResult() as e:
                verdict = "accepted" if e.accepted else f"rejected at {e.failed_gate}"
                timed = "—" if e.speedup is None else f"{e.speedup:.3f}×"
                why = e.reason.splitlines()[0] if e.reason else ""
                self._line(f"{e.candidate}: {verdict}, {timed}  "  # a rejection: its whole
                           f"({why if not e.accepted else why[:90]})")  # reason line
            case events.Best() as e:
                self.best = e.speedup
            case events.Resumed() as e:  # the earlier attempts' best, before the replay serves it
                self.best = max(self.best, float(e.best))
                self._line(f"resumed: {len(e.completed)} candidate(s) served from the journal, "
                           f"best {self.best:.3f}×")
            case events.SearchEnd() as e:
                n = e.evaluated
                self._line(f"search ended: {e.reason} after {n} candidate{'' if n == 1 else 's'}")
            case events.GateWarning(gate="tuner") as e:  # a range grown, a best at its edge
                self._line(f"tuner: {e.message}")
            case events.Profile() as e if e.metrics.get("error"):
                self._line(f"warning: no {e.profiler} profile of the {e.tree}: "
                           f"{str(e.metrics['error']).splitlines()[0][:200]}")
            case events.ConfirmRound() as e:
                b, c = e.baseline_ms, e.candidate_ms
                again = " (retake: a transient reading)" if e.retake else ""
                self._line(f"  confirm round {e.round}: {b:.4g} vs {c:.4g} ms "
                           f"({b / c:.3f}×){again}")


def summary(summary: dict[str, Any], run_dir: str) -> None:
    _end_status()
    colour = {"optimized": "green", "matched": "yellow", "unverified": "yellow"}.get(
        summary["status"], "red"
    )
    line = summary["report_line"]
    if not line.startswith(summary["status"]):
        line = f"{summary['status']}: {line}"
    if not summary.get("error"):  # an error's message follows once, on stderr, with its fix
        click.secho(line, fg=colour, bold=True)
    click.echo(f"run: {summary['run_id']}  ({run_dir})")
    if summary.get("diff"):
        click.echo(f"diff: {run_dir}/report.diff  (apply it: kernelopt apply "
                   f"{summary['run_id']}; undo: kernelopt revert {summary['run_id']})")
    click.echo(f"report: {run_dir}/report.md  (drawn: {run_dir}/report.html)")
