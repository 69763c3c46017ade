"""The planners' bulk screening (``PlanContext.screen``): knob configurations applied to the
baseline tree inside its bench worker, each checked on the first seed and timed there, in
batches. The loop builds one per run when the backend has a worker."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

from kernelopt_core.planners.base import Screened
from kernelopt_core.runner import Runner
from kernelopt_core.target import Knob, Tree

Screen = Callable[[list[dict[str, str]]], list[Screened]]


def screener(runner: Runner, tree: Tree, knobs: tuple[Knob, ...], log_dir: Path) -> Screen | None:
    """None when the tree is not served by a worker (then every configuration would cost a
    candidate's processes: the planner proposes candidates instead)."""
    if not knobs or not runner.served(tree):
        return None
    batches = itertools.count(1)

    def screen(configs: list[dict[str, str]]) -> list[Screened]:
        log = log_dir / f"screen-{next(batches)}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        results = runner.sweep(tree, configs, log, knobs) or []
        out = []
        for r in results:
            time_ms, reference = r.get("time_ms"), r.get("reference_ms")
            if not (r.get("ok") and isinstance(time_ms, (int, float)) and time_ms > 0):
                out.append(Screened(dict(r["config"]), False,
                                    error=str(r.get("error", "no time"))[:500]))
                continue
            ratio = (time_ms / reference if isinstance(reference, (int, float)) and reference > 0
                     else None)
            out.append(Screened(dict(r["config"]), True, float(time_ms), ratio))
        return out

    return screen
