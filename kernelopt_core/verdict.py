"""The verdict: a pure function of the final gates' results (docs/gates.md)."""

from __future__ import annotations

from collections.abc import Sequence

from kernelopt_core.gates.base import FALLBACK, MATCHED, UNVERIFIED, GateResult

OPTIMIZED = "optimized"


def protocol_results(results: Sequence[GateResult], *, benched: bool, interpreted: bool,
                     can_claim: bool) -> list[GateResult]:
    """Results the protocol adds after the final gates ran (none once a gate caught the
    candidate): an interpreter's times never make a device speedup, and no speedup is
    claimed when no final gate can claim one (``can_claim``: a configured gate with
    ``claims_speedup``, the confirm gate; the screen alone is three invocations, which noise
    passes)."""
    if any(not r.passed and r.failed_verdict == FALLBACK for r in results):
        return []
    if interpreted:
        return [GateResult("timing", False, "the bench times come from an interpreter, not "
                           "the device: no speedup is claimed", failed_verdict=UNVERIFIED)]
    if benched and not can_claim:
        return [GateResult("protocol", False, "the confirm gate did not run (removed from the "
                           "final gates) and no other final gate can claim a speedup: none is "
                           "claimed", failed_verdict=MATCHED)]
    return []


def verdict(results: Sequence[GateResult], *, benched: bool) -> str:
    """optimized when every final gate passed on a benched target; else the most severe
    verdict a failed gate leaves (fallback > unverified > matched). Without a bench nothing
    is claimed: unverified if every gate passed, else fallback."""
    failures = [r for r in results if not r.passed]
    if not benched:
        return UNVERIFIED if not failures else FALLBACK
    if not failures:
        return OPTIMIZED
    verdicts = {f.failed_verdict for f in failures}
    if FALLBACK in verdicts:
        return FALLBACK
    return UNVERIFIED if UNVERIFIED in verdicts else MATCHED
