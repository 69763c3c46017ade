"""What every command shares, below cli.py: the state root a ``--state-root`` flag names, the
command line a command runs in (``Shell``, reached through click's context) and the model
check's report."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import click

from kernelopt_core import model_check, model_view, ui
from kernelopt_core.hookspecs import Backend
from kernelopt_core.settings import Settings, load
from kernelopt_core.target import Target


def state_root(flag: Path | None) -> Path:
    """The state root a command's ``--state-root`` flag names, else the settings' own
    (``KERNELOPT_HOME``, the user config, ``./.kernelopt``)."""
    return load(None, {"state_root": flag}).state_root


@runtime_checkable
class Shell(Protocol):
    """The command line a command runs in (cli.KerneloptGroup, the root of its context): the
    plugin host and the run's resolution. A built-in command is loaded by the plugin host,
    so it asks its context for these instead of importing what imports the host."""

    def get_host(self) -> Any:
        """The plugin host (kernelopt_core.plugins.PluginHost) of this invocation."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """A command of the group, with the plugins' flags where it takes them."""

    def resolve_all(self, ctx: click.Context, path: Path, flags: dict[str, Any],
                    forced: dict[str, Any] | None = None
                    ) -> tuple[Any, Backend, list[Target], Settings]:
        """PATH and flags → (plugin host, backend, targets to run, settings)."""

    def resolve(self, ctx: click.Context, path: Path, flags: dict[str, Any]
                ) -> tuple[Any, Backend, Target, Settings]:
        """PATH and flags → (plugin host, backend, the one target, settings)."""


def shell(ctx: click.Context) -> Shell:
    root = ctx.find_root().command
    assert isinstance(root, Shell), f"{type(root).__name__} is not kernelopt's command line"
    return root


def host_of(ctx: click.Context) -> Any:
    """The plugin host of the invocation ``ctx`` belongs to."""
    return shell(ctx).get_host()


def check_model(backend: Any, finished: Sequence[Any], state_root: Path, out_dir: Path | None,
                ledger: Any = None) -> None:
    """The whole model, every winner in place (model_check.py), reported: campaign's."""
    if finished and out_dir is not None:
        show_model_check(model_check.run(backend, finished, state_root, out_dir, ledger,
                                         lambda: ui.note(
            f"model check: the whole model every way, {len(finished)} run(s)' winners in")))


def show_model_check(record: dict[str, Any] | None) -> None:
    if record is not None and record.get("error"):
        ui.note(f"model check failed ({record['seconds']} s): {record['error'][:600]}")
    elif record is not None:
        ui.table(*model_view.rows(record))
        ui.note(model_view.verdict_line(record))
