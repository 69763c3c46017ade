"""The journal events' base class (kernelopt_core.events says how they are used)."""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

import attrs

KINDS: dict[str, type[Event]] = {}
E = TypeVar("E", bound="Event")


def optional(default: Any = None) -> Any:
    """A key present only in some records: left out when None."""
    return attrs.field(default=default, metadata={"optional": True})


@attrs.frozen(kw_only=True)
class Event:
    """One journal line's data, without ``event`` (its kind, ``EVENT``) and ``t`` (its time,
    added by the journal)."""

    EVENT: ClassVar[str] = ""

    def __init_subclass__(cls, kind: str = "", **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if kind:  # attrs makes the class again (slots): KINDS is filled in __init__
            cls.EVENT = kind

    def data(self) -> dict[str, Any]:
        """The record's keys, in the class's order, optional ones only when set."""
        return {f.name: value for f in attrs.fields(type(self))
                if (value := getattr(self, f.name)) is not None
                or not f.metadata.get("optional")}
