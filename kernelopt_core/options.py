"""Plugin-owned options: one typed declaration gives a ``kernelopt run`` flag, a key in the
plugin's own kernelopt.toml table, an environment variable and the coercion.

A plugin declares an attrs class and returns it from ``kernelopt_option_tables``::

    @option_table("triton")
    @attrs.frozen
    class TritonOptions:
        top: int = option(1, "Model files: optimize the K kernels with the largest share.",
                          validator=attrs.validators.ge(1))

which gives ``--top N``, ``[triton] top = N`` (in the user's config or kernelopt.toml),
``KERNELOPT_TOP=N`` and ``-o top=N`` (also ``-o triton.top=N``). Flags, variables and ``-o``
keys share one namespace with the core's own settings: where a field's name is a core
setting, or another table declares it as another option (type or default), its key is
namespaced by the table in every table that declares it, ``--triton-top``,
``KERNELOPT_TRITON_TOP``, ``-o triton_top=N``, whatever order the plugins load in, and
``kernelopt plugins`` says so (``option_keys``). The plugin reads
``settings.section(TritonOptions).top``. Precedence is the core's: defaults < user config <
kernelopt.toml < environment (.env fills in) < ``-o`` < the flag.
"""

from __future__ import annotations

import collections
import re
import types
import typing
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs
import cattrs

from kernelopt_core.errors import UsageError

T = TypeVar("T")
TABLE_ATTR = "__kernelopt_table__"
_HELP = "kernelopt_help"
_converter = cattrs.Converter()


def option(default: Any, help: str, *, choices: tuple[str, ...] | None = None,
           validator: Callable[..., Any] | None = None, flag: str | None = None,
           repeatable: bool = False) -> Any:
    """One option of a plugin's table: its default, its help line, and optionally the values it
    may take and an attrs validator (a failure becomes a usage error naming its source).
    ``flag``: the command line's spelling instead of ``--key`` (the key still names the
    variable and ``-o``); ``repeatable``: a tuple option given once per value on the command
    line (``--candidate A --candidate B``)."""
    validators = [attrs.validators.in_(choices)] if choices else []
    if validator is not None:
        validators.append(validator)
    return attrs.field(default=default, validator=validators or None,
                       metadata={_HELP: help, "choices": choices, "flag": flag,
                                 "repeatable": repeatable})


def option_table(name: str) -> Callable[[type[T]], type[T]]:
    """Name the kernelopt.toml table an options class is read from (``[name]``)."""
    def mark(cls: type[T]) -> type[T]:
        setattr(cls, TABLE_ATTR, name)
        return cls
    return mark


def table_name(cls: type) -> str:
    name = getattr(cls, TABLE_ATTR, None)
    if not isinstance(name, str) or not attrs.has(cls):
        raise TypeError(f"{cls!r} is not an options class (an attrs class under @option_table)")
    return name


def fields(cls: type) -> dict[str, attrs.Attribute]:
    attrs.resolve_types(cls)
    return {f.name: f for f in attrs.fields(cls)}


def same_option(a: attrs.Attribute, b: attrs.Attribute) -> bool:
    """Two tables' options one key may set: the same type and default (kernelopt-triton's and
    kernelopt-llamacpp's ``top``)."""
    return bool(a.type == b.type and a.default == b.default)


def option_keys(tables: Sequence[type], taken: Collection[str],
                core: Collection[type] = ()) -> dict[tuple[str, str], str]:
    """(table, field) -> the key of its flag (``--key``), variable (``KERNELOPT_KEY``) and
    ``-o key=``, decided from the tables alone, never from their order: the field's own name,
    shared by every table that declares the same option (type and default); ``TABLE_FIELD`` in
    every table that declares it where the name is in ``taken`` (the core's settings) or
    another table declares it as another option. ``core``: the built-in gates' tables
    (gates/options.py), whose fields keep their own names, taken as the core's settings are.
    A namespaced key that meets another key is namespaced again (``t_t_x``). Pure, so the
    flags, the settings and ``kernelopt plugins`` agree for the same tables installed in any
    order."""
    own = {table_name(cls) for cls in core}
    taken = {*taken, *(name for cls in core for name in fields(cls))}
    declared: dict[str, list[tuple[str, attrs.Attribute]]] = {}
    for cls in tables:
        for name, field in fields(cls).items():
            declared.setdefault(name, []).append((table_name(cls), field))
    keys: dict[tuple[str, str], str] = {}
    for name, owners in declared.items():
        shared = name not in taken and all(same_option(f, owners[0][1]) for _t, f in owners)
        for table, _field in owners:
            keys[(table, name)] = name if shared or table in own else _namespaced(table, name)
    for attempt in range(len(keys) + 2):  # each pass lengthens the clashing keys
        plain = {key for (_table, name), key in keys.items() if key == name}
        count = collections.Counter(keys.values())
        clashing = [(table, name) for (table, name), key in keys.items() if key != name and (
            key in taken or key in plain or count[key] > 1)]
        if not clashing:
            return keys
        last = attempt == len(keys)  # tables whose names differ only in punctuation ([t-t],
        for table, name in clashing:  # [t_t]) never part by cleaned names: spell it out
            keys[(table, name)] = (_namespaced(table, name, exact=True) if last
                                   else _namespaced(table, keys[(table, name)]))
    raise ValueError("option tables whose names clash: "
                     + ", ".join(sorted({f"[{t}]" for (t, n), k in keys.items() if k != n})))


def _namespaced(table: str, key: str, exact: bool = False) -> str:
    if exact:
        table = re.sub(r"\W", lambda m: f"_{ord(m.group()):x}_", table)
    return re.sub(r"\W", "_", f"{table}_{key}")


def _base_type(hint: Any) -> Any:
    """``int | None`` → int; anything else as is."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        rest = [a for a in typing.get_args(hint) if a is not type(None)]
        return rest[0] if len(rest) == 1 else str
    return hint


def click_options(cls: type, keys: dict[tuple[str, str], str]) -> list[Any]:
    """The table's flags: ``--key`` per field (``option_keys``; booleans as
    ``--key/--no-key``), no click default (an unset flag must not hide kernelopt.toml or the
    environment)."""
    import click

    out = []
    table = table_name(cls)
    for name, field in fields(cls).items():
        base = _base_type(field.type)
        key = keys.get((table, name), name)
        flag = field.metadata.get("flag") or "--" + key.replace("_", "-")
        text = f"{field.metadata.get(_HELP, '')} [{field.default!r}]"
        if base is bool:
            out.append(click.Option([f"{flag}/--no-{flag[2:]}", key], default=None, help=text))
            continue
        if field.metadata.get("repeatable"):  # one value per use: a tuple of them
            out.append(click.Option([flag, key], multiple=True, default=None, help=text))
            continue
        choices = field.metadata.get("choices")
        kind: Any = (click.Choice(list(choices)) if choices else
                     {int: int, float: float, Path: click.Path(path_type=Path)}.get(base, str))
        out.append(click.Option([flag, key], type=kind, default=None, help=text))
    return out


def coerce(cls: type, name: str, value: Any, origin: str) -> Any:
    """A raw value (TOML, environment, ``-o``, flag) as the field's type, or a usage error."""
    return convert(name, fields(cls)[name].type, value, origin)


def convert(name: str, hint: Any, value: Any, origin: str) -> Any:
    """``value`` as type ``hint`` (cattrs; a comma list for a tuple, yes/no words for a bool,
    never a bool for a number); a usage error naming ``origin`` when it is not one. The core's
    settings and every plugin's options go through here."""
    try:
        base = _base_type(hint)
        if isinstance(value, str) and base is bool:
            text = value.strip().lower()
            if text not in ("1", "true", "yes", "on", "0", "false", "no", "off"):
                raise ValueError("not a boolean")
            return text in ("1", "true", "yes", "on")
        if base is bool and not isinstance(value, bool) and value not in (0, 1):
            raise TypeError("not a boolean")  # 2.0 or 7 is no yes/no
        if base in (int, float) and isinstance(value, bool):
            raise TypeError("a boolean is not a number")
        if base is int and isinstance(value, float) and not value.is_integer():
            raise TypeError("not a whole number")  # 2.7 iterations is no count
        if typing.get_origin(base) is tuple and isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        return _converter.structure(value, hint)
    except Exception as exc:
        kind = _type_name(hint)
        raise UsageError(f"{origin}: `{name}` = {value!r} is not a valid {kind}",
                         hint=f"give `{name}` a value of type {kind}") from exc


def _type_name(hint: Any) -> str:
    """A type as a user reads it: `int`, `float or None`, `tuple of int` (not `<class 'int'>`)."""
    names = {int: "integer", float: "number", str: "string", bool: "boolean (true/false)"}
    if hint in names:
        return names[hint]
    args = typing.get_args(hint)
    if type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return " or ".join(_type_name(a) for a in rest) + " (or unset)"
    origin = typing.get_origin(hint)
    if origin in (tuple, list) and args:
        return f"list of {_type_name(args[0])}"
    return getattr(hint, "__name__", str(hint))


def build(cls: type[T], values: dict[str, Any], origins: dict[str, str]) -> T:
    """The table's object; a validator's complaint names the option and where it came from."""
    try:
        return cls(**values)
    except (ValueError, TypeError) as exc:
        # attrs validators raise (message, attribute, bound, value)
        message = exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)
        field = exc.args[1] if len(exc.args) > 1 and isinstance(exc.args[1], attrs.Attribute) \
            else None
        named = re.match(r"'(\w+)'", message)  # attrs' ge/gt/le: "'name' must be >= 1: 0"
        if field is None and named:
            field = fields(cls).get(named.group(1))
        name = field.name if field is not None else "options"
        choices = field.metadata.get("choices") if field is not None else None
        raise UsageError(
            f"{origins.get(name, 'default')}: [{table_name(cls)}] `{name}` = "
            f"{values.get(name)!r}: {message}",
            hint=f"`{name}` takes one of {', '.join(choices)}" if choices else
            f"`{name}`: {field.metadata.get(_HELP, '') if field is not None else ''} "
            "(`kernelopt run --help` lists every option)") from exc


def read_tables(tables: list[type], sources: list[tuple[Path, dict[str, Any], str]],
                env: Callable[[str], str | None], pairs: dict[str, tuple[Any, str]],
                where: Callable[[Path, str, str, str], str],
                keys: dict[tuple[str, str], str]) -> tuple[dict[str, Any], dict[str, str]]:
    """Every table's object from its TOML tables (``sources``: path, parsed, text; later
    wins), ``KERNELOPT_<KEY>`` and ``pairs`` (``-o`` keys and flags: key or "table.field" ->
    (value, origin), already in precedence order; ``keys`` from ``option_keys``). Returns
    (table name -> object, "table.field" -> origin)."""
    objects: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for cls in tables:
        table = table_name(cls)
        known = fields(cls)
        values: dict[str, Any] = {}
        mine: dict[str, str] = {}
        for path, data, text in sources:
            content = data.get(table, {})
            if not isinstance(content, dict):
                raise UsageError(f"{where(path, text, table, '')}: [{table}] must be a table")
            unknown = [k for k in content if k not in known]
            if unknown:  # every one at once
                raise UsageError("; ".join(f"{where(path, text, k, table)}: unknown key `{k}` in "
                                           f"[{table}]" for k in unknown),
                                 hint=f"known keys: {', '.join(known)}")
            for key, value in content.items():
                mine[key] = where(path, text, key, table)
                values[key] = coerce(cls, key, value, mine[key])
        for key in known:
            public = keys.get((table, key), key)
            variable = f"KERNELOPT_{public.upper()}"
            raw = env(variable)
            if raw:
                values[key] = coerce(cls, key, raw, f"environment variable {variable}")
                mine[key] = f"env {variable}"
            given = [v for k, v in pairs.items() if k in (public, f"{table}.{key}")]
            if given:  # both forms given: the later one (pairs are in precedence order)
                value, origin = given[-1]
                values[key] = coerce(cls, key, value, origin)
                mine[key] = origin
        objects[table] = build(cls, values, mine)
        origins.update({f"{table}.{k}": v for k, v in mine.items()})
    return objects, origins
