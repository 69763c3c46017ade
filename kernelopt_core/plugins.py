"""The plugin host: built-ins and entry points (group ``kernelopt``) through one pluggy manager.

There is no module-global manager: each CLI invocation (or test) builds a :class:`PluginHost`.
One broken plugin never takes the tool down: each entry point loads in its own ``try`` and a
failure is kept with its error and a fix hint for ``kernelopt plugins``; ``strict`` makes it
fatal. ``KERNELOPT_DISABLE_PLUGINS=a,b`` skips named plugins and
``KERNELOPT_DISABLE_PLUGIN_AUTOLOAD=1`` loads built-ins only.
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Callable, Iterable
from typing import Any

import attrs
import pluggy

from kernelopt_core import hookspecs, plugin_checks
from kernelopt_core.errors import PluginError

if sys.version_info >= (3, 12):
    from importlib.metadata import entry_points
else:  # the backport carries the 3.12 selection API
    try:
        from importlib_metadata import entry_points
    except ImportError:  # pragma: no cover - the dependency is declared for < 3.12
        from importlib.metadata import entry_points  # type: ignore[assignment]

BUILTIN_MODULES = {
    "core-gates": "kernelopt_core.gates.builtin",
    "core-tuner": "kernelopt_core.planners.tuner",
    "core-executors": "kernelopt_core.executors",
    "core-replay": "kernelopt_core.planners.replay",
    "core-agents": "kernelopt_core.planners.agents",
    "core-profilers": "kernelopt_core.profiling.builtin",
    "core-llm-providers": "kernelopt_core.llm_providers",
    "core-docs-lookup": "kernelopt_core.docs_lookup",
    "core-profile-command": "kernelopt_core.commands.profile",
    "core-campaign-command": "kernelopt_core.commands.campaign",
    "core-apply-command": "kernelopt_core.commands.apply",
    "core-watch-command": "kernelopt_core.commands.watch",
}

REGISTRIES = {
    "backends": "kernelopt_register_backends",
    "gates": "kernelopt_register_gates",
    "planners": "kernelopt_register_planners",
    "profilers": "kernelopt_register_profilers",
    "llm_providers": "kernelopt_register_llm_providers",
    "executors": "kernelopt_register_executors",
}


@attrs.define
class PluginInfo:
    """One loaded (or failed) plugin, as ``kernelopt plugins`` shows it."""

    name: str
    distribution: str
    version: str
    module: str
    builtin: bool
    error: str | None = None
    hint: str | None = None
    provides: dict[str, list[str]] = attrs.field(factory=dict)
    notes: list[str] = attrs.field(factory=list)  # not faults: e.g. a namespaced option key

    @property
    def label(self) -> str:
        """How an error names the plugin: ``plugin maxlines (kernelopt-maxlines 0.3)``."""
        return f"plugin {self.name} ({self.distribution} {self.version})"


class PluginHost:
    """Owns the pluggy manager and answers "which backends, gates, ... exist"."""

    def __init__(
        self,
        *,
        autoload: bool | None = None,
        disabled: Iterable[str] | None = None,
        strict: bool | None = None,
        extra: Iterable[tuple[str, object]] = (),
    ) -> None:
        env = os.environ
        if autoload is None:
            autoload = env.get("KERNELOPT_DISABLE_PLUGIN_AUTOLOAD", "") in ("", "0")
        if disabled is None:
            disabled = [n.strip() for n in env.get("KERNELOPT_DISABLE_PLUGINS", "").split(",")
                        if n.strip()]
        if strict is None:
            strict = env.get("KERNELOPT_STRICT_PLUGINS", "") not in ("", "0")
        self.disabled = set(disabled)
        self.strict = strict
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.infos: dict[str, PluginInfo] = {}
        for short, module_name in BUILTIN_MODULES.items():
            module = __import__(module_name, fromlist=["_"])
            self._register(module, short, "kernelopt", _version("kernelopt"), module_name, True)
        if autoload:
            self._load_entry_points()
        for name, obj in extra:
            self._register(obj, name, "(in-process)", "", repr(obj), False)
        self._records: dict[str, dict[str, tuple[str, Any]]] = {}
        self._left_out: dict[tuple[str, str], str] = {}  # (kind, name) -> why, for run's error
        self._tables: list[type] | None = None  # option_tables(), collected once

    # ------------------------------------------------------------------ loading
    def _register(
        self, obj: object, name: str, dist: str, version: str, module: str, builtin: bool
    ) -> None:
        if name in self.disabled:
            return
        info = PluginInfo(name, dist, version, module, builtin)
        if name in self.infos:  # two packages chose one entry-point name: keep the first
            first = self.infos[name]
            key = f"{name} ({dist})"
            info.name = key
            info.error = (f"entry-point name {name!r} is already used by {first.distribution} "
                          f"({first.module}); this plugin was not loaded")
            info.hint = f"rename the entry point in {dist}, or uninstall one of the two"
            if self.strict:
                raise PluginError(f"plugin {name!r} ({dist} {version}): {info.error}", hint=info.hint)
            self.infos[key] = info
            return
        try:
            self.pm.register(obj, name=name)
        except Exception as exc:  # a bad hookimpl signature
            info.error = f"{type(exc).__name__}: {exc}"
            info.hint = "fix the plugin's hook implementations (see kernelopt_core.hookspecs)"
            if self.strict:
                raise PluginError(f"plugin {name!r} ({dist} {version}): {info.error}",
                                  hint=info.hint) from exc
        else:
            self._check_hook_names(obj, info)
        self.infos[name] = info

    def _check_hook_names(self, obj: object, info: PluginInfo) -> None:
        """A hook implementation no hookspec knows (a misspelled name) would never be called:
        the plugin is marked broken (``kernelopt plugins`` says which hook), the others load."""
        unknown = []
        for attr in dir(obj):
            opts = self.pm.parse_hookimpl_opts(obj, attr)
            if opts is None or opts.get("optionalhook"):
                continue
            caller = getattr(self.pm.hook, opts.get("specname") or attr, None)
            if caller is None or caller.spec is None:
                unknown.append(attr)
        if not unknown:
            return
        specs = [n for n in dir(hookspecs) if n.startswith(hookspecs.PROJECT + "_")]
        guesses = {n: difflib.get_close_matches(n, specs, n=1) for n in unknown}
        info.error = "unknown hook " + ", ".join(
            f"{n!r}" + (f" (did you mean {g[0]!r}?)" if g else "") for n, g in guesses.items())
        info.hint = "rename it after a hookspec in kernelopt_core/hookspecs.py (docs/plugins.md)"
        if self.strict:
            raise PluginError(f"plugin {info.name!r} ({info.distribution} {info.version}): "
                              f"{info.error}", hint=info.hint)

    def _load_entry_points(self) -> None:
        for ep in entry_points(group=hookspecs.PROJECT):
            if ep.name in self.disabled:
                continue
            dist = getattr(ep, "dist", None)
            dist_name = dist.metadata["Name"] if dist is not None else "?"
            version = dist.version if dist is not None else "?"
            try:
                obj = ep.load()
            except (Exception, SystemExit) as exc:  # a plugin may not exit the tool either
                self.infos[ep.name] = PluginInfo(
                    ep.name,
                    dist_name,
                    version,
                    ep.value,
                    False,
                    error=f"{type(exc).__name__}: {exc}",
                    hint=f"reinstall or upgrade {dist_name}, or disable it with "
                    f"KERNELOPT_DISABLE_PLUGINS={ep.name}",
                )
                if self.strict:
                    raise PluginError(f"plugin {ep.name!r} ({dist_name} {version}) failed to load: "
                                      f"{type(exc).__name__}: {exc}",
                                      hint=self.infos[ep.name].hint) from exc
                continue
            self._register(obj, ep.name, dist_name, version, ep.value, False)

    # ------------------------------------------------------------------ registries
    def _collect(self, kind: str) -> dict[str, tuple[str, Any]]:
        """name -> (plugin, record) for one registration hook; duplicates are an error."""
        if kind in self._records:
            return self._records[kind]
        hook = getattr(self.pm.hook, REGISTRIES[kind])
        found: dict[str, tuple[str, Any]] = {}
        # registration order, kernelopt's own first whatever a plugin's tryfirst/trylast says:
        # a taken name keeps its first owner
        impls = sorted(hook.get_hookimpls(), key=lambda i: not getattr(
            self.infos.get(i.plugin_name), "builtin", False))
        for impl in impls:
            plugin = impl.plugin_name
            try:
                records = impl.function() or []
            except (Exception, SystemExit) as exc:
                self._blame(plugin, f"{REGISTRIES[kind]} raised {type(exc).__name__}: {exc}",
                            "the plugin's registration hook is broken; disable or upgrade it")
                continue
            for record in records:
                name = plugin_checks.name_of(record)
                wrong = plugin_checks.problems(kind, record)
                if not wrong and name in found:  # the first keeps it: a built-in comes first
                    wrong = [f"{kind[:-1]} {name!r} is already offered by "
                             f"{self._who(found[name][0])}"]
                if wrong:
                    self._left_out[(kind, str(name))] = f"{self._who(plugin)}: {'; '.join(wrong)}"
                    self._blame(plugin, f"{kind[:-1]} {name!r}: {'; '.join(wrong)}; left out",
                                f"fix the plugin (kernelopt_core/hookspecs.py, docs/plugins.md) "
                                f"or disable it: KERNELOPT_DISABLE_PLUGINS={plugin}")
                    continue
                found[str(name)] = (plugin, record)  # a string: plugin_checks saw to it
                if plugin in self.infos:
                    self.infos[plugin].provides.setdefault(kind, []).append(str(name))
        self._records[kind] = found
        return found

    def registry(self, kind: str) -> dict[str, Any]:
        return {name: rec for name, (_, rec) in self._collect(kind).items()}

    def owner(self, kind: str, name: str) -> str:
        return self._collect(kind)[name][0]

    def left_out(self, kind: str, name: str) -> str | None:
        """Why a plugin's object of that name was not registered (plugin_checks), if it was
        offered."""
        self._collect(kind)
        return self._left_out.get((kind, name))

    def origin(self, kind: str, name: str) -> str | None:
        """Who offers a registered object, for an error's message: ``plugin kernelopt-maxlines
        0.1.0``; None for kernelopt's own (a fault there is kernelopt's bug)."""
        info = self.infos.get(self._collect(kind)[name][0])
        return None if info is None or info.builtin else self._who(info.name)

    def at_fault(self, exc: BaseException) -> PluginInfo | None:
        """The third-party plugin whose code raised ``exc``: the deepest frame of its traceback
        in a plugin's package (kernelopt's own built-ins are never blamed: their faults are
        kernelopt's bugs)."""
        registered = [(info.module.split(":")[0].split("."), info) for info in self.infos.values()
                      if not info.builtin and self.pm.get_plugin(info.name) is not None]
        culprit = None
        tb = exc.__traceback__
        while tb is not None:  # a deeper frame in a plugin's modules overrides a shallower one
            module = str(tb.tb_frame.f_globals.get("__name__", "")).split(".")
            # the plugin whose module shares the longest dotted prefix (the top package at least)
            scored = [(_shared(mine, module), info) for mine, info in registered]
            best = max(scored, key=lambda pair: pair[0], default=(0, None))
            culprit = best[1] if best[0] else culprit
            tb = tb.tb_next
        return culprit

    def _who(self, plugin: str) -> str:
        info = self.infos.get(plugin)
        if info is None:
            return f"plugin {plugin!r}"
        return "kernelopt" if info.builtin else f"plugin {info.distribution} {info.version}"

    def plugin_infos(self) -> list[PluginInfo]:
        for kind in REGISTRIES:
            self._collect(kind)
        for name, plugin in self.pm.list_name_plugin():
            if name not in self.infos or "hooks" in self.infos[name].provides:
                continue
            others = sorted(
                h.name for h in self.pm.get_hookcallers(plugin) or []
                if h.name not in REGISTRIES.values()
            )
            if others:
                self.infos[name].provides["hooks"] = others
        return list(self.infos.values())

    def doc_lookup(self, symbol: str, language: str) -> list[hookspecs.DocHit]:
        hits: list[hookspecs.DocHit] = []
        for result in self.pm.hook.kernelopt_doc_lookup(symbol=symbol, language=language):
            hits.extend(result or [])
        return hits

    def prompt_fragments(self, backend: str, role: str) -> list[str]:
        out: list[str] = []
        for result in self.pm.hook.kernelopt_prompt_fragments(backend=backend, role=role):
            out.extend(result or [])
        return out

    def option_tables(self) -> list[type]:
        """Every plugin's option classes (``kernelopt_option_tables``), registration order. A
        table name another plugin already has is reported and the table left out; an option
        whose name is a core setting, or another table's option of another type or default,
        gets a key namespaced by its table in every table that declares it
        (``options.option_keys``: ``--maxlines-model``), noted on the plugin. Two plugins may
        share an option of the same type and default (``top``: the Triton models' kernels,
        llama.cpp's ops): one flag then sets both tables. Collected once per host."""
        if self._tables is not None:
            return self._tables
        from kernelopt_core.gates.options import TABLE_OF
        from kernelopt_core.options import table_name
        from kernelopt_core.settings import FIELDS, keys_of

        tables: list[type] = []
        owners: dict[str, str] = {}  # table -> plugin
        for impl in self.pm.hook.kernelopt_option_tables.get_hookimpls():
            try:
                offered: list[type] = list(impl.function() or [])  # type: ignore[call-overload]
                for cls in offered:
                    table = table_name(cls)
                    if table in owners:
                        self._blame(impl.plugin_name, f"option table [{table}] is already "
                                    f"plugin {owners[table]}'s; not added")
                        continue
                    tables.append(cls)
                    owners[table] = impl.plugin_name
            except (Exception, SystemExit) as exc:
                self._blame(impl.plugin_name,
                            f"kernelopt_option_tables raised {type(exc).__name__}: {exc}")
        keys = keys_of(tables)
        for (table, name), key in keys.items():
            info = self.infos.get(owners[table])
            if key != name and info is not None:
                others = sorted(f"[{t}]" for t, n in keys if n == name and t != table)
                why = ("a core setting" if name in FIELDS or name in TABLE_OF
                       else f"also {', '.join(others)}'s")
                info.notes.append(f"option `{name}` of [{table}] is --{key.replace('_', '-')}, "
                                  f"KERNELOPT_{key.upper()}, -o {key}= (`{name}` is {why})")
        self._tables = tables
        return tables

    def run_options(self, taken: set[str]) -> list[Any]:
        """The option tables' flags for ``run`` (see ``kernelopt_option_tables``), by table
        name so that neither their order nor a shared flag's help depends on load order; a
        flag a command already has (``--model`` of a plugin command) is left to the command.
        A shared option is one flag whose help gives each table's line."""
        from kernelopt_core.options import click_options, table_name
        from kernelopt_core.settings import keys_of

        options: dict[str, Any] = {}
        tables = sorted(self.option_tables(), key=table_name)
        keys = keys_of(tables)
        for cls in tables:
            for option in click_options(cls, keys):
                first = options.get(option.name)
                if first is not None:  # the same option of another table
                    line, _sep, default = (option.help or "").rpartition(" [")
                    if line and line not in (first.help or ""):
                        first.help = f"{(first.help or '').rpartition(' [')[0]} {line} [{default}"
                    continue
                if option.name in taken or set(option.opts) & taken:
                    continue
                taken |= set(option.opts) | {option.name}
                options[option.name] = option
        return list(options.values())

    def _blame(self, plugin: str, error: str,
               hint: str = "fix or disable the plugin (KERNELOPT_DISABLE_PLUGINS=NAME)") -> None:
        info = self.infos.get(plugin)
        if info is not None:
            info.error = error if info.error is None else f"{info.error}; {error}"
            info.hint = hint
        if self.strict:
            raise PluginError(f"{self._who(plugin)} ({plugin!r}): {error}", hint=hint)

    def add_commands(self, cli: Any, on_error: Callable[[str, BaseException], None]) -> None:
        for impl in self.pm.hook.kernelopt_register_commands.get_hookimpls():
            try:
                impl.function(cli=cli)
            except (Exception, SystemExit) as exc:
                on_error(impl.plugin_name, exc)


def _shared(a: list[str], b: list[str]) -> int:
    """How many leading dotted parts two module names share."""
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count


def _version(dist: str) -> str:
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:
        from kernelopt_core import __version__

        return __version__
