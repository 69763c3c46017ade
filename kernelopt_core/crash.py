"""An exception nothing else handled: a third-party plugin's fault is named with its package
and version and exits 3 (the run stopped on something outside kernelopt); any other is
kernelopt's own bug, exit 4 (the exit codes: docs/architecture.md, Contracts)."""

from __future__ import annotations

import traceback

from kernelopt_core import ui
from kernelopt_core.errors import EXIT_INTERNAL, EXIT_PREREQUISITE
from kernelopt_core.plugins import PluginHost


def report_crash(exc: BaseException, host: PluginHost | None) -> int:
    """Print the traceback and whose fault it is; the exit code."""
    text = "".join(traceback.format_exception(exc))
    plugin = host.at_fault(exc) if host is not None else None
    if plugin is not None:
        ui.error(f"{text}{plugin.label} raised {type(exc).__name__}: {exc}", EXIT_PREREQUISITE,
                 "plugin")
        ui.note("a fault of that plugin, not of kernelopt: report it to its authors, or disable "
                f"it with KERNELOPT_DISABLE_PLUGINS={plugin.name}")
        return EXIT_PREREQUISITE
    ui.error(text, EXIT_INTERNAL)
    ui.note("this is a bug in kernelopt; please report it with the traceback above")
    return EXIT_INTERNAL
