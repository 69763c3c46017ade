"""What the knob probe (knob_probe.py) dropped before the search, for report.md (pure)."""

from __future__ import annotations

from typing import Any

from kernelopt_core import events


def report_lines(records: list[dict[str, Any]]) -> list[str]:
    """report.md's section on the values the probe dropped before the search, with why (a
    compile error; for llama.cpp also a value that changes no kernel the timed case launches)."""
    probe = next((e for e in events.of(records, events.KnobProbe) if e.ok), None)
    failed: dict[str, dict[str, str]] = (probe.failed if probe else None) or {}
    if not failed:
        return []
    lines = ["## Knob values not tried (dropped before the search)", "",
             "| knob | values | why |", "|---|---|---|"]
    for knob, values in sorted(failed.items()):
        reasons: dict[str, list[str]] = {}
        for value, why in values.items():
            reasons.setdefault(why.replace("\n", " ")[:200].replace("|", "\\|"), []).append(value)
        for why, dropped in reasons.items():
            lines.append(f"| {knob} | {', '.join(dropped)} | {why} |")
    gone = (probe.dropped if probe else None) or []
    return lines + ([""] + [f"- no value of {', '.join(gone)} is left: not a knob of this run"]
                    if gone else []) + [""]

