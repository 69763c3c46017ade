"""The verdict as a table: final gate results in, status out (kernelopt_core.verdict)."""

from __future__ import annotations

import pytest

from kernelopt_core.gates.base import FALLBACK, MATCHED, UNVERIFIED, GateResult
from kernelopt_core.verdict import OPTIMIZED, protocol_results, verdict

PASS = GateResult("confirm", True, "1.30x")
NOT_FASTER = GateResult("confirm", False, "1.01x", failed_verdict=MATCHED)
CAUGHT = GateResult("shape", False, "wrong on the timed shape", failed_verdict=FALLBACK)
INTERPRETED = GateResult("timing", False, "interpreter", failed_verdict=UNVERIFIED)


@pytest.mark.parametrize("results, benched, expected", [
    ([PASS], True, OPTIMIZED),
    ([PASS, NOT_FASTER], True, MATCHED),
    ([NOT_FASTER, CAUGHT], True, FALLBACK),  # fallback beats matched
    ([NOT_FASTER, INTERPRETED], True, UNVERIFIED),  # unverified beats matched
    ([CAUGHT, INTERPRETED], True, FALLBACK),
    ([], True, OPTIMIZED),
    ([PASS], False, UNVERIFIED),  # no bench: nothing claimed
    ([PASS, CAUGHT], False, FALLBACK),
])
def test_verdict(results: list[GateResult], benched: bool, expected: str) -> None:
    assert verdict(results, benched=benched) == expected


def test_protocol_results() -> None:
    names = ["confirm", "shape"]
    assert protocol_results([PASS], benched=True, interpreted=False, gates_configured=names) == []
    timing = protocol_results([PASS], benched=True, interpreted=True, gates_configured=names)
    assert [(r.gate, r.failed_verdict) for r in timing] == [("timing", UNVERIFIED)]
    no_confirm = protocol_results([], benched=True, interpreted=False, gates_configured=["shape"])
    assert [(r.gate, r.failed_verdict) for r in no_confirm] == [("protocol", MATCHED)]
    assert protocol_results([], benched=False, interpreted=False, gates_configured=["shape"]) == []
    # a candidate already caught gets nothing added: fallback stands
    assert protocol_results([CAUGHT], benched=True, interpreted=True, gates_configured=names) == []
