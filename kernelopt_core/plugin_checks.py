"""What a registered object must have (the protocols of hookspecs.py), checked when its plugin
registers it rather than when a run first calls it: a missing method, a method that cannot take
the arguments the core passes, a gate ``phase`` no gate list has, a name that is not a string.
The plugin host marks the plugin FAILED with these reasons in ``kernelopt plugins`` and leaves
the object out; kernelopt and the other plugins work on."""

from __future__ import annotations

import inspect
from typing import Any

GATE_PHASES = ("candidate", "final")

# kind -> (attribute, positional arguments the core calls it with; None: a string attribute)
REQUIRED: dict[str, tuple[tuple[str, int | None], ...]] = {
    "backends": (("name", None), ("detect", 1), ("discover", 2), ("build", 2), ("check", 3),
                 ("bench", 2), ("engine", 2)),
    "gates": (("name", None), ("phase", None), ("evaluate", 1)),
    "planners": (("name", None), ("unavailable_reason", 2), ("propose", 3), ("observe", 3)),
    "profilers": (("name", None), ("unavailable_reason", 0), ("wrap", 2), ("parse", 1)),
    "llm_providers": (("name", None), ("base_url", None)),
    "executors": (("name", None), ("run", 4)),
}


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
