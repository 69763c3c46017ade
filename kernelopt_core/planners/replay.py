"""The ``replay`` planner: proposes candidates the user wrote, to put them through the gates.

``--candidate kernel.cu=my_kernel.cu`` (repeatable; ``a=x,b=y`` edits two files in one
candidate): the left side is a file of the target (relative to its root), the right side a
local file whose whole content replaces it. Each is proposed once, from the baseline, so a
hand-written kernel gets exactly the verdict a searched one would.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from kernelopt_core.errors import UsageError
from kernelopt_core.hookspecs import hookimpl
from kernelopt_core.options import option, option_table
from kernelopt_core.planners.base import Outcome, PlanContext, Proposal
from kernelopt_core.search import Node
from kernelopt_core.settings import Settings
from kernelopt_core.target import Knob, Target


@option_table("replay")
@attrs.frozen
class ReplayOptions:
    """``[replay]``: the candidates to replay (``--candidate``, repeatable)."""

    candidates: tuple[str, ...] = option(
        (), "Replay a hand-written candidate: FILE=LOCAL_FILE (repeatable).", flag="--candidate",
        repeatable=True)


def candidates(settings: Settings) -> tuple[str, ...]:
    return settings.section(ReplayOptions).candidates


def parse_candidate(spec: str) -> dict[str, Path]:
    pairs: dict[str, Path] = {}
    for part in spec.split(","):
        target_file, sep, local = part.partition("=")
        if not sep or not target_file or not local:
            raise UsageError(f"--candidate {spec!r} is not FILE=LOCAL_FILE[,FILE=LOCAL_FILE]",
                             hint="e.g. --candidate kernel.cu=attempts/fast_kernel.cu")
        path = Path(local).expanduser()
        if not path.is_file():
            raise UsageError(f"--candidate {spec!r}: {local} is not a file")
        pairs[target_file.strip()] = path
    return pairs


class Replay:
    name = "replay"
    exhaustive = True  # every given candidate is evaluated: patience does not apply
    selection_rank = 100  # given candidates are what the user asked for: before any search

    def select(self, settings: Settings, target: Target) -> tuple[bool, str]:
        return bool(candidates(settings)), (
            "chosen by --candidate" if candidates(settings) else "")

    def check_inputs(self, settings: Settings, target: Target, knobs: tuple[Knob, ...]) -> None:
        """Every replayed file is an editable file of the target."""
        for spec in candidates(settings):
            bad = [f for f in parse_candidate(spec) if f not in target.editable]
            if bad:
                raise UsageError(f"--candidate {spec!r}: {', '.join(bad)} is not an "
                                 f"editable file of {target.name!r}",
                                 hint=f"editable: {', '.join(target.editable)}")

    def __init__(self) -> None:
        self.done: set[str] = set()

    def unavailable_reason(self, settings: Settings, target: Target) -> str | None:
        if not candidates(settings):
            return "give the candidates to replay with --candidate FILE=LOCAL_FILE"
        for spec in candidates(settings):
            parse_candidate(spec)
        return None

    def propose(self, ctx: PlanContext, parent: Node, count: int) -> list[Proposal]:
        if parent.id != "baseline":
            return []
        out = []
        for spec in candidates(ctx.settings):
            if spec in self.done:
                continue
            self.done.add(spec)
            edits = {rel: path.read_bytes() for rel, path in parse_candidate(spec).items()}
            out.append(Proposal(f"replay {spec}", edits, planner=self.name))
            if len(out) >= count:
                break
        return out

    def observe(self, ctx: PlanContext, proposal: Proposal, outcome: Outcome) -> None:
        pass


@hookimpl
def kernelopt_register_planners() -> list[object]:
    return [Replay]  # a class: the core makes a fresh one per run


@hookimpl
def kernelopt_option_tables() -> list[type]:
    return [ReplayOptions]
