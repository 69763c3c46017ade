"""The command line (click): the group that assembles the commands (kernelopt_core.commands;
the plugins' ones through ``kernelopt_register_commands``) and ``main``, the console script's
entry (exit codes, signals, a crash's report)."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any

import click

from kernelopt_core import __version__, ui
from kernelopt_core.commands import run, runs, setup
from kernelopt_core.crash import report_crash
from kernelopt_core.errors import EXIT_INTERRUPTED, KerneloptError
from kernelopt_core.plugins import PluginHost


class KerneloptGroup(click.Group):
    """Adds plugin commands lazily, so `kernelopt --help` builds the plugin host only once;
    the ``Shell`` (commands.common) that commands reach through their context."""

    host: PluginHost | None = None
    _commands_from: PluginHost | None = None

    def get_host(self) -> PluginHost:
        if self.host is None:
            self.host = PluginHost()
        if self._commands_from is not self.host:
            self._commands_from = self.host
            self.host.add_commands(
                self, lambda name, exc: ui.note(f"plugin {name!r} failed to add commands: {exc}")
            )
        return self.host

    def list_commands(self, ctx: click.Context) -> list[str]:
        self.get_host()
        return super().list_commands(ctx)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands or name in ("run", "gate-selftest"):
            self.get_host()
        command = super().get_command(ctx, name)
        if command is not None and self.host is not None and (
                name in ("run", "gate-selftest") or getattr(command, "plugin_flags", False)):
            self._add_plugin_options(command)
        return command

    def _add_plugin_options(self, command: click.Command) -> None:
        """Plugin flags (``kernelopt_option_tables``) go on ``run``, ``gate-selftest``, ``profile``,
        run_command's commands and ``campaign`` (which hands them to its jobs), once per plugin
        host (a new host, as in tests, replaces the previous host's flags)."""
        added: tuple[PluginHost, list[click.Parameter]] | None = getattr(command, "_plugin_options",
                                                                          None)
        if added is not None and added[0] is self.host:
            return
        assert self.host is not None
        if added is not None:
            command.params = [p for p in command.params if all(p is not q for q in added[1])]
        taken = {n for p in command.params for n in (*p.opts, *p.secondary_opts, p.name or "")}
        options = self.host.run_options(taken)
        command.params.extend(options)
        command._plugin_options = (self.host, options)  # type: ignore[attr-defined]

    def resolve_all(self, ctx: click.Context, path: Path, flags: dict[str, Any],
                    forced: dict[str, Any] | None = None) -> tuple[Any, ...]:
        return run.resolve_all(ctx, path, flags, forced)

    def resolve(self, ctx: click.Context, path: Path, flags: dict[str, Any]) -> tuple[Any, ...]:
        return run.resolve(ctx, path, flags)


@click.group(cls=KerneloptGroup)
@click.version_option(__version__, prog_name="kernelopt")
def cli() -> None:
    """kernelopt: make GPU kernels faster by search, with verdicts you can trust."""


for _command in (run.run, run.gate_selftest, runs.history_cmd, runs.report_cmd,
                 runs.resume_cmd, setup.plugins, setup.setup):
    cli.add_command(_command)


def main() -> None:
    def terminate(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, terminate)
    # SIGINT interrupts cleanly even when the shell that started us ignored it (a background
    # job of a non-interactive shell inherits SIGINT ignored)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        code = cli.main(standalone_mode=False)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.ClickException as exc:
        exc.show()
        sys.exit(2)
    except click.exceptions.Abort:
        sys.exit(EXIT_INTERRUPTED)
    except KeyboardInterrupt:
        ui.error("interrupted", EXIT_INTERRUPTED)
        sys.exit(EXIT_INTERRUPTED)
    except KerneloptError as exc:
        ui.error(str(exc), exc.exit_code, type(exc).__name__)
        sys.exit(exc.exit_code)
    except Exception as exc:
        sys.exit(report_crash(exc, cli.host))
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":  # -m: run the module the commands import, whose classes they know
    import kernelopt_core.cli

    kernelopt_core.cli.main()
