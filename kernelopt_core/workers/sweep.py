"""Bulk screening in a tree's worker (Runner.sweep): the payload the worker gets, how long a
batch may take, which failures make its worker untrustworthy, and the request itself."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from kernelopt_core import events
from kernelopt_core.errors import BenchFailed, UsageError
from kernelopt_core.knobs import apply as apply_knobs
from kernelopt_core.lock import Held
from kernelopt_core.planners.tuner_options import TunerOptions
from kernelopt_core.settings import Settings
from kernelopt_core.target import Knob, Tree
from kernelopt_core.workers.pool import Pool
from kernelopt_core.workers.protocol import WorkerError

# a screened configuration's error after which its worker is not trusted for readings
POISONING = re.compile(r"took longer than|CUDA error|illegal (memory )?address|"
                       r"unspecified launch failure", re.I)
MARGIN_S = 30.0  # per configuration, beyond its own deadline


def payload(knobs: tuple[Knob, ...], tree: Tree, configs: list[dict[str, str]]
            ) -> list[dict[str, Any]]:
    """Each configuration as the changed files' full text: the core applies the knobs (one rule
    for the tuner and the sweep), the worker only loads what it is given."""
    by_name = {k.name: k for k in knobs}
    unknown = sorted({name for c in configs for name in c} - set(by_name))
    if unknown:
        raise UsageError(f"sweep: unknown knob(s) {', '.join(unknown)}",
                         hint=f"known: {', '.join(sorted(by_name)) or 'none'}")
    files = {f: (tree.src / f).read_bytes() for k in knobs for f, _ in k.sites()}
    return [{"files": {path: text.decode("utf-8") for path, text in
                       apply_knobs(knobs, files, config).items()}} for config in configs]


def timeout_s(settings: Settings, configs: int) -> float:
    """The tree's own reading, then each configuration's deadline with a margin: past it the
    worker is killed (a compile that never yields to Python's signal handler)."""
    deadline = settings.section(TunerOptions).screen_config_timeout_s + MARGIN_S
    return settings.timeouts.bench_timeout_s + configs * deadline


def poisoned(results: list[dict[str, Any]]) -> bool:
    """An interrupted configuration or a CUDA error can leave the process unusable for the
    tree's own readings."""
    return any(POISONING.search(str(r.get("error", ""))) for r in results)


def sweep(pool: Pool, tree: Tree, configs: list[dict[str, str]], log: Path,
          knobs: tuple[Knob, ...] | None = None) -> list[dict[str, Any]] | None:
    """Each configuration of ``knobs`` (default: the target's declared ones; knob name ->
    value) applied to ``tree``'s source inside its worker, checked on the first seed and timed
    there, one process for all. None when the backend has no worker. Results follow
    ``configs``' order: ``{"config", "ok", "time_ms", "error"}``, and the tree's own time as
    ``reference_ms``."""
    if not pool.served(tree):
        return None
    configs_in = payload(pool.target.knobs if knobs is None else knobs, tree, configs)
    held: list[Held] = []
    request = {"configs": configs_in,
               "deadline_s": pool.settings.section(TunerOptions).screen_config_timeout_s}
    timeout = timeout_s(pool.settings, len(configs))
    try:
        loaded = pool.loaded(tree, pool.digest(tree), log)
        if "compile" in loaded.ops:  # CPU work: outside the lock
            ahead = pool.request(loaded.worker, {"op": "compile", **request}, timeout, locked=False)
            pool.journal.record(events.CompiledAhead(
                compiled=ahead.get("compiled"), stuck=ahead.get("stuck"), left=ahead.get("left")))
        reply = pool.request(loaded.worker, {"op": "sweep", **request}, timeout, held)
    except WorkerError as exc:
        raise BenchFailed(str(exc)) from exc
    results_in = reply.get("results")
    if (not reply.get("ok") or not isinstance(results_in, list)
            or len(results_in) != len(configs)
            or not all(isinstance(r, dict) for r in results_in)):
        raise BenchFailed(f"sweep: {str(reply.get('error', 'malformed results'))[:2000]}")
    results = [{**r, "config": c} for r, c in zip(results_in, configs, strict=True)]
    if poisoned(results):  # the next request gets a fresh worker
        pool.retire(tree.role, "a screened configuration ran past its deadline or hit a CUDA error")
    pool.journal.record(events.Sweep(
        tree=tree.role, configs=len(configs), ok=sum(bool(r.get("ok")) for r in results),
        reference_ms=reply.get("reference_ms"), results=results,
        acquired=held[-1].acquired, released=held[-1].released))
    return [{**r, "reference_ms": reply.get("reference_ms")} for r in results]
