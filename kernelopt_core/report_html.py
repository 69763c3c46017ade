"""report.html beside report.md: the same journal, drawn. Self-contained (inline SVG, no
script, no network): every candidate's speedup over the search (accepted, or the gate that
rejected it), the confirm rounds' baseline and candidate times with the noise band, the
roofline position of baseline and winner, and for a model the Amdahl view."""

from __future__ import annotations

from html import escape
from typing import Any

from kernelopt_core import svg_plots

STYLE = ("body{font-family:sans-serif;margin:24px;max-width:1180px;color:#222}"
         ".plots{display:flex;flex-wrap:wrap;gap:16px}.plots svg{border:1px solid #ddd}"
         "table{border-collapse:collapse;margin-top:12px}td,th{border:1px solid #ccc;"
         "padding:3px 8px;font-size:13px;text-align:left}.status{font-size:18px;font-weight:bold}")
STATUS_COLOUR = {"optimized": "#2ca02c", "matched": "#b8860b", "unverified": "#b8860b"}


def candidates_plot(events: list[dict[str, Any]]) -> str | None:
    results = [e for e in events if e["event"] == "candidate_result"]
    if not results:
        return None
    described = {e["candidate"]: e.get("description", "") for e in events
                 if e["event"] == "candidate"}
    points = []
    for i, r in enumerate(results, 1):
        what = f"{r['candidate']}: {described.get(r['candidate'], '')}"
        if r.get("speedup") is None:  # rejected before it was timed (build, correctness)
            points.append((i, 1.0, "untimed", f"{what}: rejected at {r.get('failed_gate')}"))
        elif r.get("accepted"):
            points.append((i, float(r["speedup"]), "accepted", f"{what}: {r['speedup']:.3f}×"))
        else:
            points.append((i, float(r["speedup"]), "rejected",
                           f"{what}: {r['speedup']:.3f}×, rejected at {r.get('failed_gate')}"))
    return svg_plots.scatter("Candidates over the search (screen speedup)", "candidate",
                             "speedup ×", points, reference=1.0)


def confirm_plot(events: list[dict[str, Any]], s: dict[str, Any]) -> str | None:
    rounds = [e for e in events if e["event"] == "confirm_round"
              and e.get("candidate") == s.get("winner")]
    if not rounds:
        return None
    baseline = [float(e["baseline_ms"]) for e in rounds]
    candidate = [float(e["candidate_ms"]) for e in rounds]
    middle = sorted(baseline)[len(baseline) // 2]
    noise = float(s.get("noise_pct") or 0.0) / 100.0
    band = (middle * (1 - noise), middle * (1 + noise)) if noise else None
    return svg_plots.lines(f"Confirm rounds of {s.get('winner')}", "round", "ms",
                           {"baseline": baseline, "candidate": candidate}, band,
                           f"baseline ± noise ({s.get('noise_pct', 0):.1f} %)")


def roofline_plot(s: dict[str, Any], kappa: float) -> str | None:
    roof = s.get("roofline") or {}
    nbytes, peak, achieved = roof.get("bytes"), roof.get("peak_gbps"), roof.get("achieved_gbps")
    if not (nbytes and peak and achieved and s.get("baseline_ms")):
        return None
    base = nbytes / (float(s["baseline_ms"]) / 1e3) / 1e9
    return svg_plots.bars("Roofline: bandwidth achieved", "GB/s",
                          [("baseline", base, "baseline"), ("winner", achieved, "candidate")],
                          [(f"measured peak {peak:.0f}", peak), (f"κ × peak ({kappa:g})", kappa * peak)])


def amdahl_plot(s: dict[str, Any]) -> str | None:
    engine = s.get("engine") or {}
    before, after, amdahl = engine.get("baseline_ms"), engine.get("candidate_ms"), \
        engine.get("amdahl_speedup")
    if not (before and after and amdahl):
        return None
    return svg_plots.bars("Model time (engine gate)", "ms",
                          [("before", float(before), "baseline"),
                           ("after", float(after), "candidate")],
                          [(f"Amdahl's prediction {before / amdahl:.4g} ms", before / amdahl)])


def _row(r: dict[str, Any], events: list[dict[str, Any]]) -> str:
    proposal = next((e.get("description", "") for e in events
                     if e["event"] == "candidate" and e["candidate"] == r["candidate"]), "")
    result = "accepted" if r["accepted"] else f"rejected at {r['failed_gate']}"
    timed = "—" if r.get("speedup") is None else f"{r['speedup']:.3f}"
    cells = (r["candidate"], proposal, result, timed, str(r.get("reason", ""))[:160])
    return "<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in cells) + "</tr>"


def render_html(events: list[dict[str, Any]], s: dict[str, Any]) -> str:
    header = next((e for e in events if e["event"] == "run"), {})
    kappa = float((header.get("settings") or {}).get("kappa") or 1.3)
    plots = [p for p in (candidates_plot(events), confirm_plot(events, s),
                         roofline_plot(s, kappa), amdahl_plot(s)) if p]
    target = s.get("target") or {}
    rows = "".join(_row(r, events) for r in events if r["event"] == "candidate_result")
    colour = STATUS_COLOUR.get(str(s.get("status")), "#d62728")
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>kernelopt {escape(str(s.get('run_id')))}</title><style>{STYLE}</style></head>"
        f"<body><h1>kernelopt: {escape(str(target.get('name', '')))}</h1>"
        f"<p class='status' style='color:{colour}'>{escape(str(s.get('status')))}: "
        f"{escape(str(s.get('report_line', '')))}</p>"
        f"<p>run {escape(str(s.get('run_id')))} · planner {escape(str(s.get('planner')))} · "
        f"{s.get('gpu_seconds')} GPU-s · {s.get('wall_seconds')} s · the evidence: "
        "<a href='report.md'>report.md</a>"
        + (" · the change: <a href='report.diff'>report.diff</a>" if s.get("diff") else "")
        + f"</p><div class='plots'>{''.join(plots)}</div>"
        "<table><tr><th>id</th><th>proposal</th><th>result</th><th>screen speedup</th>"
        f"<th>reason</th></tr>{rows}</table></body></html>\n")
