"""The whole model's section of a run's reports (the ``model`` of summary.json, written by
:mod:`kernelopt_core.model_check`): report.md's lines and report.html's table."""

from __future__ import annotations

from html import escape
from typing import Any


def markdown(model: dict[str, Any] | None) -> list[str]:
    """report.md's section on the whole model (kernelopt_core.model_check)."""
    if not model:
        return []
    lines = ["## The whole model", ""]
    runs = ", ".join(model.get("runs", []))
    if model.get("error"):
        return [*lines, f"Not measured (runs {runs}): {model['error']}", ""]
    winners = ", ".join(f"`{w}`" for w in model.get("winners", [])) or "none (nothing optimized)"
    lines += [f"Measured in one process ({model.get('seconds')} s), every way at once; "
              f"kernelopt's winners in place: {winners} (runs {runs}).", "",
              "| mode | ms (median) | spread (IQR) | windows | outputs match | vs kernelopt |",
              "|---|---|---|---|---|---|"]
    table, _ = rows(model, windows=True)
    lines += ["| " + " | ".join(row) + " |" for row in table]
    predicted = model.get("amdahl_predicted")
    lines += ["", f"Measured: {model['measured_speedup']:.3f}× over {model['baseline']}; "
              "predicted from the kernels' results (Amdahl): "
              + (f"{predicted:.3f}×" if predicted else "unknown (a share is unknown)")
              + ". The spread says how steady each mode's times were; a difference inside it "
              "is not a result.", ""]
    if model.get("choice"):  # another compile than the winners' (model_check.py)
        lines += [f"kernelopt returns {model['kernelopt']}: {model['choice']}.", ""]
    if model.get("detail"):  # the backend's own words: phases, tokens, what it ran
        lines += [f"The check: {model['detail']}.", ""]
    return lines


def html(model: dict[str, Any] | None) -> str:
    """report.html's table of the modes ("" when the model was not measured)."""
    model = model or {}
    if not model.get("modes"):
        return ""
    cells = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>"
                    for row in rows(model)[0])
    return ("<h2>The whole model (kernelopt's winners in place: "
            f"{escape(', '.join(model.get('winners', [])) or 'none')})</h2><table><tr>"
            "<th>mode</th><th>ms</th><th>spread</th><th>match</th><th>vs kernelopt</th></tr>"
            f"{cells}</table>")


def rows(model: dict[str, Any], windows: bool = False) -> tuple[list[list[str]], list[str]]:
    """The table of the modes: the console's (the ui prints it), report.md's (with windows)
    and report.html's."""
    table = [[label + (" (kernelopt)" if label == model["kernelopt"] else ""), f"{m['ms']:.4f}",
              f"±{m.get('spread_pct', 0):.1f} %",
              *([str(m.get("windows", "?"))] if windows else []),
              "yes" if m.get("match") else "NO", f"{model['versus'][label]:.3f}×"]
             for label, m in model["modes"].items()]
    return table, ["mode", "ms (median)", "spread", *(["windows"] if windows else []),
                   "outputs match", "vs kernelopt"]


def verdict_line(model: dict[str, Any]) -> str:
    predicted = model.get("amdahl_predicted")
    other = f" ({model['kernelopt']}: {model['choice']})" if model.get("choice") else ""
    return (f"whole model: {model['measured_speedup']:.3f}× over {model['baseline']} measured"
            + other
            + (f", {predicted:.3f}× predicted from the kernels (Amdahl)" if predicted else "")
            + f"; {model['seconds']} s; every run's report.md has the table")
