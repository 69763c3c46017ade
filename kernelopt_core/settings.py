"""Run settings from defaults, the user's config, kernelopt.toml, .env, environment and flags.

Precedence (later wins): defaults < user config (``$KERNELOPT_CONFIG`` or
``~/.config/kernelopt/config.toml``) < the project's kernelopt.toml < ``KERNELOPT_*``
environment variables (a ``.env`` file in the working directory fills in what the real
environment lacks) < command-line flags. Each value remembers where it came from.

Both TOML files may hold ``[run]`` (any setting by its flat name, ``FIELDS``), ``[gates]`` (``candidate`` and
``final``: ordered lists of gate names) and each plugin's own table (options.py: ``[agents]``,
``[triton]``, ``[llamacpp]``...), whose keys are that plugin's typed options. The built-in
gates' tunables are such tables too (gates/options.py: ``[confirm] final_rounds``...); their
old ``[run]`` keys are still read into them, with a note (``Settings.notes``) naming the table.
"""

from __future__ import annotations

import os
import re
import sys
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TypeVar

import attrs

from kernelopt_core.errors import UsageError
from kernelopt_core.gates.options import FLAT_ORDER, GATE_TABLES, TABLE_OF
from kernelopt_core.options import convert, option_keys, read_tables, table_name
from kernelopt_core.options import fields as option_fields

T = TypeVar("T")

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DEFAULT_CANDIDATE_GATES = ("policy", "build", "correctness", "screen")
DEFAULT_FINAL_GATES = ("confirm", "shape", "roofline", "engine")
CORE_SECTIONS = ("run", "gates")


@attrs.define
class SearchSettings:
    """How far the search goes and how wide (``settings.search``)."""

    iterations: int = 40  # candidates at most
    patience: int = 12  # candidates without a better one before the search stops
    target_speedup: float | None = None  # stop the search once the best reaches it
    budget_minutes: float | None = 30.0  # the run's wall time
    budget_gpu_seconds: float | None = None  # GPU-lock seconds for the search
    plans: int = 1  # proposals asked of the planner per step
    beam: int = 4  # the search's beam width


@attrs.define
class GateSettings:
    """The gates, in order (``settings.gates``); how the built-in gates measure is their own
    option tables' (gates/options.py: ``settings.section(ConfirmOptions).final_rounds``)."""

    candidate_gates: tuple[str, ...] = DEFAULT_CANDIDATE_GATES  # [gates] candidate
    final_gates: tuple[str, ...] = DEFAULT_FINAL_GATES  # [gates] final

    def __getattr__(self, name: str) -> Any:  # a gate written before issue 56: say where
        raise AttributeError(f"settings.gates.{name} moved (issue 56): settings.section("
                             f"ConfirmOptions).{name}, or Screen/Shape/RooflineOptions (api)")


@attrs.define
class Timeouts:
    """Seconds one command of the backend may take (``settings.timeouts``)."""

    build_timeout_s: float = 1800.0  # one build command
    test_timeout_s: float = 600.0  # one check command
    bench_timeout_s: float = 600.0  # one bench command


@attrs.define
class Settings:
    """A run's settings. kernelopt.toml's ``[run]``, the flags and ``KERNELOPT_*`` use flat
    names (``beam``); the grouped ones live in ``search``, ``gates`` and ``timeouts`` under
    the same names (``settings.search.beam``). ``Settings.make(**flat)`` builds one from flat
    names, the built-in gates' options among them (``final_rounds``, into ``[confirm]``'s
    object), ``flat()`` gives them back."""

    # runs, locks, caches; relative: to the working directory
    state_root: Path = attrs.field(factory=lambda: Path(".kernelopt"), converter=Path)
    backend: str | None = None  # None: the backend whose detect scores the path highest
    target: str | None = None  # one target of several; None: each in turn
    planner: str | None = None  # None: agents when an LLM is configured, else the tuner
    run_id: str | None = None  # names the run; an existing run of that name is resumed
    profiler: str | None = None  # profile the baseline and the winner with it
    model_check: bool = True  # after a model's kernels: the whole model every way (model_check.py)
    seeds: tuple[int, ...] = (1, 2, 3)  # correctness: each seed's fresh inputs
    search: SearchSettings = attrs.field(factory=SearchSettings)  # iterations, budgets, beam
    gates: GateSettings = attrs.field(factory=GateSettings)  # the gate lists, in order
    timeouts: Timeouts = attrs.field(factory=Timeouts)  # build, check and bench commands
    origins: dict[str, str] = attrs.field(factory=dict)  # setting -> where its value came from
    dotenv: dict[str, str] = attrs.field(factory=dict)  # the working directory's .env
    # Plugin-owned option tables (options.py): table name -> the plugin's options object;
    # read one with section(), build one for a test with Settings(tables={NAME: options})
    tables: dict[str, Any] = attrs.field(factory=dict)
    notes: list[str] = attrs.field(factory=list)  # for the user, not faults: a moved [run] key

    def section(self, cls: type[T]) -> T:
        """A plugin's options object (``kernelopt_option_tables``): as loaded, else defaults."""
        found = self.tables.get(table_name(cls))
        return found if isinstance(found, cls) else cls()

    def env(self, name: str) -> str | None:
        """A variable from the real environment, else from .env (the real one wins)."""
        return environment(self.dotenv, name)

    def owned_tables(self) -> frozenset[str]:
        """The top-level tables of kernelopt.toml the core reads: ``[run]``, ``[gates]`` and
        every installed plugin's option table (``[agents]``, ``[llamacpp]``, a third-party
        gate's). A backend's descriptor parser leaves these to the core and rejects the rest."""
        return frozenset(("run", "gates", *self.tables))

    @classmethod
    def make(cls, **values: Any) -> Settings:
        """Settings from flat names, as ``[run]``, the flags and ``KERNELOPT_*`` spell them
        (``Settings.make(seeds=(1,), screen_runs=1)``), and from Settings' own fields."""
        own = {f.name for f in attrs.fields(cls)}
        unknown = sorted(n for n in values if n not in GROUP_OF and n not in own
                         and n not in TABLE_OF)
        if unknown:  # a plugin's or a built-in planner's option: its own table
            raise TypeError(f"Settings.make: {', '.join(unknown)} is not a core setting; an "
                            "option table's is given as tables={NAME: Options(...)} "
                            "(e.g. tables={'tuner': TunerOptions(screen_top=5)})")
        groups: dict[str, dict[str, Any]] = {}
        for name in [n for n in values if n in GROUP_OF]:
            groups.setdefault(GROUP_OF[name], {})[name] = values.pop(name)
        moved: dict[type, dict[str, Any]] = {}  # a built-in gate's option: into its table
        for name in [n for n in values if n in TABLE_OF]:
            moved.setdefault(TABLE_OF[name], {})[name] = values.pop(name)
        tables = dict(values.pop("tables", None) or {})
        for table_cls, given in moved.items():
            found = tables.get(table_name(table_cls))
            if isinstance(found, table_cls):  # a table given too: the flat names change it
                given = {**{n: getattr(found, n) for n in option_fields(table_cls)}, **given}
            tables[table_name(table_cls)] = table_cls(**given)
        return cls(**values, tables=tables, **{g: GROUPS[g](**v) for g, v in groups.items()})

    def flat(self) -> dict[str, Any]:
        """Every setting under its flat name (``final_rounds``), as ``make`` takes them; the
        built-in gates' options among them, as the run header has always recorded them."""
        out: dict[str, Any] = {}
        for name in ORDER:
            group = GROUP_OF.get(name)
            if name in TABLE_OF:
                out[name] = getattr(self.section(TABLE_OF[name]), name)
                continue
            out[name] = getattr(getattr(self, group) if group else self, name)
        return out


def environment(dotenv: dict[str, str], name: str) -> str | None:
    """A variable from the real environment, else from .env (the real one wins)."""
    return os.environ.get(name, dotenv.get(name))


GROUPS: dict[str, type] = {"search": SearchSettings, "gates": GateSettings,
                           "timeouts": Timeouts}
for _cls in (Settings, *GROUPS.values()):
    attrs.resolve_types(_cls)
GROUP_OF = {f.name: group for group, cls in GROUPS.items() for f in attrs.fields(cls)}
# every setting by its flat name (``[run]`` key, flag, KERNELOPT_ variable) -> its attrs field
FIELDS: dict[str, attrs.Attribute] = {}
for _field in attrs.fields(Settings):
    if _field.name in GROUPS:
        FIELDS.update({f.name: f for f in attrs.fields(GROUPS[_field.name])})
    elif _field.name not in ("origins", "dotenv", "tables", "notes"):
        FIELDS[_field.name] = _field
# Settings.flat's names: the core's, the built-in gates' options after the gate lists
_after = tuple(FIELDS).index("final_gates") + 1
ORDER = (*tuple(FIELDS)[:_after], *FLAT_ORDER, *tuple(FIELDS)[_after:])


def with_gate_tables(tables: tuple[type, ...] | list[type]) -> tuple[type, ...]:
    """``tables`` and the built-in gates' own, which the core always reads (a bare
    ``load()`` as a test's, or a host without the built-in gates' plugin)."""
    names = {table_name(cls) for cls in tables}
    return (*tables, *(cls for cls in GATE_TABLES if table_name(cls) not in names))


def keys_of(tables: tuple[type, ...] | list[type]) -> dict[tuple[str, str], str]:
    """(table, field) -> its flag's, variable's and ``-o``'s key (``options.option_keys``),
    the core's settings and the built-in gates' options keeping their own names."""
    return option_keys(tables, FIELDS, core=GATE_TABLES)


def toml_line(text: str, key: str, section: str | None = None) -> int | None:
    """Best-effort line number of ``key`` (a bare key or a [section]) in TOML ``text``; with
    ``section``, the key inside that table."""
    pattern = re.compile(rf"^\s*(\[\[?\s*{re.escape(key)}\s*\]\]?|{re.escape(key)}\s*=)")
    header = re.compile(rf"^\s*\[\s*{re.escape(section)}\s*\]") if section else None
    inside = header is None
    for number, line in enumerate(text.splitlines(), 1):
        if header is not None and line.lstrip().startswith("["):
            inside = bool(header.match(line))
            continue
        if inside and pattern.match(line):
            return number
    return None


def where(path: Path, text: str, key: str, section: str | None = None) -> str:
    line = toml_line(text, key, section)
    return f"{path}:{line}" if line else str(path)


def read_toml(path: Path) -> tuple[dict[str, Any], str]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc}") from exc
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: invalid TOML: {exc}", hint="fix the syntax at that line") from exc


def _coerce(name: str, value: Any, origin: str) -> Any:
    return convert(name, FIELDS[name].type, value, origin)


def _apply_sections(values: dict[str, Any], origins: dict[str, str], data: dict[str, Any],
                    path: Path, text: str, plugin_keys: dict[str, set[str]]) -> None:
    run = data.get("run", {})
    gates = data.get("gates", {})
    for section, content in (("run", run), ("gates", gates)):
        if not isinstance(content, dict):
            raise UsageError(f"{where(path, text, section)}: [{section}] must be a table")
    if "options" in data:
        raise UsageError(f"{where(path, text, 'options')}: [options] is no longer read",
                         hint="each plugin reads its own table: e.g. `op` in [llamacpp], `top` "
                              "in [triton], `provider` in [agents] (`kernelopt run --help`)")
    unknown = [k for k in run if (k not in FIELDS and k not in TABLE_OF)
               or k in ("candidate_gates", "final_gates")]
    if unknown:  # every one at once: a file with two typos is fixed in one go
        owners = {k: next((t for t, names in plugin_keys.items() if k in names), None)
                  for k in unknown}
        hints = [f"`{k}` belongs in [{owner}]" for k, owner in owners.items() if owner]
        if not all(owners.values()):
            hints.append("known keys: " + ", ".join(
                k for k in (*FIELDS, *TABLE_OF) if not k.endswith('_gates')))
        raise UsageError("; ".join(f"{where(path, text, k)}: unknown key `{k}` in [run]"
                                   for k in unknown), hint="; ".join(hints))
    for key, value in run.items():
        if key in TABLE_OF:  # a built-in gate's option: read into its table (_moved_run_keys)
            continue
        values[key] = _coerce(key, value, where(path, text, key))
        origins[key] = str(path)
    for key, value in gates.items():
        if key not in ("candidate", "final"):
            raise UsageError(
                f"{where(path, text, key)}: unknown key `{key}` in [gates]",
                hint="[gates] takes `candidate = [...]` and `final = [...]` (gate names, in order)",
            )
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise UsageError(
                f"{where(path, text, key)}: [gates] {key} must be a list of gate names",
                hint='e.g. candidate = ["build", "correctness", "screen"]',
            )
        values[f"{key}_gates"] = tuple(value)
        origins[f"{key}_gates"] = str(path)


def _moved_run_keys(data: dict[str, Any], path: Path,
                    notes: list[str]) -> dict[str, Any]:
    """``data`` with ``[run]``'s keys of a built-in gate's option read as its table's (``[run]
    final_rounds`` as ``[confirm]``'s, which wins), a note each naming the table."""
    run = data.get("run", {})
    moved = [k for k in run if k in TABLE_OF]
    if not moved:
        return data
    data = {**data}
    for key in moved:
        table = table_name(TABLE_OF[key])
        own = data.get(table, {})
        data[table] = {key: run[key], **own} if isinstance(own, dict) else own
        ignored = isinstance(own, dict) and key in own  # [table]'s own key wins
        notes.append(f"{path}: `{key}` in [run] is " + ("ignored: [{t}] sets it" if ignored
                     else "read, but it belongs in [{t}] now").format(t=table) + " (a gate's)")
    return data


def _where(path: Path, text: str, key: str, section: str | None = None) -> str:
    """``where``, and a built-in gate's option still given in ``[run]`` found there."""
    line = toml_line(text, key, section)
    if line is None and section is not None and key in TABLE_OF:
        line = toml_line(text, key, "run")
    return f"{path}:{line}" if line else str(path)


def read_dotenv(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    if not path.is_file():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        out[key.strip()] = value.strip().strip("'\"")
    return out


def user_config_path() -> Path:
    explicit = os.environ.get("KERNELOPT_CONFIG")
    if explicit:
        return Path(explicit)
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "kernelopt" / "config.toml"


def load(project_toml: Path | None, flags: dict[str, Any], cwd: Path | None = None,
         tables: tuple[type, ...] = ()) -> Settings:
    """Merge every source; ``flags`` holds only options the user actually gave; ``tables``:
    the plugins' option classes (``kernelopt_option_tables``)."""
    cwd = cwd or Path.cwd()
    tables = with_gate_tables(tables)
    notes: list[str] = []
    values: dict[str, Any] = {}
    origins: dict[str, str] = {name: "default" for name in FIELDS}
    dotenv = read_dotenv(cwd / ".env")
    env = partial(environment, dotenv)
    plugin_keys = {table_name(cls): set(attrs.fields_dict(cls)) for cls in tables}
    sources: list[tuple[Path, dict[str, Any], str]] = []
    for path in (user_config_path(), project_toml):
        if path is not None and path.is_file():
            data, text = read_toml(path)
            _apply_sections(values, origins, data, path, text, plugin_keys)
            sources.append((path, _moved_run_keys(data, path, notes), text))
    for name in FIELDS:
        env_name = f"KERNELOPT_{name.upper()}"
        raw = env(env_name)
        if raw is not None and raw != "":
            values[name] = _coerce(name, raw, f"environment variable {env_name}")
            origins[name] = f"env {env_name}"
    if os.environ.get("KERNELOPT_HOME") and flags.get("state_root") is None:
        values["state_root"] = Path(os.environ["KERNELOPT_HOME"])
        origins["state_root"] = "env KERNELOPT_HOME"
    keys = keys_of(tables)
    declared = {*keys.values(), *(f"{table}.{name}" for table, name in keys)}
    pairs: dict[str, tuple[Any, str]] = {}  # plugin options from -o, then flags (later wins)
    for pair in flags.get("option") or ():
        key, sep, value = pair.partition("=")
        table, dot, name = key.strip().rpartition(".")
        key = table + dot + name.replace("-", "_")
        if not sep or not key:
            raise UsageError(f"-o {pair!r} is not KEY=VALUE", hint="e.g. -o op=SOFT_MAX")
        if key not in declared:
            raise UsageError(f"-o {pair!r}: no installed plugin has an option `{key}`",
                             hint=f"options: {', '.join(sorted(set(keys.values()))) or 'none'} "
                                  "(each also as TABLE.NAME)")
        pairs[key] = (value, f"-o {key}")
    for name, value in flags.items():
        if value is None or value == () or name == "option":  # not given on the command line
            continue
        if name not in FIELDS:  # a plugin's flag (kernelopt_option_tables)
            pairs[name] = (value, f"option --{name.replace('_', '-')}")
            continue
        values[name] = _coerce(name, value, f"option --{name.replace('_', '-')}")
        origins[name] = "flag"
    objects, table_origins = read_tables(list(tables), sources, env, pairs, _where, keys)
    settings = Settings.make(**values, origins={**origins, **table_origins}, dotenv=dotenv,
                             tables=objects, notes=notes)
    if not settings.state_root.is_absolute():
        settings.state_root = (cwd / settings.state_root).resolve()
    _validate(settings)
    return settings


def _validate(settings: Settings) -> None:
    """The core's own settings; the built-in gates' options are checked by their tables'
    validators (gates/options.py) as they are read."""
    s = SimpleNamespace(**settings.flat())  # by flat name, as the messages say them
    checks = [
        (s.iterations >= 1, "iterations", "at least 1"),
        (s.patience >= 1, "patience", "at least 1"),
        (s.plans >= 1, "plans", "at least 1"),
        (s.beam >= 1, "beam", "at least 1"),
        (bool(s.seeds), "seeds", "a non-empty list of integers"),
        (s.target_speedup is None or s.target_speedup > 1.0, "target_speedup", "above 1.0"),
        (s.budget_minutes is None or s.budget_minutes > 0, "budget_minutes", "positive"),
        (s.budget_gpu_seconds is None or s.budget_gpu_seconds > 0, "budget_gpu_seconds",
         "positive"),
        (len(set(s.seeds)) == len(s.seeds), "seeds", "distinct (a repeated seed checks nothing new)"),
        *[(getattr(s, name) > 0, name, "positive (seconds)") for name in
          ("build_timeout_s", "test_timeout_s", "bench_timeout_s")],
    ]
    for ok, name, need in checks:
        if not ok:
            raise UsageError(
                f"`{name}` = {getattr(s, name)!r} (from {settings.origins.get(name, '?')}) "
                f"must be {need}"
            )
