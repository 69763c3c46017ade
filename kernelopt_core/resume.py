"""Resume a run killed at any point (SIGKILL, a lost machine) from its journal.

``kernelopt run PATH --run-id ID`` names a run; running the same command again while
``runs/ID/journal.jsonl`` exists resumes it (``kernelopt resume ID`` does that with the
command the journal recorded). The resumed run is the same loop, replayed: the planner is asked
again for each candidate, and while it proposes what the journal holds for that candidate
number (same description, knobs and files) the recorded outcome is served back instead of
building and timing again — so a deterministic planner (the tuner, replay) reaches exactly the
state the killed run had, and completed candidates are never evaluated twice. A candidate cut
off half-way is evaluated again; at the first proposal that differs (an LLM agent) the rest of
the recorded candidates are dropped (``resume_diverged``) and the run goes on live. The
baseline commit is reused (the target must be unchanged), so are the candidates' tags; the
baseline is rebuilt (warm) and tested again (a bench worker times only checked content;
the CUDA memory ledger's bar is its test's) but not timed again. A final phase cut off runs again;
a run that reached its verdict is not run again (its report is rewritten, its exit code kept).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
import portalocker

from kernelopt_core import events as ev
from kernelopt_core import journal as journal_mod
from kernelopt_core.budget import Earlier
from kernelopt_core.errors import UsageError
from kernelopt_core.planners.base import Proposal
from kernelopt_core.search import content_key
from kernelopt_core.target import Target


@attrs.define
class Resumed:
    """What the killed attempts completed, served back to the loop in order."""

    baseline_commit: str | None
    baseline: ev.Baseline | None  # the recorded ``baseline`` event
    # candidate id -> (its ``candidate`` event, its ``candidate_result`` event)
    completed: dict[str, tuple[ev.Candidate, ev.CandidateResult]]
    spent_s: float  # wall seconds of the earlier attempts (the run's wall_seconds)
    gpu_s: float = 0.0  # GPU-lock seconds of the earlier attempts (so is the GPU budget)
    llm_calls: int = 0  # answered LLM calls of the earlier attempts (so are the LLM budgets)
    llm_cost: float = 0.0
    finished: int | None = None  # the exit code, when the run already reached its verdict
    diverged: bool = False
    best: float = 1.0  # the earlier attempts' best screen speedup (the progress line's)
    searched_s: float = 0.0  # their seconds of search (the time budget is shared)

    def earlier(self) -> Earlier:
        """What the earlier attempts spent, for the run's budget (budget.py)."""
        return Earlier(self.spent_s, self.searched_s, self.gpu_s, self.llm_calls, self.llm_cost)

    @classmethod
    def load(cls, journal_path: Path, target: Target) -> Resumed | None:
        """None when there is nothing to resume (no journal, or not even its header); a usage
        error when the journal is another target's run."""
        if not journal_path.is_file():
            return None
        raw = journal_mod.read(journal_path)
        header = ev.first(raw[:1], ev.Run)
        if header is None:
            return None
        was = header.target
        if (was.get("backend"), was.get("name"), was.get("root")) != (
                target.backend, target.name, str(target.root)):
            raise UsageError(
                f"run {journal_path.parent.name} is a run of {was.get('name')} "
                f"({was.get('backend')}) at {was.get('root')}, not of {target.name} at "
                f"{target.root}", hint="give another --run-id (or none) for this target")
        events = journal_mod.effective(raw)
        starts = {e.candidate: e for e in ev.of(events, ev.Candidate)}
        completed = {e.candidate: (starts[e.candidate], e)
                     for e in ev.of(events, ev.CandidateResult) if e.candidate in starts}
        workspace = ev.first(events, ev.Workspace)
        spent, searched = journal_mod.attempt_seconds(raw)
        ended = ev.last(events, ev.End)
        finished = ended.exit_code if ended and ev.first(events, ev.Verdict) else None
        answered = [e for e in ev.of(raw, ev.LLMCall) if e.answered]
        return cls(workspace.baseline_commit if workspace else None,
                   ev.first(events, ev.Baseline), completed, spent, gpu_spent(raw),
                   len(answered), sum(float(e.cost or 0.0) for e in answered), finished,
                   best=max((float(e.speedup) for e in ev.of(events, ev.Best)), default=1.0),
                   searched_s=searched)

    def take(self, cid: str, proposal: Proposal) -> ev.CandidateResult | None:
        """The recorded result of ``cid`` if it completed with this very proposal; at the
        first difference every recorded candidate from here on is dropped (returned by
        ``diverge``) and nothing more is served."""
        if self.diverged or cid not in self.completed:
            return None
        started, result = self.completed[cid]
        digest = content_key(proposal.edits)
        same = (started.description == proposal.description
                and (started.knobs or {}) == dict(proposal.knobs)
                and sorted(started.files or []) == sorted(proposal.edits)
                and (started.digest is None or started.digest == digest))
        return result if same else None

    def pending(self, cid: str) -> bool:
        """Whether ``cid`` may still be served (its recorded outcome costs no time, so the
        budgets do not stop the replay before it)."""
        return not self.diverged and cid in self.completed

    def unserved(self, evaluated: int) -> list[str]:
        """The recorded candidates beyond the ``evaluated`` ones this run reached (it stopped
        earlier: fewer iterations); they are dropped like a divergence."""
        return [] if self.diverged else self.diverge(f"c{evaluated + 1}")

    def diverge(self, cid: str) -> list[str]:
        """Stop serving: the recorded candidates from ``cid`` on (by number) are dropped."""
        self.diverged = True
        number = int(cid[1:])
        return sorted((c for c in self.completed if int(c[1:]) >= number),
                      key=lambda c: int(c[1:]))


def gpu_spent(raw: list[dict[str, Any]]) -> float:
    """GPU-lock seconds a run's journal accounts for: the last running total it holds (each
    evaluated candidate's ``candidate_result`` and each ``end`` carries one; a resumed
    attempt's count goes on from the earlier ones') plus the timed readings and worker
    requests after it. An attempt killed before its next total loses the lock time, since
    the last one, of the steps journaled without their own lock times: checks, shape checks,
    engine and profiler runs."""
    total = since = 0.0
    for record in raw:
        event = ev.parse(record)
        if isinstance(event, (ev.CandidateResult, ev.End)) and event.gpu_seconds is not None:
            total, since = float(event.gpu_seconds), 0.0
        elif isinstance(event, (ev.Bench, ev.WorkerRequest)):
            since += event.held_s
    return total + since


@contextmanager
def run_lock(run_dir: Path) -> Iterator[None]:
    """Held for a whole attempt of a run: a second process for the same run (a campaign
    started twice, a job rerun while the first attempt still lives) is refused, not
    interleaved into one journal."""
    lock = portalocker.Lock(str(run_dir / "run.lock"), timeout=0, fail_when_locked=True)
    try:
        lock.acquire()
    except portalocker.exceptions.AlreadyLocked as exc:
        raise UsageError(f"run {run_dir.name} is running in another process now",
                         hint=f"wait for it (kernelopt watch {run_dir.name})") from exc
    try:
        yield
    finally:
        lock.release()


def check_run_id(run_id: str) -> str:
    if not run_id or not all(ch.isalnum() or ch in "-_." for ch in run_id) or run_id[0] == ".":
        raise UsageError(f"--run-id {run_id!r}: use letters, digits, '-', '_' and '.'",
                         hint="e.g. --run-id softmax-1")
    return run_id
