"""report.html beside report.md: the same journal, drawn. Self-contained (inline SVG, no
script, no network): every candidate's speedup over the search (accepted, or the gate that
rejected it), the confirm rounds' baseline and candidate times with the noise band, the
roofline position of baseline and winner, and for a model the Amdahl view."""

from __future__ import annotations

from html import escape
from typing import Any

from kernelopt_core import events, model_view, svg_plots
from kernelopt_core.measure.stats import median

STYLE = ("body{font-family:sans-serif;margin:24px;max-width:1180px;color:#222}"
         ".plots{display:flex;flex-wrap:wrap;gap:16px}.plots svg{border:1px solid #ddd}"
         "table{border-collapse:collapse;margin-top:12px}td,th{border:1px solid #ccc;"
         "padding:3px 8px;font-size:13px;text-align:left}.status{font-size:18px;font-weight:bold}")
STATUS_COLOUR = {"optimized": "#2ca02c", "matched": "#b8860b", "unverified": "#b8860b"}


def proposals(records: list[dict[str, Any]]) -> dict[str, str]:
    """Each candidate's proposal text, by id."""
    return {c.candidate: c.description for c in events.of(records, events.Candidate)}


def candidate_rows(records: list[dict[str, Any]]) -> list[tuple[str, str, str, str, str]]:
    """Each judged candidate as both reports list it: id, proposal, result (a final gate's
    rejection included), screen speedup ("—" never timed), reason."""
    described = proposals(records)
    final_failed: dict[str, str] = {}  # candidate -> the first final gate it failed
    for g in events.of(records, events.Gate):
        if g.final and not g.passed:
            final_failed.setdefault(g.candidate, g.gate)
    rows = []
    for r in events.of(records, events.CandidateResult):
        result = "accepted" if r.accepted else f"rejected at {r.failed_gate}"
        if r.accepted and r.candidate in final_failed:
            result = f"accepted, then rejected at final gate {final_failed[r.candidate]}"
        timed = "—" if r.speedup is None else f"{r.speedup:.3f}"
        rows.append((r.candidate, described.get(r.candidate, ""), result, timed, r.reason))
    return rows


def candidates_plot(records: list[dict[str, Any]]) -> str | None:
    results = events.of(records, events.CandidateResult)
    if not results:
        return None
    described = proposals(records)
    points = []
    for i, r in enumerate(results, 1):
        what = f"{r.candidate}: {described.get(r.candidate, '')}"
        if r.speedup is None:  # never timed: rejected first (build...), or no bench
            why = f"rejected at {r.failed_gate}" if not r.accepted else "not timed"
            points.append((i, 1.0, "untimed", f"{what}: {why}"))
        elif r.accepted:
            points.append((i, float(r.speedup), "accepted", f"{what}: {r.speedup:.3f}×"))
        else:
            points.append((i, float(r.speedup), "rejected",
                           f"{what}: {r.speedup:.3f}×, rejected at {r.failed_gate}"))
    return svg_plots.scatter("Candidates over the search (screen speedup)", "candidate",
                             "speedup ×", points, reference=1.0, reference_name="baseline (1×)")


def confirm_plot(s: dict[str, Any]) -> str | None:
    """The rounds the verdict kept (a retaken round once, as the summary has it)."""
    rounds = s.get("rounds") or {}
    baseline = [float(v) for v in rounds.get("baseline_ms") or []]
    candidate = [float(v) for v in rounds.get("candidate_ms") or []]
    if not baseline or len(baseline) != len(candidate):
        return None
    middle = median(baseline)
    noise_pct = float(s.get("noise_pct") or 0.0)
    band = (middle * (1 - noise_pct / 100), middle * (1 + noise_pct / 100)) if noise_pct else None
    return svg_plots.lines(f"Confirm rounds of {s.get('winner')}", "round", "ms",
                           {"baseline": baseline, "candidate": candidate}, band,
                           f"baseline ± noise ({noise_pct:.1f} %)")


def roofline_plot(s: dict[str, Any], kappa: float) -> str | None:
    roof = s.get("roofline") or {}
    nbytes, peak, achieved = roof.get("bytes"), roof.get("peak_gbps"), roof.get("achieved_gbps")
    if not (nbytes and peak and achieved and s.get("baseline_ms")):
        return None
    base = nbytes / (float(s["baseline_ms"]) / 1e3) / 1e9
    return svg_plots.bars("Roofline: bandwidth achieved", "GB/s",
                          [("baseline", base, "baseline"), ("winner", achieved, "candidate")],
                          [(f"measured peak {peak:.0f}", peak), (f"κ × peak ({kappa:g})", kappa * peak)])


def _median(value: Any) -> float | None:
    """The engine gate's times: a list of runs (its median), or one number."""
    if isinstance(value, list) and value:
        return median([float(v) for v in value])
    return float(value) if isinstance(value, (int, float)) else None


def amdahl_plot(s: dict[str, Any]) -> str | None:
    engine = s.get("engine") or {}
    before, after = _median(engine.get("baseline_ms")), _median(engine.get("candidate_ms"))
    amdahl = engine.get("amdahl_speedup")
    if not (before and after and isinstance(amdahl, (int, float)) and amdahl > 0):
        return None
    return svg_plots.bars("Model time (engine gate, medians)", "ms",
                          [("before", before, "baseline"), ("after", after, "candidate")],
                          [(f"Amdahl's prediction {before / amdahl:.4g} ms", before / amdahl)])


def lock_seconds(s: dict[str, Any]) -> str:
    """What the run's locked seconds were: GPU seconds, or, for a CPU target, the seconds its
    checks and benches held the device lock (no GPU was used)."""
    device = (s.get("target") or {}).get("device")  # None: a journal from before it was kept
    return "s holding the bench lock (CPU)" if device == "cpu" else "GPU-s"


def render_html(records: list[dict[str, Any]], s: dict[str, Any]) -> str:
    header = events.first(records, events.Run)
    kappa = float((header.settings if header else {}).get("kappa") or 1.3)
    plots = [p for p in (candidates_plot(records), confirm_plot(s),
                         roofline_plot(s, kappa), amdahl_plot(s)) if p]
    target = s.get("target") or {}
    rows = "".join("<tr>" + "".join(f"<td>{escape(c[:160])}</td>" for c in row) + "</tr>"
                   for row in candidate_rows(records))
    colour = STATUS_COLOUR.get(str(s.get("status")), "#d62728")
    whole = model_view.html(s.get("model"))
    status, line = str(s.get("status")), str(s.get("report_line", ""))
    headline = line if line.startswith(status) else f"{status}: {line}"  # not `error: error:`
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>kernelopt {escape(str(s.get('run_id')))}</title><style>{STYLE}</style></head>"
        f"<body><h1>kernelopt: {escape(str(target.get('name', '')))}</h1>"
        f"<p class='status' style='color:{colour}'>{escape(headline)}</p>"
        f"<p>run {escape(str(s.get('run_id')))} · planner {escape(str(s.get('planner') or '-'))} · "
        f"{s.get('gpu_seconds')} {lock_seconds(s)} · {s.get('wall_seconds')} s · the evidence: "
        "<a href='report.md'>report.md</a>"
        + (" · the change: <a href='report.diff'>report.diff</a>" if s.get("diff") else "")
        + f"</p><div class='plots'>{''.join(plots)}</div>{whole}"
        "<table><tr><th>id</th><th>proposal</th><th>result</th><th>screen speedup</th>"
        f"<th>reason</th></tr>{rows}</table></body></html>\n")
