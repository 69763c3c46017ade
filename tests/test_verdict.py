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
    assert protocol_results([PASS], benched=True, interpreted=False, can_claim=True) == []
    timing = protocol_results([PASS], benched=True, interpreted=True, can_claim=True)
    assert [(r.gate, r.failed_verdict) for r in timing] == [("timing", UNVERIFIED)]
    no_confirm = protocol_results([], benched=True, interpreted=False, can_claim=False)
    assert [(r.gate, r.failed_verdict) for r in no_confirm] == [("protocol", MATCHED)]
    assert protocol_results([], benched=False, interpreted=False, can_claim=False) == []
    # a candidate already caught gets nothing added: fallback stands
    assert protocol_results([CAUGHT], benched=True, interpreted=True, can_claim=True) == []


def test_a_gate_plan_honours_each_gates_requires() -> None:
    """`requires` is read from any gate (built-in or a plugin's); a gate without it is valid."""
    from types import SimpleNamespace

    from kernelopt_core.errors import UsageError
    from kernelopt_core.resolve import check_gate_plan

    def gate(name: str, **attrs: object) -> SimpleNamespace:
        return SimpleNamespace(name=name, phase="final", **attrs)

    correctness = [gate("correctness")]
    check_gate_plan(correctness, [gate("confirm"), gate("mine", requires=("confirm",))])
    check_gate_plan(correctness, [gate("plain")])  # no `requires` attribute at all
    with pytest.raises(UsageError, match="the mine gate needs `confirm` before it") as caught:
        check_gate_plan(correctness, [gate("mine", requires=("confirm",)), gate("confirm")])
    assert "--final-gates confirm,mine" in (caught.value.hint or "")
