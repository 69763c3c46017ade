"""Knob values that do not compile cost seconds, not candidates: before the search, each
value of each knob (the others at the baseline's) is compiled alone by the backend's
``compile_probe`` and a value that fails is dropped (a static_assert that pins a block size,
a template that does not instantiate). The baseline's own value is never dropped; a knob left
with it alone is no knob.

The core writes each variant's edited files under ``<dir>/<id>/`` and the list in
``<dir>/variants.json``; the backend's command compiles the translation units they affect
without writing the tree or its build, and prints one line
``{"kernelopt_probe": 1, "results": {"<id>": {"ok": bool, "error": "..."}}}``. No GPU is
involved: the command runs outside the GPU lock, under the build timeout."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import attrs

from kernelopt_core import events
from kernelopt_core import knobs as knob_edit
from kernelopt_core.capabilities import ProbesCompile
from kernelopt_core.run_context import RunContext
from kernelopt_core.target import Knob

MARK = '{"kernelopt_probe"'


def usable(context: RunContext, knobs: tuple[Knob, ...], baseline: dict[str, str],
           out_dir: Path) -> tuple[Knob, ...]:
    """``knobs`` without the values the backend's compile probe rejects in the run's baseline
    tree (all of them when the backend has no probe or the probe itself fails: the
    candidates' builds then judge)."""
    backend, runner, journal = context.backend, context.runner, context.journal
    tree, files = context.workspace.baseline_tree, context.workspace.files
    if not isinstance(backend, ProbesCompile) or not knobs:
        return knobs
    variants = _write_variants(knobs, files, baseline, out_dir)
    command = backend.compile_probe(context.target, tree, out_dir) if variants else None
    if command is None:
        shutil.rmtree(out_dir, ignore_errors=True)
        return knobs
    # compiles, as a build
    command = attrs.evolve(command, timeout_s=context.settings.timeouts.build_timeout_s)
    result = runner.spawn(command, out_dir / "probe.log")
    results = _results(result.stdout) if result.ok else None
    if results is None:
        journal.record(events.KnobProbe(ok=False, variants=len(variants),
                                         error=f"{result.describe()}: {result.tail(1500)}"))
        return knobs
    failed: dict[str, dict[str, str]] = {}
    for v in variants:
        got = results.get(v["id"])
        if isinstance(got, dict) and got.get("ok") is False:  # no result: not judged, kept
            failed.setdefault(v["knob"], {})[v["value"]] = str(got.get("error", ""))[:300]
    kept = []
    for knob in knobs:
        values = tuple(x for x in knob.values
                       if x == baseline[knob.name] or x not in failed.get(knob.name, {}))
        if len(values) > 1:
            kept.append(attrs.evolve(knob, values=values))
    journal.record(events.KnobProbe(
        ok=True, variants=len(variants), seconds=round(result.seconds, 1), failed=failed,
        dropped=[k.name for k in knobs if k.name not in {x.name for x in kept}]))
    for scratch in out_dir.iterdir():  # the edited copies and objects; probe.log stays
        if scratch.is_dir():
            shutil.rmtree(scratch, ignore_errors=True)
    return tuple(kept)


def _write_variants(knobs: tuple[Knob, ...], files: dict[str, bytes], baseline: dict[str, str],
                    out_dir: Path) -> list[dict[str, Any]]:
    shutil.rmtree(out_dir, ignore_errors=True)
    variants: list[dict[str, Any]] = []
    for knob in knobs:
        for value in knob.values:
            if value == baseline[knob.name]:
                continue
            edits = knob_edit.apply(knobs, files, {**baseline, knob.name: value})
            if not edits:
                continue
            vid = f"v{len(variants) + 1}"
            for rel, data in edits.items():
                path = out_dir / vid / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
            variants.append({"id": vid, "knob": knob.name, "value": value, "files": sorted(edits)})
    if variants:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "variants.json").write_text(json.dumps(variants, indent=1))
    return variants


def _results(stdout: str) -> dict[str, dict[str, Any]] | None:
    for line in reversed(stdout.splitlines()):
        if line.strip().startswith(MARK):
            try:
                data = json.loads(line)
            except ValueError:
                return None
            results = data.get("results") if isinstance(data, dict) else None
            return results if isinstance(results, dict) else None
    return None
