"""What a run starts and ends with: a run id and the state root (the self-test's too), the
journal's header, and how an early end is journaled."""

from __future__ import annotations

import os
import platform
import secrets
import time
import traceback
from pathlib import Path
from typing import Any

import attrs

from kernelopt_core import __version__, events
from kernelopt_core.errors import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_PREREQUISITE,
    KerneloptError,
)
from kernelopt_core.gates.options import GATE_TABLE_NAMES
from kernelopt_core.journal import Journal
from kernelopt_core.settings import Settings
from kernelopt_core.target import Target


def new_run_id() -> str:
    """Sorts by time (UTC, to the millisecond) and is unique (random suffix)."""
    now = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now))
    return f"{stamp}{int(now * 1000) % 1000:03d}Z-{secrets.token_hex(3)}"


def prepare_state_root(state_root: Path) -> None:
    state_root.mkdir(parents=True, exist_ok=True)
    ignore = state_root / ".gitignore"
    if not ignore.exists():  # keep `git status` of a surrounding repository clean
        ignore.write_text("# created by kernelopt\n*\n", encoding="utf-8")


def write_header(journal: Journal, run_id: str, target: Target, settings: Settings,
                 argv: list[str]) -> None:
    """The journal's first event: who ran what, where, with which settings and their origins."""
    journal.record(events.Run(
        schema=1,
        run_id=run_id,
        kernelopt=__version__,
        argv=argv,
        cwd=os.getcwd(),  # `kernelopt resume` runs the command again from here
        host=platform.node(),
        platform=platform.platform(),
        pid=os.getpid(),
        target={
            "backend": target.backend, "name": target.name, "root": str(target.root),
            "files": list(target.editable), "shape": target.shape, "bytes": target.bytes_moved,
            "harness": sorted(target.harness),
            "flops": target.flops,
            "device": target.device,
        },
        # the built-in gates' options under their flat names (flat()), as before they were
        # tables: report_html reads `kappa` there, old journals and new alike
        settings={**settings.flat(), "tables": {
            name: table for name, table in attrs.asdict(settings)["tables"].items()
            if name not in GATE_TABLE_NAMES}},
        origins=settings.origins,
    ))


def record_failure(journal: Journal, run_dir: Path, exc: BaseException, stage: str,
                   host: Any = None) -> int:
    """Journal how a run ended early; its exit code (130 interrupted, the error's own code, 3
    for a third-party plugin's fault that ``host.at_fault`` names, 4 and a traceback in
    error.log for a bug of kernelopt's)."""
    if isinstance(exc, KeyboardInterrupt):
        journal.record(events.Interrupted(stage=stage))
        return EXIT_INTERRUPTED
    if isinstance(exc, KerneloptError):
        journal.record(events.RunError(kind=type(exc).__name__, message=str(exc),
                                        exit_code=exc.exit_code))
        return exc.exit_code
    log = run_dir / "error.log"
    log.write_text("".join(traceback.format_exception(exc)), encoding="utf-8")
    plugin = host.at_fault(exc) if host is not None else None
    if plugin is not None:
        journal.record(events.RunError(
            kind="plugin", exit_code=EXIT_PREREQUISITE, log=str(log),
            message=f"{plugin.label} raised {type(exc).__name__}: {exc} in the "
            f"{stage or 'run'} step; "
            f"report it to its authors or disable it (KERNELOPT_DISABLE_PLUGINS="
            f"{plugin.name}); traceback: {log}"))
        return EXIT_PREREQUISITE
    journal.record(events.RunError(kind="internal", message=f"{type(exc).__name__}: {exc}",
                                    exit_code=EXIT_INTERNAL, log=str(log)))
    return EXIT_INTERNAL


def record_failed_proposal(journal: Journal, cid: str, parent: str, planner: str,
                           message: str) -> None:
    """A planner's attempt that produced no proposal (an LLM that never gave a usable edit, a
    refused request) is a candidate row of its own: it counts as proposed and the report says
    why it failed."""
    journal.record(events.PlannerError(candidate=cid, parent=parent, message=message))
    journal.record(events.Candidate(candidate=cid, parent=parent, planner=planner,
                                     description="(no proposal: the planner failed)", knobs={},
                                     files=[]))
    journal.record(events.CandidateResult(candidate=cid, accepted=False, speedup=None,
                                           failed_gate="planner", reason=message,
                                           gates_passed=[], tag=None, wall_s=0.0, child_s=0.0))
