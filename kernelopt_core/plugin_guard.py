"""Faults of third-party plugins contained to their smallest scope and named: a gate that raises
(or returns something other than a GateResult) fails that candidate at that gate, a planner that
raises fails that attempt — each with the plugin's package and version in the reason. Exit 4
stays for kernelopt's own bugs, so kernelopt's built-ins are never wrapped."""

from __future__ import annotations

from typing import Any

from kernelopt_core.capabilities import claims_speedup, is_exhaustive, required_gates
from kernelopt_core.errors import KerneloptError, PlannerError
from kernelopt_core.gates.base import FALLBACK, GateContext, GateResult


class GuardedGate:
    """A plugin's gate: its attributes read once (an optional one at its default), its faults
    as failed results."""

    def __init__(self, gate: Any, origin: str) -> None:
        self._gate = gate
        self.origin = origin
        self.name: str = gate.name
        self.phase: str = gate.phase
        self.requires = required_gates(gate)
        self.claims_speedup = claims_speedup(gate)

    def evaluate(self, ctx: GateContext) -> GateResult:
        name = self._gate.name
        try:
            result = self._gate.evaluate(ctx)
        except KerneloptError:  # a missing tool, a usage error: kernelopt's own exits
            raise
        except Exception as exc:  # any fault of the plugin's code
            fault = f"{type(exc).__name__}: {exc}"
            # the final phase cannot vouch for a winner its gate never judged: fallback
            return GateResult(name, False, f"{fault} ({self.origin})", failed_verdict=FALLBACK,
                              metrics={"plugin_error": fault, "plugin": self.origin})
        if not isinstance(result, GateResult):
            return GateResult(name, False, f"evaluate returned {result!r}, not a GateResult "
                              f"({self.origin})", failed_verdict=FALLBACK,
                              metrics={"plugin": self.origin})
        return result


class GuardedPlanner:
    """A plugin's planner: a fault in ``propose`` is a failed attempt (PlannerError), one in
    ``observe`` is reported the same way at the next proposal."""

    def __init__(self, planner: Any, origin: str) -> None:
        self._planner = planner
        self.origin = origin
        self._observe_fault: str | None = None
        self.name: str = planner.name
        self.exhaustive = is_exhaustive(planner)

    def unavailable_reason(self, settings: Any, target: Any) -> str | None:
        result: str | None = self._planner.unavailable_reason(settings, target)
        return result

    def propose(self, ctx: Any, parent: Any, count: int) -> Any:
        if self._observe_fault is not None:
            fault, self._observe_fault = self._observe_fault, None
            raise PlannerError(f"observe raised {fault} ({self.origin})")
        try:
            return self._planner.propose(ctx, parent, count)
        except KerneloptError:  # PlannerError (a failed attempt) and kernelopt's own exits
            raise
        except Exception as exc:  # any fault of the plugin's code
            raise PlannerError(f"{type(exc).__name__}: {exc} ({self.origin})") from exc

    def observe(self, ctx: Any, proposal: Any, outcome: Any) -> None:
        try:
            self._planner.observe(ctx, proposal, outcome)
        except Exception as exc:  # the candidate's result stands
            self._observe_fault = f"{type(exc).__name__}: {exc}"


def unwrapped(planner: Any) -> Any:
    """The plugin's own planner inside a GuardedPlanner (or the planner itself): capability
    checks (``isinstance`` against a protocol) must see its optional methods, which the guard
    does not have."""
    return planner._planner if isinstance(planner, GuardedPlanner) else planner
