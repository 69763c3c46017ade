"""Set-up of a run before any work: which gates, which planner, and the checks that refuse a
configuration no verdict could rest on (exit 2, nothing done)."""

from __future__ import annotations

from typing import Any

from kernelopt_core import knobs as knob_edit
from kernelopt_core.capabilities import (
    ChecksInputs,
    ChecksProvider,
    SelectsItself,
    UsesPlugins,
    required_gates,
)
from kernelopt_core.errors import KerneloptError, PlannerError, PrerequisiteError, UsageError
from kernelopt_core.hookspecs import Gate
from kernelopt_core.plugin_guard import GuardedGate, GuardedPlanner, unwrapped
from kernelopt_core.plugins import PluginHost
from kernelopt_core.settings import Settings
from kernelopt_core.target import Knob, Target


def gates(host: PluginHost, settings: Settings, names: tuple[str, ...], phase: str) -> list[Gate]:
    known = host.registry("gates")
    chosen = []
    for name in names:
        if name not in known and (why := host.left_out("gates", name)):
            raise UsageError(f"{phase} gate {name!r} was left out at registration: {why}",
                             hint="fix or upgrade the plugin; `kernelopt plugins` lists it")
        if name not in known:
            raise UsageError(
                f"unknown {phase} gate {name!r} in the gate configuration "
                f"(from {settings.origins.get(phase + '_gates', '?')})",
                hint=f"known gates: {', '.join(sorted(known))}",
            )
        if known[name].phase != phase:
            raise UsageError(
                f"gate {name!r} runs in the {known[name].phase!r} phase, not {phase!r}",
                hint=f"move it to `{known[name].phase} = [...]` in [gates]",
            )
        origin = host.origin("gates", name)
        chosen.append(GuardedGate(known[name], origin) if origin else known[name])
    return chosen


def check_gate_plan(candidate: list[Gate], final: list[Gate]) -> None:
    """Gate lists a verdict cannot rest on: refuse them before any work is done. Correctness is
    never optional; a gate's ``requires`` must come before it in its phase."""
    if "correctness" not in [g.name for g in candidate]:
        raise UsageError("the candidate gates lack `correctness`: kernelopt never hands back a "
                         "kernel it has not checked", hint="keep correctness in --gates / [gates]")
    for phase, chosen in (("candidate", candidate), ("final", final)):
        names = [g.name for g in chosen]
        for i, gate in enumerate(chosen):
            missing = [r for r in required_gates(gate) if r not in names[:i]]
            if missing:
                order = ",".join([*missing, *names[:i], gate.name])
                raise UsageError(
                    f"the {gate.name} gate needs {', '.join(f'`{m}`' for m in missing)} before "
                    f"it in the {phase} gates",
                    hint=f"e.g. --{'gates' if phase == 'candidate' else 'final-gates'} {order}")


def planner(host: PluginHost, settings: Settings, target: Target) -> tuple[Any, str]:
    """The planner and why it was chosen: --planner, else the first planner that selects
    itself, asked by rank (the built-ins: replay for --candidate, the agents when an LLM is
    configured, the tuner always), saying why the ones above it declined."""
    records = host.registry("planners")

    def make(name: str) -> Any:
        """A fresh planner for this run (``instantiate``), a plugin's in its guard. Only the
        planners this choice needs are made."""
        made = instantiate(records[name], host)
        origin = host.origin("planners", name)
        return GuardedPlanner(made, origin) if origin else made

    name = settings.planner
    if name is None:
        declined: list[str] = []
        ranked = sorted((n for n, r in records.items() if isinstance(r, SelectsItself)
                         and isinstance(r.selection_rank, int)),
                        key=lambda n: -records[n].selection_rank)
        for candidate in ranked:
            made = make(candidate)
            chosen, why = _select(made, candidate, host, settings, target)
            if chosen and (cannot := made.unavailable_reason(settings, target)) is not None:
                chosen, why = False, cannot
            if chosen:
                return made, (f"{why}: {'; '.join(declined)}" if declined else why) + (
                    _provider_check(made, settings))
            if why:
                declined.append(why)
        raise UsageError("no installed planner selects itself for this run",
                         hint=f"name one with --planner ({', '.join(sorted(records))})")
    if name not in records:
        raise UsageError(
            f"unknown planner {name!r}", hint=f"known planners: {', '.join(sorted(records))}"
        )
    chosen_planner = make(name)
    reason = chosen_planner.unavailable_reason(settings, target)
    if reason is not None:
        raise PrerequisiteError(f"planner {name!r} cannot run: {reason}")
    return chosen_planner, "chosen by --planner" + _provider_check(chosen_planner, settings)


def instantiate(record: Any, host: PluginHost) -> Any:
    """A registered planner ready to use: a class is instantiated (a planner keeps a run's
    history, budgets and client), an object serves as it is; one that ``use_plugins`` is
    handed the host."""
    made = record() if isinstance(record, type) else record
    if isinstance(made, UsesPlugins):
        made.use_plugins(host)
    return made


def _select(made: Any, name: str, host: PluginHost, settings: Settings,
            target: Target) -> tuple[bool, str]:
    """A planner's own answer to "are you the one?"; a plugin's that raises (or answers
    something else than a pair) declines, named, and the next planner is asked."""
    try:
        chosen, why = unwrapped(made).select(settings, target)
    except KerneloptError:
        raise
    except Exception as exc:
        owner = host.origin("planners", name) or name
        return False, f"{name}'s select raised {type(exc).__name__}: {exc} ({owner})"
    return bool(chosen), str(why)


def _provider_check(planner: Any, settings: Settings) -> str:
    """An LLM planner's provider asked once before any build: one that can never answer (no
    server, a rejected key, an unknown model) stops the run now, exit 3, not after minutes of
    baseline work; a transient failure is said and left to the planner's own retries."""
    inner = unwrapped(planner)
    if not isinstance(inner, ChecksProvider):
        return ""
    try:
        answered = inner.check_provider(settings)
    except PlannerError as exc:
        return f"; its provider check failed ({exc}), the run goes on"
    return f"; {answered}" if answered else ""


def check_planner_inputs(planner: Any, settings: Settings, target: Target,
                         knobs: tuple[Knob, ...]) -> None:
    """The planner's own check of its inputs (replay: editable files; tuner: knobs)."""
    inner = unwrapped(planner)
    if isinstance(inner, ChecksInputs):
        inner.check_inputs(settings, target, knobs)


def knobs(target: Target, files: dict[str, bytes]) -> tuple[tuple[Knob, ...], dict[str, str]]:
    """The tuner's knobs (declared, else detected in the editable files) and their values in
    the baseline."""
    found = target.knobs or tuple(knob_edit.detect({p: files[p] for p in target.editable}))
    return found, knob_edit.current_values(found, files, target.editable)
