"""The only module that prints. Progress goes to stderr; results to stdout."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any

import click

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


def error(text: str, exit_code: int) -> None:
    _end_status()
    kind = {2: "error", 3: "missing prerequisite", 4: "internal error",
            130: "stopped"}.get(exit_code, "error")
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
        event = record["event"]
        if event == "config":
            self._line(f"planner: {record['planner']} ({record['planner_reason']})")
            self._line(f"gates: {' → '.join(record['candidate_gates'])}, then "
                       f"{' → '.join(record['final_gates'])}")
        elif event == "stage":
            self.candidate = record.get("candidate", self.candidate)
            self._line(f"[{record['stage']}] {self.candidate}  best {self.best:.3f}×", final=False)
        elif event == "baseline" and record.get("ms") is not None:
            self._line(f"baseline: {record['ms']:.4g} ms (median of {len(record['samples'])})")
        elif event == "workspace_wait":
            who = (f"run {record.get('run_id')} (pid {record.get('pid')})"
                   if record.get("run_id") else "another run")
            self._line(f"waiting: the workspace of {record['target']} is held by {who}; this "
                       "run starts when it ends")
        elif event == "run":
            self.started = record.get("t", time.time())
            self.of = (record.get("settings") or {}).get("iterations")
        elif event == "candidate":
            self.candidate = record["candidate"]
            number = record["candidate"].lstrip("c")
            of = f" of at most {self.of}" if self.of else ""
            elapsed = time.time() - self.started
            self._line(f"{record['candidate']} ({number}{of}, {elapsed:.0f} s, best "
                       f"{self.best:.3f}×): {record.get('description', '')[:100]}")
        elif event == "candidate_result":
            verdict = "accepted" if record["accepted"] else f"rejected at {record['failed_gate']}"
            timed = "—" if record["speedup"] is None else f"{record['speedup']:.3f}×"
            why = str(record["reason"]).splitlines()[0] if record["reason"] else ""
            self._line(f"{record['candidate']}: {verdict}, {timed}  "  # a rejection: its whole
                       f"({why if not record['accepted'] else why[:90]})")  # reason line
        elif event == "best":
            self.best = record["speedup"]
        elif event == "resumed":  # the earlier attempts' best, before the replay serves it
            self.best = max(self.best, float(record.get("best") or 1.0))
            self._line(f"resumed: {len(record.get('completed') or [])} candidate(s) served from "
                       f"the journal, best {self.best:.3f}×")
        elif event == "search_end":
            n = record["evaluated"]
            self._line(f"search ended: {record['reason']} after {n} candidate{'' if n == 1 else 's'}")
        elif event == "profile" and (record.get("metrics") or {}).get("error"):
            self._line(f"warning: no {record['profiler']} profile of the {record['tree']}: "
                       f"{str(record['metrics']['error']).splitlines()[0][:200]}")
        elif event == "confirm_round":
            b, c = record["baseline_ms"], record["candidate_ms"]
            again = " (retake: a transient reading)" if record.get("retake") else ""
            self._line(f"  confirm round {record['round']}: {b:.4g} vs {c:.4g} ms "
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
