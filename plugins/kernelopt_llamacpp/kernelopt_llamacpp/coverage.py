"""What kernelopt did for a model's heaviest editable ops: ``python -m kernelopt_llamacpp.coverage
--state-root S --repo TREE [--campaign NAME] [--top 10]`` prints coverage.json — one object per
op among the top editable ops of the selection ``--top K`` wrote (top_ops.py): its share, whether
and on which case it is timed (or why not, from the source), the kernels the model ran for it
and those its pinned case dispatches, each knob offered with the kernels it reaches (reach.py),
the pinned case's bytes over its time (``pinned_rate``) and where that stands against the
memory peak the roofline gate measured on this machine (``bound``, ``cached_device``), and, for
the ops a run optimized, the candidates built, the verdict, the speedup, the median candidate
cycle (journal: a candidate's proposal to its result) and its roofline before and after against
the run's measured peak. ``account`` sums the listed ops' shares by bound where the pinned case
is the model's node: how much of the model's time is in ops already at their memory roofline,
bound by their launch, or below their roofline (what a search could still gain)."""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any

from kernelopt_core.api import DeviceInfo, Knob, UsageError, cached_device
from kernelopt_llamacpp.case_bytes import case_bytes, case_flops
from kernelopt_llamacpp.reach import Reach, dispatched_instance


def knob_reach(knob: Knob, texts: dict[str, str], reach: Reach) -> list[str] | None:
    """The kernels a change of the knob's value reaches (its first file's edit); None: cannot
    tell."""
    text = texts.get(knob.file)
    match = re.search(knob.pattern, text, re.M) if text is not None else None
    if text is None or match is None:
        return None
    current = match.group(1)
    other = next((v for v in knob.values if v != current), None)
    if other is None:
        return None
    touched = reach.touched(knob.file, text[:match.start(1)] + other + text[match.end(1):])
    return sorted(touched) if touched is not None else None


def run_facts(run: Path) -> dict[str, Any]:
    if not (run / "summary.json").is_file():
        return {"run": run.name, "verdict": None}
    summary = json.loads((run / "summary.json").read_text())
    events = [json.loads(line) for line in (run / "journal.jsonl").read_text().splitlines()
              if line.strip()]
    proposed = {e["candidate"]: e["t"] for e in events if e["event"] == "candidate"}
    cycles = [e["t"] - proposed[e["candidate"]] for e in events
              if e["event"] == "candidate_result" and e.get("candidate") in proposed]
    return {"run": run.name, "verdict": summary.get("status"), "speedup": summary.get("speedup"),
            "baseline_ms": summary.get("baseline_ms"), "final_ms": summary.get("final_ms"),
            "noise_pct": summary.get("noise_pct"), "rounds_won": summary.get("rounds_won"),
            "candidates": summary.get("candidates"),
            "candidate_cycle_s": round(statistics.median(cycles), 1) if cycles else None,
            "wall_s": summary.get("wall_seconds"), "report_line": summary.get("report_line"),
            "roofline": roofline_facts(summary)}


def roofline_facts(summary: dict[str, Any]) -> dict[str, Any] | None:
    """The op's bytes over its baseline's and final time against the run's measured peak: how
    far from its roofline the op was before the search and after (None: no bytes or peak)."""
    roof = summary.get("roofline") or {}
    nbytes, peak = roof.get("bytes"), roof.get("peak_gbps")
    if not nbytes or not peak:
        return None

    def rate(ms: float | None) -> float | None:
        return round(nbytes / (ms * 1e-3) / 1e9, 1) if ms else None

    before, after = rate(summary.get("baseline_ms")), rate(summary.get("final_ms"))
    return {"bytes": nbytes, "peak_gbps": peak, "baseline_gbps": before, "final_gbps": after,
            "baseline_of_peak": round(before / peak, 3) if before else None,
            "final_of_peak": round(after / peak, 3) if after else None,
            # a working set that fits in L2 is not held to the DRAM roofline (gates.md)
            "cache_resident": roof.get("cache_resident")}


def op_entry(row: dict[str, Any], root: Path, state: Path, digest: str, nodes: str | None,
             runs: dict[str, Path], table: dict[str, Any], model: str | None = None,
             device: DeviceInfo | None = None) -> dict[str, Any]:
    from kernelopt_llamacpp import harness, timing, tuning

    route = table[row["op"]]
    entry: dict[str, Any] = {"op": row["op"], "share": round(row["share"], 5),
                             "model_kernels": row["kernels"], "files": list(route.files),
                             # --top K's choice (top_ops.py): searched, or passed over and why
                             "chosen": row.get("chosen", False),
                             "passed_over": row.get("why") or None}
    source = (root / harness.FILE).read_bytes() if (root / harness.FILE).is_file() else b""
    try:
        added, match = timing.timed_cases(route, source, None, timing.model_node(route, nodes),
                                          model)
        entry.update(timed=True, why="", written_case=added[0] if added else None,
                     match=list(match) if match else None)
    except UsageError as exc:
        entry.update(timed=False, why=str(exc))
    pin_path = state / "llamacpp" / f"{digest}-{row['op']}.pin.json"
    pin = json.loads(pin_path.read_text()) if pin_path.is_file() else {}
    entry["pinned_case"] = pin.get("case")
    entry["pinned_rate"] = pinned_rate(row["op"], pin)
    entry["bound"] = bound(row["op"], pin, entry["pinned_rate"], device)
    entry["dispatched"] = [k.get("function") for k in pin.get("dispatched") or []]
    # whether the timed case runs a kernel the model ran for this op (None: not pinned yet)
    entry["dispatches_model_kernel"] = bool(set(entry["dispatched"]) & set(row["kernels"])) \
        if entry["dispatched"] else None
    texts = {f: (root / f).read_text(encoding="utf-8", errors="replace") for f in route.files}
    reach = Reach(texts)
    knobs = tuning.scan({f: t.encode() for f, t in texts.items()}, route.op, route.function)
    entry["knobs"] = [{"name": k.name, "file": k.file, "values": list(k.values),
                       "reaches": knob_reach(k, texts, reach)} for k in knobs]
    if entry["dispatched"]:
        launched = [dispatched_instance(k.get("kernel") or k["function"], k["function"])
                    for k in pin["dispatched"]]
        entry["dispatched_instances"] = launched
        for knob in entry["knobs"]:
            knob["reaches_dispatched"] = None if knob["reaches"] is None else \
                any(reach.may_run(t, k) for t in knob["reaches"] for k in launched)
    if row["op"] in runs:
        entry.update(run_facts(runs[row["op"]]))
    return entry


def pinned_rate(op: str, pin: dict[str, Any]) -> dict[str, Any] | None:
    """The pinned case's bytes over its time when pinned (the baseline's, before any search):
    the tool's kB/run, else the least its operands and output move (case_bytes.py)."""
    us, params = pin.get("us"), pin.get("params")
    if not us or params is None:
        return None
    nbytes = pin["kb"] * 1024 if pin.get("kb") else case_bytes(op, str(params))
    if not nbytes:
        return None
    return {"bytes": nbytes, "us": us, "gbps": round(nbytes / (us * 1e-6) / 1e9, 1)}


# Where a pinned case stands, in this order (thresholds are estimates, said in docs/llamacpp.md):
# launch-bound where it runs in under 5 µs and its bytes would take under half that at the peak
# (the smallest kernels take a few µs back to back: its time is the launch and the kernel's
# latency, not bandwidth; a decode step's small ops); cache-resident where its bytes fit the
# device's cache (test-backend-ops perf runs the node again on the same tensors, so the DRAM
# roofline does not apply: the roofline gate's rule); at its memory roofline from 80 % of the
# measured peak (a device-to-device copy's rate); compute-heavy where it does more than 100
# FLOPs a byte (a matrix multiplication of many columns: near a tensor core's ridge point, so
# its bound may be arithmetic, not measured here); else below its memory roofline. A case whose
# bytes exceed the (known) cache yet would have moved at more than OVER_PEAK times the DRAM
# peak counts bytes the op does not move (test-backend-ops' op_size counts GET_ROWS's whole
# table for the two rows a decode step reads): under 5 µs it is launch-bound whatever its
# bytes say, marked ``bytes_overcounted``; slower, its bytes prove nothing, and it is called
# below its memory roofline, marked so too.
LAUNCH_US, AT_ROOFLINE, COMPUTE_FLOP_PER_BYTE, OVER_PEAK = 5.0, 0.8, 100.0, 1.5
BOUNDS = ("launch-bound", "cache-resident", "at its memory roofline", "compute-heavy",
          "below its memory roofline")
NOT_THE_NODE = "unknown: the pinned case is not the model's node"


def bound(op: str, pin: dict[str, Any], rate: dict[str, Any] | None,
          device: DeviceInfo | None) -> dict[str, Any] | None:
    """The pinned case against the device's measured memory peak: the fraction it reaches,
    the time its bytes take at that peak (``floor_us``), the most a search could gain on
    bandwidth (``headroom``, 1 / fraction), which of BOUNDS holds, and how the case was
    pinned (``pinned_by``); None without a rate or a peak."""
    if not rate or device is None or not device.peak_gbps:
        return None
    peak = device.peak_gbps
    of_peak = rate["gbps"] / peak
    floor_us = rate["bytes"] / (peak * 1e9) * 1e6
    flops = case_flops(op, str(pin.get("params", "")))
    per_byte = flops / rate["bytes"] if flops else None
    overcounted = (bool(device.cache_bytes) and rate["bytes"] > (device.cache_bytes or 0)
                   and of_peak > OVER_PEAK)
    if rate["us"] < LAUNCH_US and (floor_us < rate["us"] / 2 or overcounted):
        word = BOUNDS[0]
    elif device.cache_bytes and rate["bytes"] < device.cache_bytes:
        word = BOUNDS[1]
    elif overcounted:
        word = BOUNDS[4]
    elif of_peak >= AT_ROOFLINE:
        word = BOUNDS[2]
    elif per_byte is not None and per_byte > COMPUTE_FLOP_PER_BYTE:
        word = BOUNDS[3]
    else:
        word = BOUNDS[4]
    return {"peak_gbps": round(peak, 1), "cache_bytes": device.cache_bytes or None,
            "of_peak": round(of_peak, 3), "floor_us": round(floor_us, 3),
            "headroom": round(1 / of_peak, 2) if of_peak else None,
            "flop_per_byte": round(per_byte, 1) if per_byte is not None else None, "bound": word,
            **({"bytes_overcounted": True} if overcounted else {}),
            "pinned_by": pin.get("chosen_by")}


def account(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The listed ops' shares summed by bound. A share counts under its op's bound only where
    the pinned case is the model's node (``--nodes``: the pin's chosen_by says so); otherwise,
    or without a bound, under ``unknown``."""
    shares: dict[str, float] = {}
    for entry in entries:
        found = entry.get("bound") or {}
        on_node = str(found.get("pinned_by") or "").startswith("the model's node")
        word = found.get("bound", "unknown") if on_node or not found else NOT_THE_NODE
        shares[word] = round(shares.get(word, 0.0) + entry["share"], 5)
    return {"share_by_bound": shares, "listed_share": round(sum(e["share"] for e in entries), 5)}


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:  # deleted while listed
        return 0.0


def campaign_runs(state: Path, name: str | None) -> dict[str, Path]:
    """Target name -> its run folder: the campaign's, else each op's newest run."""
    runs: dict[str, Path] = {}
    summary = state / "campaigns" / name / "summary.json" if name else None
    if summary is not None and summary.is_file():
        for result in json.loads(summary.read_text()).get("results", []):
            if (state / "runs" / result["run"]).is_dir():
                runs[result["target"]] = state / "runs" / result["run"]
        return runs
    found = list((state / "runs").glob("*/summary.json")) if (state / "runs").is_dir() else []
    # the newest written last (wins): runs are named by job in a campaign, not by time
    for run in [p.parent for p in sorted(found, key=_mtime)]:
        try:
            runs[json.loads((run / "summary.json").read_text())["target"]["name"]] = run
        except (OSError, ValueError, KeyError):
            continue
    return runs


def main(argv: list[str] | None = None) -> int:
    from kernelopt_llamacpp import ops

    parser = argparse.ArgumentParser(prog="python -m kernelopt_llamacpp.coverage")
    parser.add_argument("--state-root", required=True, type=Path)
    parser.add_argument("--repo", required=True, type=Path)
    parser.add_argument("--campaign")
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--peak-gbps", type=float,
                        help="the GPU's memory peak in GB/s (default: the one the roofline gate "
                        "measured on this machine, kept in the state root's device cache)")
    parser.add_argument("--cache-bytes", type=int, help="the GPU's cache in bytes (with "
                        "--peak-gbps; default: the device cache's)")
    a = parser.parse_args(argv)
    root = a.repo.resolve()
    digest = hashlib.sha1(str(root).encode()).hexdigest()[:10]
    chosen = a.state_root / "llamacpp" / f"{digest}-top.json"
    if not chosen.is_file():
        print(f"coverage: no {chosen}: run kernelopt with --top K on this tree first",
              file=sys.stderr)
        return 2
    selection = json.loads(chosen.read_text())
    table = ops.op_table(root)
    editable = [r for r in selection["ops"] if r["op"] in table
                and table[r["op"]].kind in ("kernel", "mixed")][:a.top]
    runs = campaign_runs(a.state_root, a.campaign)
    device = cached_device(a.state_root, "cuda")
    if a.peak_gbps:
        device = DeviceInfo(device.name if device else "cuda", a.peak_gbps,
                            a.cache_bytes or (device.cache_bytes if device else 0),
                            "given by the user", device.key if device else "cuda")
    entries = [op_entry(r, root, a.state_root, digest, selection["nodes"], runs, table,
                        selection.get("model"), device) for r in editable]
    peak = None if device is None else {
        "name": device.name, "peak_gbps": device.peak_gbps, "cache_bytes": device.cache_bytes,
        "method": device.method, "measured_at": device.measured_at, "from": device.cache_path
        or "--peak-gbps"}
    print(json.dumps({"profile": selection["profile"], "nodes": selection["nodes"],
                      "device": peak, "account": account(entries), "ops": entries}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
