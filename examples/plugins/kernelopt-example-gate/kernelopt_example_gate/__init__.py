"""kernelopt-example-gate: the ``maxlines`` gate, which rejects a candidate whose edits add
more than ``max_added_lines`` lines to the editable files (a reviewer's budget for an LLM's
rewrite), with its own option table ``[maxlines]``.

Turn it on in kernelopt.toml (or the user's config)::

    [gates]
    candidate = ["policy", "maxlines", "build", "correctness", "screen"]

    [maxlines]
    max_added_lines = 40

or for one run: ``--max-added-lines 40``, ``KERNELOPT_MAX_ADDED_LINES=40`` or ``-o
maxlines.max_added_lines=40``. It imports only ``kernelopt_core.api`` and the standard library.
"""

from __future__ import annotations

import difflib

import attrs

from kernelopt_core.api import GateContext, GateResult, hookimpl, option, option_table


@option_table("maxlines")
@attrs.frozen
class MaxLinesOptions:
    max_added_lines: int = option(
        40, "maxlines gate: the most lines a candidate may add to the editable files.",
        validator=attrs.validators.ge(0))


def added_lines(before: bytes, after: bytes) -> int:
    """Lines in ``after`` that ``before`` does not have (a changed line counts once)."""
    old = before.decode("utf-8", errors="replace").splitlines()
    new = after.decode("utf-8", errors="replace").splitlines()
    return sum(1 for line in difflib.ndiff(old, new) if line.startswith("+ "))


class MaxLinesGate:
    name = "maxlines"
    phase = "candidate"  # judged on every candidate, before it is built

    def evaluate(self, ctx: GateContext) -> GateResult:
        limit = ctx.settings.section(MaxLinesOptions).max_added_lines
        added = {path: added_lines(ctx.baseline_files.get(path, b""), content)
                 for path, content in ctx.edits.items()}
        total = sum(added.values())
        metrics = {"added_lines": total, "max_added_lines": limit}
        if total > limit:
            worst = max(added, key=lambda path: added[path])
            return GateResult(self.name, False, f"adds {total} lines (most in {worst}), more "
                              f"than max_added_lines = {limit}", metrics)
        return GateResult(self.name, True, f"adds {total} of at most {limit} lines", metrics)


@hookimpl
def kernelopt_register_gates() -> list[MaxLinesGate]:
    return [MaxLinesGate()]


@hookimpl
def kernelopt_option_tables() -> list[type]:
    return [MaxLinesOptions]
