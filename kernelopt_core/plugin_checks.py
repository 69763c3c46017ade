"""What a registered object must have (the protocols of hookspecs.py, read from the protocols
themselves: their annotated attributes and their methods' signatures), checked when its plugin
registers it rather than when a run first calls it: a missing method, a method that cannot take
the arguments the core passes, a gate ``phase`` no gate list has, a name that is not a string.
The plugin host marks the plugin FAILED with these reasons in ``kernelopt plugins`` and leaves
the object out; kernelopt and the other plugins work on."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from importlib.metadata import entry_points, packages_distributions, version
from typing import Any, Protocol

from kernelopt_core import hookspecs
from kernelopt_core.errors import PluginError
from kernelopt_core.target import Command, Target

GATE_PHASES = ("candidate", "final")


class ProviderRecord(Protocol):
    """What an LLM provider record must have (hookspecs.LLMProvider is the usual one)."""

    name: str
    base_url: str


# kind -> the protocol its records follow (hookspecs.py)
PROTOCOLS: dict[str, type] = {
    "backends": hookspecs.Backend, "gates": hookspecs.Gate, "planners": hookspecs.Planner,
    "profilers": hookspecs.Profiler, "llm_providers": ProviderRecord,
    "executors": hookspecs.Executor,
}


def members(protocol: type) -> tuple[tuple[str, int | None], ...]:
    """A protocol's members as the check reads them: (attribute, None) for each annotated
    string attribute, then (method, the positional arguments the core passes: its parameters
    without ``self``) for each method, in the order the protocol declares them."""
    attributes = [(name, None) for name in vars(protocol).get("__annotations__", {})]
    methods = [(name, len(inspect.signature(member).parameters) - 1)
               for name, member in vars(protocol).items()
               if inspect.isfunction(member) and not name.startswith("_")]
    return (*attributes, *methods)


# kind -> (attribute, positional arguments the core calls it with; None: a string attribute)
REQUIRED: dict[str, tuple[tuple[str, int | None], ...]] = {
    kind: members(protocol) for kind, protocol in PROTOCOLS.items()}


def name_of(record: Any) -> Any:
    """A registered object's ``name`` as it is, before it is checked (None when it has none):
    this module alone reads a plugin's object by attribute name."""
    return getattr(record, "name", None)


def _takes(record: Any, attr: str, count: int) -> bool:
    """Whether ``record.attr`` can be called with ``count`` positional arguments (an instance's
    method, or a class's: then ``self`` comes first); True where no signature can be read."""
    method = getattr(record, attr)
    extra = 0
    if isinstance(record, type) and not isinstance(inspect.getattr_static(record, attr),
                                                   (staticmethod, classmethod)):
        extra = 1  # a planner registered as its class: the core makes the instance
    try:
        inspect.signature(method).bind(*([None] * (count + extra)))
    except TypeError:
        return False
    except ValueError:  # a builtin without a signature
        return True
    return True


def problems(kind: str, record: Any) -> list[str]:
    """Why ``record`` (one object a ``kernelopt_register_<kind>`` hook returned) cannot serve."""
    out: list[str] = []
    if isinstance(record, type) and kind != "planners":  # only a planner is made per run
        return [f"a class ({record.__name__}), not an instance: register {record.__name__}()"]
    for attr, count in REQUIRED.get(kind, ()):
        if not hasattr(record, attr):
            out.append(f"no `{attr}`" + (" method" if count is not None else ""))
        elif count is None:
            value = getattr(record, attr)
            if not isinstance(value, str) or not value:
                out.append(f"`{attr}` is {value!r}, not a non-empty string")
        elif not callable(getattr(record, attr)):
            out.append(f"`{attr}` is not a method")
        elif not _takes(record, attr, count):
            out.append(f"`{attr}` cannot take the {count} argument(s) kernelopt passes "
                       "(see kernelopt_core/hookspecs.py)")
    phase = getattr(record, "phase", None)
    if kind == "gates" and isinstance(phase, str) and phase not in GATE_PHASES:
        out.append(f"phase {phase!r} is not one of {', '.join(map(repr, GATE_PHASES))}")
    return out


def _commands(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(isinstance(c, Command) for c in value)


def _command_or_none(value: Any) -> bool:
    return value is None or isinstance(value, Command)


# a backend hook -> (whether a value is what it must return, what that is in words)
RETURNS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "discover": (lambda v: isinstance(v, (list, tuple)) and all(isinstance(t, Target) for t in v),
                 "a list of Target"),
    "build": (_commands, "a list of Command"),
    "check": (lambda v: isinstance(v, Command), "a Command"),
    **{hook: (_command_or_none, "a Command or None")
       for hook in ("bench", "engine", "engine_pair", "check_seeds", "shape_check")},
}


@functools.cache
def _plugin_packages() -> dict[str, str]:
    """A plugin's top module -> ``distribution version``, from kernelopt's entry points (the
    plugin host's view: a dist-info without a RECORD names its modules only there)."""
    found: dict[str, str] = {}
    for ep in entry_points(group=hookspecs.PROJECT):
        dist = getattr(ep, "dist", None)
        if dist is not None:
            found.setdefault(ep.value.split(":")[0].split(".")[0],
                             f"{dist.metadata['Name']} {dist.version}")
    return found


def package_of(obj: Any) -> str:
    """The package that ships ``obj``'s class, as ``kernelopt-foo 0.1.0`` (its module where no
    installed distribution claims it)."""
    module = type(obj).__module__
    top = module.split(".")[0]
    if top in _plugin_packages():
        return _plugin_packages()[top]
    names = packages_distributions().get(top, [])
    if not names:
        return f"module {module}"
    try:
        return f"{names[0]} {version(names[0])}"
    except Exception:  # a distribution without metadata: its name alone
        return names[0]


def returned(backend: Any, hook: str, value: Any) -> Any:
    """``value`` as the backend's ``hook`` returned it, checked against the Backend protocol: a
    wrong type is the plugin's broken contract (PluginError, exit 3, naming its package), never
    a crash deeper in kernelopt."""
    ok, expected = RETURNS[hook]
    if not ok(value):
        shown = repr(value)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        name = getattr(backend, "name", type(backend).__name__)
        raise PluginError(
            f"the {name} backend's {hook}() returned {type(value).__name__} {shown}, not "
            f"{expected} ({package_of(backend)})",
            hint="fix the plugin (the Backend protocol: kernelopt_core/hookspecs.py, "
                 "docs/plugins.md) or use another backend")
    return value
