"""`kernelopt watch`'s terminal view (part of the UI layer with ui.py: it prints). It reads
only the run's journal, as it grows, through kernelopt_core.watch_state; rich draws it where
it is installed (the optional extra ``kernelopt[watch]``), plain text otherwise."""

from __future__ import annotations

import json
import math
import os
import platform
import time
from pathlib import Path
from typing import Any

from kernelopt_core.watch_state import WatchState, fold

SPARK = "▁▂▃▄▅▆▇█"


class JournalTail:
    """The journal's complete lines appended since the last read (a line still being written
    waits for its newline)."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset, self.partial = path, 0, b""

    def read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        if self.path.stat().st_size < self.offset:  # truncated or replaced: from the start
            self.offset, self.partial = 0, b""
        with open(self.path, "rb") as fh:
            fh.seek(self.offset)
            data = fh.read()
        self.offset += len(data)
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()
        events = []
        for line in lines:
            try:
                events.append(json.loads(line))
            except ValueError:
                continue  # not an event (a torn write is completed by the next read)
        return events


def spark(values: list[float], width: int = 40) -> str:
    if not values:
        return ""
    values = [v for v in values if math.isfinite(v)][-width:]
    if not values:
        return ""
    low, high = min(values), max(values)
    span = high - low or 1.0
    return "".join(SPARK[int((v - low) / span * (len(SPARK) - 1))] for v in values)


def rows(s: WatchState) -> list[tuple[str, str]]:
    """The state as (name, value) rows, in the order the view shows them."""
    stage = s.stage + (f" ({s.stage_candidate})" if s.stage_candidate else "")
    of = f" of {s.iterations}" if s.iterations else ""
    table = [
        ("target", f"{s.target} {s.shape}".strip()),
        ("planner", s.planner or "-"),
        ("stage", stage),
        ("elapsed", f"{s.elapsed_s:.0f} s, " + (f"{s.gpu_seconds:.1f} GPU-s" if s.ended else
                                                 f"≥ {s.gpu_seconds:.1f} GPU-s (timed windows)")),
        ("baseline", f"{s.baseline_ms:.4g} ms" if s.baseline_ms else "-"),
        ("candidates", f"{s.proposed} proposed, {s.evaluated}{of} evaluated, "
                       f"{s.accepted} accepted"),
        ("rejected at", ", ".join(f"{g} {n}" for g, n in sorted(s.rejections.items())) or "-"),
        ("trying", s.trying or "-"),
        ("screening", s.screening or "-"),
        ("best so far", f"{s.best:.3f}× ({s.best_candidate})" if s.best_candidate else "-"),
        ("best over time", spark([b for _t, b in s.history]) or "-"),
    ]
    if s.confirm:
        b, c = s.confirm[max(s.confirm)]
        table.append(("confirm", f"{s.confirm_candidate}: {len(s.confirm)} rounds, median "
                                f"{s.confirm_ratio:.3f}× (last {b:.4g} / {c:.4g} ms)"))
    waits = [f"{s.lock_wait_s:.1f} s for the workspace"] if s.lock_wait_s else []
    if s.gpu_lock_wait_s >= 0.05:
        waits.append(f"{s.gpu_lock_wait_s:.1f} s for the GPU lock")
    if waits:
        table.append(("waited", ", ".join(waits)))
    if s.llm_calls:
        table.append(("LLM", f"{s.llm_calls} calls, ${s.llm_cost:.4f}"))
    if s.verdict:
        table.append(("verdict", s.verdict))
    if s.ended:
        table.append(("ended", f"exit {s.exit_code}"))
    elif gone(s):
        table.append(("ended", f"the run's process {s.pid} is gone without an end event"))
    return table


def view(s: WatchState) -> Any:
    """The state as a rich table."""
    from rich.table import Table

    table = Table(title=f"kernelopt {s.run_id}", show_header=False, expand=False)
    table.add_column(style="bold")
    table.add_column()
    for name, value in rows(s):
        table.add_row(name, value)
    return table


def plain(s: WatchState) -> str:
    """The same rows as text, where rich is not installed (it is an optional extra)."""
    table = rows(s)
    width = max(len(name) for name, _value in table)
    return "\n".join([f"kernelopt {s.run_id}", *(f"  {name.ljust(width)}  {value}"
                                                   for name, value in table)])


def gone(s: WatchState) -> bool:
    """The run's process, on this host, is no longer alive (killed, the machine rebooted)."""
    if s.ended or not s.pid or s.host != platform.node():
        return False
    try:
        os.kill(int(s.pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, another user's
        return False
    return False


class LiveView:
    """Journal listener for ``kernelopt run --watch``: the same view, drawn in this terminal as
    the run writes its journal (instead of ui.Progress's lines); stopped at the run's end."""

    def __init__(self) -> None:
        import importlib.util

        from kernelopt_core.errors import PrerequisiteError

        if importlib.util.find_spec("rich") is None:  # checked before the run starts
            raise PrerequisiteError("--watch needs rich",
                                    hint="pip install 'kernelopt[watch]' (or: pip install rich)")
        self.state = WatchState()
        self.live: Any = None

    def __call__(self, record: dict[str, Any]) -> None:
        from rich.console import Console
        from rich.live import Live

        self.state.add(record)
        if self.live is None:
            self.live = Live(view(self.state), console=Console(stderr=True),
                             refresh_per_second=4)
            self.live.start()
        else:
            self.live.update(view(self.state))
        if self.state.ended:
            self.stop()

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()


def _watch_plain(tail: JournalTail, state: WatchState, once: bool, interval_s: float) -> WatchState:
    """Without rich: one frame, or a frame each time the journal grows (redrawn in place on a
    terminal, appended otherwise)."""
    import sys

    import click

    click.echo(plain(state))
    while not once and not state.ended and not gone(state):
        time.sleep(interval_s)
        new = tail.read()
        for event in new:
            state.add(event)
        if new:
            if sys.stdout.isatty():
                click.echo("\x1b[2J\x1b[H", nl=False)  # clear the screen, cursor home
            click.echo(plain(state))
    return state


def watch(journal: Path, once: bool, interval_s: float = 0.5) -> WatchState:
    """Draw the run from its journal until its ``end`` event (``once``: one frame now); with
    rich where it is installed, else as plain text."""
    import importlib.util

    tail = JournalTail(journal)
    state = fold(tail.read())
    if importlib.util.find_spec("rich") is None:
        return _watch_plain(tail, state, once, interval_s)
    from rich.console import Console
    from rich.live import Live

    console = Console()
    if once:
        console.print(view(state))
        return state
    with Live(view(state), console=console, refresh_per_second=4) as live:
        while not state.ended and not gone(state):
            time.sleep(interval_s)
            for event in tail.read():
                state.add(event)
            live.update(view(state))
    return state
