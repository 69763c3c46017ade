"""Issue 53's model table from `bench/h200_modes.sh campaign MODEL MODE` folders: one summary
per model and the table across them.

    python3 bench/modes_table.py DIR [DIR ...] [--out DIR]

Reads, in each DIR, every ``<model>-model_compare.json`` (the campaign's model check: one
process, every mode), ``<model>-race.json`` (the capture's race, where it ran) and
``<model>-capture-depthwise.json`` (the capture's depthwise choice, where it made one),
``<model>-runs/<run>/summary.json`` or the same inside ``<model>-campaign.tar.gz`` (each
kernel's verdict, its engine gate's reason). Prints a
markdown table (each mode's median ms ± spread, what kernelopt returns and its ratio to
max-autotune) and, with ``--out``, writes ``<model>-summary.json`` there. Nothing is measured
here: every number is copied from those files.
"""

from __future__ import annotations

import argparse
import json
import sys
import tarfile
from pathlib import Path
from typing import Any

MODES = ("eager", "default", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")


def run_summaries(folder: Path, model: str) -> list[tuple[str, dict[str, Any]]]:
    """Each run's summary.json, by run name: from ``<model>-runs/<run>/`` or, where the call
    packed them, ``<model>-campaign.tar.gz`` (``runs/<run>/summary.json``)."""
    found = {p.parent.name: json.loads(p.read_text())
             for p in (folder / f"{model}-runs").glob("*/summary.json")}
    packed = folder / f"{model}-campaign.tar.gz"
    if not found and packed.is_file():
        with tarfile.open(packed) as tar:
            for member in tar.getmembers():
                parts = Path(member.name).parts
                if len(parts) == 3 and parts[0] == "runs" and parts[2] == "summary.json":
                    data = tar.extractfile(member)
                    if data is not None:
                        found[parts[1]] = json.loads(data.read())
    return sorted(found.items())


def model_summary(folder: Path, model: str) -> dict[str, Any]:
    """One model's summary from a campaign folder of h200_modes.sh."""
    check = json.loads((folder / f"{model}-model_compare.json").read_text())
    modes = check["modes"]
    ours = check["kernelopt"]
    race = folder / f"{model}-race.json"
    runs = []
    for name, run in run_summaries(folder, model):
        runs.append({"run": name, "kernel": (run.get("target") or {}).get("name"),
                     "status": run.get("status"), "speedup": run.get("speedup"),
                     "verdict": run.get("report_line"), "engine": run.get("engine")})
    return {
        "model": check.get("model"), "device": check.get("device"), "torch": check.get("torch"),
        "compile": check.get("compile"), "baseline": check.get("baseline"), "kernelopt": ours,
        "choice": check.get("choice"),
        "model_ms": {m: modes[m]["ms"] for m in modes},
        "spread_pct": {m: modes[m].get("spread_pct") for m in modes},
        "match": {m: modes[m].get("match") for m in modes},
        "kernelopt_vs_max_autotune": (modes["max-autotune"]["ms"] / modes[ours]["ms"]
                                      if "max-autotune" in modes else None),
        "race": json.loads(race.read_text()).get("choice") if race.is_file() else None,
        "depthwise": depthwise_summary(folder / f"{model}-capture-depthwise.json"),
        "runs": runs,
    }


def depthwise_summary(path: Path) -> dict[str, Any] | None:
    """The capture's depthwise choice in brief: per shape whether kernelopt's kernel took it,
    both sides' GPU ms a call and why; the form and the search's seconds."""
    if not path.is_file():
        return None
    record = json.loads(path.read_text())
    return {"form": record.get("form"), "search_s": record.get("search_s"),
            "precompile": record.get("precompile"), "error": record.get("error"),
            "shapes": [{k: shape.get(k) for k in ("key", "calls", "chosen", "library_ms",
                                                  "kernel_ms", "why")}
                       for shape in record.get("shapes", [])]}


def table(summaries: dict[str, dict[str, Any]]) -> str:
    head = ["model", *MODES, "kernelopt", "kernelopt vs max-autotune"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, s in summaries.items():
        cells = [f"{s['model_ms'][m]:.4f} ±{s['spread_pct'][m]:.1f} %" if m in s["model_ms"]
                 else "—" for m in MODES]
        ratio = s["kernelopt_vs_max_autotune"]
        lines.append("| " + " | ".join([name, *cells, f"{s['kernelopt']} "
                                        f"({s['model_ms'][s['kernelopt']]:.4f})",
                                        f"{ratio:.3f}×" if ratio else "—"]) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 bench/modes_table.py")
    parser.add_argument("dirs", type=Path, nargs="+")
    parser.add_argument("--out", type=Path)
    ns = parser.parse_args(argv)
    summaries: dict[str, dict[str, Any]] = {}
    for folder in ns.dirs:
        for check in sorted(folder.glob("*-model_compare.json")):
            model = check.name.removesuffix("-model_compare.json")
            summaries[model] = model_summary(folder, model)
    if not summaries:
        print(f"no *-model_compare.json under {', '.join(map(str, ns.dirs))}", file=sys.stderr)
        return 2
    if ns.out:
        ns.out.mkdir(parents=True, exist_ok=True)
        for model, summary in summaries.items():
            (ns.out / f"{model}-summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(table(summaries))
    return 0


if __name__ == "__main__":
    sys.exit(main())
