"""The sweep request's pieces (Runner.sweep): which knobs, the payload the worker gets, how
long a batch may take, and which failures make its worker untrustworthy."""

from __future__ import annotations

import re
from typing import Any

from kernelopt_core.errors import UsageError
from kernelopt_core.knobs import apply as apply_knobs
from kernelopt_core.settings import Settings
from kernelopt_core.target import Knob, Tree

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
    return settings.bench_timeout_s + configs * (settings.screen_config_timeout_s + MARGIN_S)


def poisoned(results: list[dict[str, Any]]) -> bool:
    """An interrupted configuration or a CUDA error can leave the process unusable for the
    tree's own readings."""
    return any(POISONING.search(str(r.get("error", ""))) for r in results)
