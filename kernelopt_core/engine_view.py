"""The engine gate's result as the report line and report.md say it (report.py's line cap)."""

from __future__ import annotations

from typing import Any


def engine_phrase(engine: dict[str, Any]) -> str:
    """The engine gate's numbers in one phrase: the model's paired speedup, its band, rounds
    and the Amdahl-expected effect."""
    amdahl = engine.get("amdahl_speedup")
    band = engine.get("noise_pct")
    rounds = engine.get("rounds")
    numbers = ", ".join(x for x in (
        f"band ±{band:.1f} %" if band is not None else "",
        (f"{rounds} paired rounds" if engine.get("paired") is not False else f"{rounds} runs each")
        if rounds else "",
        f"Amdahl {amdahl:.3f}×" if amdahl else "") if x)
    head = ("whole model within noise: " if engine.get("model_resolved") is False
            else "whole program ")
    return f"{head}{engine['speedup']:.3f}×" + (f" ({numbers})" if numbers else "")
