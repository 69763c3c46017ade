"""Reports rebuilt from the journal alone: summary.json (schema 1), report.md and report.html
(kernelopt_core.report_html)."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

from kernelopt_core import events, evidence, knob_view, model_view
from kernelopt_core import journal as journal_mod
from kernelopt_core.engine_view import engine_phrase
from kernelopt_core.llm_view import llm_usage
from kernelopt_core.measure.stats import ROBUST_FROM, SIGN_ALPHA, median
from kernelopt_core.profiling.view import kernel_table
from kernelopt_core.report_html import candidate_rows, render_html


def _fmt_ms(ms: float | None) -> str:
    return "?" if ms is None else f"{ms:.4g} ms"


def _bandwidth(nbytes: int | None, ms: float | None) -> float | None:
    if not nbytes or not ms:
        return None
    return nbytes / (ms / 1e3) / 1e9  # GB/s


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    header = events.first(records, events.Run)
    target = header.target if header else {}
    config = events.first(records, events.Config)
    baseline = events.first(records, events.Baseline)
    verdict = events.first(records, events.Verdict)
    end = events.first(records, events.End)
    error = events.first(records, events.RunError)
    results = events.of(records, events.CandidateResult)
    gates = events.of(records, events.Gate)
    passed = {(g.candidate, g.gate) for g in gates if not g.final and g.passed}
    winner = verdict.candidate if verdict else None

    def final_gate(name: str) -> events.Gate | None:
        return next((g for g in gates if g.final and g.gate == name and g.candidate == winner),
                    None)

    confirm = final_gate("confirm")
    roofline_gate = final_gate("roofline")
    roofline = roofline_gate.metrics if roofline_gate else {}
    # no verdict: stopped by the user (Ctrl-C: resumable), else killed or failed
    stopped_by_user = events.first(records, events.Interrupted) is not None and error is None
    status = verdict.status if verdict else "interrupted" if stopped_by_user else "error"
    rounds: dict[str, list[float]] = {"baseline_ms": [], "candidate_ms": []}
    speedup = final_ms = noise = None
    wins = n_rounds = 0
    # the verdict event carries the numbers it rests on; journals older than that: the gate's
    measured = (verdict.measured if verdict else None) or (
        confirm.metrics if confirm and not confirm.skipped and "ratios" in confirm.metrics
        else None)
    if measured:
        m = measured
        rounds = {"baseline_ms": m["baseline_ms"], "candidate_ms": m["candidate_ms"]}
        speedup = m["median_ratio"]
        final_ms = median(m["candidate_ms"])
        noise = m["noise_pct"]
        wins, n_rounds = m["wins"], m["rounds"]
    elif verdict and verdict.screen_speedup and status == "matched":
        speedup = verdict.screen_speedup  # no confirm gate configured: the screen's, no claim
    baseline_ms = median(rounds["baseline_ms"]) if rounds["baseline_ms"] else (
        baseline.ms if baseline else None)
    if status in ("fallback", "matched", "unverified"):  # only a confirmed win changes the kernel
        final_ms = baseline_ms
    engine = final_gate("engine")
    engine = engine if engine and not engine.skipped else None
    nbytes = roofline.get("bytes", target.get("bytes"))
    achieved = _bandwidth(nbytes, final_ms)
    peak = roofline.get("peak_gbps")
    benches = events.of(records, events.Bench)
    summary: dict[str, Any] = {
        "schema": 1,
        "run_id": header.run_id if header else None,
        "target": {
            "backend": target.get("backend"),
            "name": target.get("name"),
            "root": target.get("root"),
            "files": target.get("files", []),
            "device": target.get("device"),  # journals before 2026-12-06: None
            # what the bench said it timed wins over what the target declared before any run
            "shape": next((b.shape for b in benches if b.tree == "baseline" and b.shape),
                          target.get("shape", "")),
        },
        "status": status,
        # only a verified win has a speedup; what the rounds measured otherwise is median_ratio
        "speedup": speedup if status == "optimized" else 1.0,
        "median_ratio": speedup,
        "baseline_ms": baseline_ms,
        "final_ms": final_ms,
        "noise_pct": noise,
        "rounds": rounds,
        "rounds_won": wins,
        "roofline": {
            "bytes": nbytes,
            "achieved_gbps": achieved,
            "peak_gbps": peak,
            "fraction": achieved / peak if achieved and peak else None,
            "note": roofline_gate.reason if roofline_gate else None,
            # the gate's own flag; journals older than it said so only in the reason's words
            "cache_resident": roofline.get("cache_resident", "fits in the" in (
                roofline_gate.reason if roofline_gate else "")),
        },
        "engine": None if engine is None else {
            "passed": engine.passed,
            **{key: engine.metrics.get(key) for key in (
                "baseline_ms", "candidate_ms", "speedup", "amdahl_speedup", "time_share",
                "noise_pct", "rounds", "paired", "model_resolved", "compile", "cuda_graphs",
                "identity")},
            "note": engine.reason,
        },
        "interpreted": any(b.interpreted for b in benches),
        "candidates": {
            # every proposal journaled, also one a run that errored never finished judging
            "proposed": len({c.candidate for c in events.of(records, events.Candidate)}),
            "built": sum((r.candidate, "build") in passed for r in results),
            "correct": sum((r.candidate, "correctness") in passed for r in results),
            "accepted": sum(r.accepted for r in results),
        },
        "llm": llm_usage(records),
        "planner": config.planner if config else None,
        "by_planner": _by_planner(records),
        "gpu_seconds": end.gpu_seconds if end else None,
        "wall_seconds": end.wall_seconds if end else None,
        "workspace_wait_s": next((w.waited_s for w in events.of(
            records, events.WorkspaceAcquired)), 0.0),
        "diff": verdict.diff if verdict else None,
        "winner_tag": verdict.winner_tag if verdict else None,
        "winner": winner,
        "exit_code": end.exit_code if end else None,
    }
    if error is not None:
        summary["error"] = error.message
        summary["error_kind"] = error.kind
    elif verdict is None and (stopped := _interrupted(records)) is not None:
        summary["interrupted"] = stopped
        best = (f"best so far {stopped['best']}: {stopped['speedup']:.3f}× at the screen, not "
                f"confirmed (tag {stopped['tag']})" if stopped["best"] else
                "no candidate accepted yet")
        summary["error"] = (f"interrupted during {stopped['stage'] or 'start-up'}; {best}; the "
                            f"target's files are unchanged: `kernelopt resume {summary['run_id']}` "
                            "continues it from its journal (or run again to start over)")
    summary["caught_by"] = (verdict.caught_by or []) if verdict else []
    # the whole model with every winner of its runs in place (model_check.py): the newest
    check = events.last(records, events.ModelCheck)
    summary["model"] = check.data() if check else None
    summary["report_line"] = report_line(summary, n_rounds)
    return summary


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _interrupted(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Where a Ctrl-C stopped the run, and the best candidate it had accepted by then."""
    stop = events.first(records, events.Interrupted)
    if stop is None:
        return None
    best = events.last(records, events.Best)
    cid = best.candidate if best else None
    tag = next((r.tag for r in events.of(records, events.CandidateResult) if r.candidate == cid),
               None)
    return {"stage": stop.stage, "best": cid, "speedup": best.speedup if best else None,
            "tag": tag}


def _by_planner(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Each proposing planner's candidates and its best accepted one (screen speedup): where the
    agents run, the built-in tuner's best sits beside theirs: the bar an LLM edit must beat."""
    planner_of = {c.candidate: c.planner or "?" for c in events.of(records, events.Candidate)}
    out: dict[str, Any] = {}
    for planner in planner_of.values():
        out.setdefault(planner, {"candidates": 0, "best": None, "speedup": None})
        out[planner]["candidates"] += 1
    for r in events.of(records, events.CandidateResult):
        entry = out.get(planner_of.get(r.candidate, "?"))
        speedup = 1.0 if r.speedup is None else r.speedup  # a target without a bench
        if r.accepted and entry is not None and (entry["speedup"] is None
                                                 or speedup > entry["speedup"]):
            entry.update(best=r.candidate, speedup=speedup)
    return out


def _evidence(records: list[dict[str, Any]], winner: str | None) -> list[str]:
    """What the passing test printed about itself (kernelopt_core.evidence): the baseline's and
    the winner's, as its correctness gate kept it."""
    rows = [("baseline", e.evidence or []) for e in events.of(records, events.CheckEvidence)
            if e.tree == "baseline"]
    rows += [(g.candidate, g.metrics.get("evidence", [])) for g in events.of(records, events.Gate)
             if g.gate == "correctness" and not g.final and g.candidate == winner and g.passed]
    lines = [f"| {who} | {evidence.describe(item).replace('|', '/')} |"
             for who, items in rows for item in items if isinstance(item, dict)]
    if not lines:
        return []
    return ["## Correctness evidence (what the test reported)", "", "| tree | report |",
            "|---|---|", *lines, ""]


def report_line(s: dict[str, Any], n_rounds: int) -> str:
    """The report line (summary.json's ``report_line``): the line that says everything."""
    shape = s["target"]["shape"] or "unpinned shape"
    if s["status"] in ("error", "interrupted"):
        if s.get("interrupted"):
            return s["error"]
        return f"error: {s.get('error', 'the run did not finish')}"
    if s["status"] == "fallback":
        return f"no verified win; baseline kept ({_fmt_ms(s['baseline_ms'])}, shape {shape})"
    if s["status"] == "unverified" and s.get("interpreted"):
        return (f"unverified: correct; {s['median_ratio'] or 1.0:.2f}× measured under an interpreter, "
                f"not on the device, so nothing is claimed (shape {shape})")
    if s["status"] == "unverified":
        return f"unverified: correct, but no bench exists (shape {shape})"
    cand = s["rounds"]["candidate_ms"]
    parts = [
        # matched: the kernel is unchanged; say what the candidate measured, not "X → X"
        f"baseline {_fmt_ms(s['baseline_ms'])}, candidate {_fmt_ms(median(cand))} (medians)"
        if s["status"] == "matched" and cand else
        f"{_fmt_ms(s['baseline_ms'])[:-3]} → {_fmt_ms(s['final_ms'])}",
        f"shape {shape}",
        f"{s['rounds_won']}/{n_rounds} rounds" if n_rounds else "screen only, not confirmed",
        f"noise ±{s['noise_pct']:.1f} %" if s["noise_pct"] is not None else "noise unknown",
    ]
    if s["roofline"]["achieved_gbps"]:
        gbps = s["roofline"]["achieved_gbps"]
        rate = f"{gbps / 1000:.2f} TB/s" if gbps >= 1000 else f"{gbps:.1f} GB/s"
        peak = s["roofline"]["peak_gbps"]
        if s["status"] == "matched":  # the kernel kept is the baseline: its bandwidth
            rate = f"baseline {rate}"
        if s["roofline"].get("cache_resident"):
            parts.append(f"{rate}, cache-resident: DRAM roofline not applied")
        else:
            parts.append(f"{rate} = {gbps / peak:.0%} of measured peak" if peak else
                         f"{rate} (peak not measured)")
    engine = s.get("engine") or {}
    unresolved = engine.get("model_resolved") is False
    if engine.get("speedup"):
        parts.append(engine_phrase(engine))
    elif engine and not engine.get("passed"):
        parts.append(f"engine: {str(engine.get('note') or '')[:300]}")
    ratio = s["speedup"] if s["status"] == "optimized" else s.get("median_ratio")
    speed = f"{ratio:.2f}×" if ratio else "?"
    if s["status"] == "optimized" and unresolved:
        speed += " (kernel)"
    caught = [g for g in s.get("caught_by") or [] if g != "confirm"]
    prefix = speed if s["status"] == "optimized" else (
        f"matched (median {speed}, faster in the confirm rounds, but the {', '.join(caught)} "
        f"gate{'s' if len(caught) > 1 else ''} failed: baseline kept)"
        if caught and "confirm" not in (s.get("caught_by") or []) and n_rounds else
        f"matched (median {speed}, not proven faster)")
    return f"{prefix} ({', '.join(parts)})"


def render_markdown(records: list[dict[str, Any]], s: dict[str, Any]) -> str:
    header = events.first(records, events.Run)
    config = events.first(records, events.Config)
    verdict = events.first(records, events.Verdict)
    search_end = events.first(records, events.SearchEnd)
    start = events.first(records, events.SearchStart)
    began = (f"; it began {start.before_s:.0f} s into the run, the baseline built, timed and "
             "probed (the time budget counts from there)" if start else "")
    t = s["target"]
    lines = [
        f"# kernelopt run {s['run_id']}",
        "",
        f"**{s['status']}** — " + (s["report_line"][len(s["status"]):].lstrip(": ")
                                    if s["report_line"].startswith(s["status"])
                                    else s["report_line"]),
        "",
        f"- target: `{t['name']}` ({t['backend']} backend), files: "
        + ", ".join(f"`{f}`" for f in t["files"]),
        f"- root: `{header.target.get('root', '?') if header else '?'}`",
        f"- planner: {config.planner if config else '?'} "
        f"({config.planner_reason if config else ''})",
        "- gates: " + "; ".join(f"{kind} {' → '.join(gates or ['?'])}" for kind, gates in (
            ("candidate", config and config.candidate_gates),
            ("final", config and config.final_gates))),
        f"- search ended: {search_end.reason if search_end else '?'} after "
        f"{_count(search_end.evaluated if search_end else 0, 'candidate')}{began}",
        "- candidates: " + ", ".join(f"{n} {k}" for k, n in s["candidates"].items()),
        "- best by planner (screen speedup): " + (", ".join(
            f"{name} {b['best']} {b['speedup']:.3f}× of {b['candidates']}" if b["best"]
            else f"{name}: none accepted of {b['candidates']}"
            for name, b in s["by_planner"].items()) or "no candidates"),
        f"- LLM: {s['llm']['calls']} calls ({s['llm']['failed_attempts']} failed attempts), "
        f"{s['llm']['tokens_in']} tokens in / {s['llm']['tokens_out']} out, "
        f"{s['llm']['latency_s']} s, ${s['llm']['cost']:.4f}"
        + (f" ({s['llm']['unpriced_calls']} calls at unknown price)"
           if s['llm']['unpriced_calls'] else ""),
        f"- wall {s['wall_seconds']} s"
        + (f" (of which {s['workspace_wait_s']} s waiting for the workspace)"
           if s.get("workspace_wait_s") else "") + f", GPU-lock time {s['gpu_seconds']} s",
        "",
    ]
    if verdict:
        lines += ["## Verdict", "", verdict.reason, ""]
        if verdict.candidate:
            label = {"optimized": "Winner candidate", "unverified": "Winner candidate (unverified)",
                     "matched": "Best candidate (not proven faster; the baseline stands)"}.get(
                s["status"], "Last candidate through the final gates (rejected)")
            lines.append(f"{label}: `{verdict.candidate}` — {verdict.description}")
            lines.append("")
    meaning = {
        "optimized": "the speedup is the median of the per-round ratios; the times are the "
        "rounds' medians, so their quotient can differ slightly. Every final gate passed: "
        "faster in every round (the sign test at "
        f"p ≤ {SIGN_ALPHA:g} from {ROBUST_FROM} rounds on) by more than the noise floor and the "
        "γ margin, correct on the measured shape, physically plausible.",
        "matched": "a correct candidate, but not proven faster; the baseline stands.",
        "fallback": "no candidate survived the gates; the baseline is kept.",
        "unverified": "the candidate is correct, but the target has no bench to time it.",
        "error": "the run did not finish; see the error below.",
        "interrupted": "the run was interrupted before a verdict; nothing in the target "
        f"changed (the candidates so far are tagged in the workspace); `kernelopt resume "
        f"{s['run_id']}` continues it.",
    }[s["status"]]
    if s["status"] == "unverified" and s.get("interpreted"):
        meaning = ("the candidate is correct, but its times come from an interpreter, not the "
                   "device: nothing about its speed is known. Time it on the device before "
                   "applying it.")
    lines += [f"Meaning: {meaning}", ""]
    warnings = events.of(records, events.GateWarning)
    if warnings:
        lines += ["## Warnings", ""]
        lines += [f"- {w.gate}: {w.message}" for w in warnings]
        lines.append("")
    finals = [g for g in events.of(records, events.Gate) if g.final]
    if finals:
        lines += ["## Final gates", "", "| candidate | gate | result | evidence |",
                  "|---|---|---|---|"]
        for g in finals:
            result = "skipped" if g.skipped else ("passed" if g.passed else "FAILED")
            reason = str(g.reason).replace("\n", " ").replace("|", "\\|")[:300]
            lines.append(f"| {g.candidate} | {g.gate} | {result} | {reason} |")
        lines.append("")
    lines += model_view.markdown(s.get("model"))
    lines += _evidence(records, s.get("winner"))
    if s["rounds"]["baseline_ms"]:
        lines += ["## Confirmation rounds (candidate bracketed by two baselines)", "",
                  "| round | baseline ms (geo. mean) | candidate ms | ratio |", "|---|---|---|---|"]
        for i, (b, c) in enumerate(zip(s["rounds"]["baseline_ms"], s["rounds"]["candidate_ms"], strict=True)):
            lines.append(f"| {i + 1} | {b:.4f} | {c:.4f} | {b / c:.3f} |")
        lines.append("")
    profiles = [(p.tree, p.metrics) for p in events.of(records, events.Profile)
                if isinstance(kernels := p.metrics.get("kernels"), list) and kernels
                and all(isinstance(k, dict) for k in kernels)]
    if profiles:  # measured per launch by the profiler, baseline and winner
        tool = profiles[0][1].get("tool", "the profiler")
        lines += [f"## Profile ({tool}, per launch)", "", *kernel_table(profiles), ""]
    lines += knob_view.report_lines(records)
    lines += ["## Candidates", "", "| id | proposal | result | screen speedup | reason |",
              "|---|---|---|---|---|"]
    for cid, proposal, result, timed, reason in candidate_rows(records):
        reason = reason.replace("\n", " ").replace("|", "\\|")[:160]
        lines.append(f"| {cid} | {proposal} | {result} | {timed} | {reason} |")
    lines.append("")
    if s["diff"]:
        caution = (" It was timed only under an interpreter: not a proven speedup."
                   if s.get("interpreted") else "")
        lines += ["## Apply", "",
                  f"`kernelopt apply {s['run_id']}` writes the winner into the target's files "
                  f"(`kernelopt revert {s['run_id']}` undoes it); or by hand, "
                  "`patch -p1 -d TARGET < report.diff` (`git apply` inside a subdirectory of a "
                  "git repository skips every file)." + caution, ""]
    if error := events.first(records, events.RunError):
        lines += ["## Error", "", "```", error.message, "```", ""]
    return "\n".join(lines)


def write_all(run_dir: Path) -> dict[str, Any]:
    records = journal_mod.effective(journal_mod.complete(run_dir / "journal.jsonl"))
    summary = summarize(records)
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    (run_dir / "report.md").write_text(render_markdown(records, summary), encoding="utf-8")
    try:
        html = render_html(records, summary)
    except Exception as exc:  # a drawing is optional: it never fails a run or its report
        html = (f"<!doctype html><p>report.html could not be drawn ({type(exc).__name__}: "
                f"{escape(str(exc))}); report.md has the evidence.</p>\n")
    (run_dir / "report.html").write_text(html, encoding="utf-8")
    if not (run_dir / "report.diff").exists():
        (run_dir / "report.diff").write_bytes(b"")
    return summary
