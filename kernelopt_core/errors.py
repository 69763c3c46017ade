"""Errors that map to the exit codes (docs/architecture.md, Contracts)."""

from __future__ import annotations

EXIT_OPTIMIZED = 0
EXIT_NO_WIN = 1
EXIT_USAGE = 2
EXIT_PREREQUISITE = 3
EXIT_INTERNAL = 4
EXIT_INTERRUPTED = 130


class KerneloptError(Exception):
    """An error the user can act on: the message says what, where and how to fix it."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint

    def __str__(self) -> str:
        base = super().__str__()
        return f"{base}\n  fix: {self.hint}" if self.hint else base


class UsageError(KerneloptError):
    """Bad input: a flag, a config file, a path, a baseline that fails its own test (exit 2)."""

    exit_code = EXIT_USAGE


class PrerequisiteError(KerneloptError):
    """Something to install: a GPU, a compiler, a plugin package, a key (exit 3)."""

    exit_code = EXIT_PREREQUISITE


class PluginError(KerneloptError):
    """A third-party plugin broke its contract (a hook returned the wrong type, a plugin that
    fails to load under strict mode): names the plugin and its package (exit 3)."""

    exit_code = EXIT_PREREQUISITE


class BenchParseError(UsageError):
    """A bench command's output did not parse: names the command and the offending line."""


class BenchFailed(Exception):
    """A bench reading failed (exit status, a broken worker, a forged line): the candidate's
    failure, not the run's. Gates turn it into a failed gate."""


class PlannerError(Exception):
    """A planner could not produce a proposal (an LLM failed, replied nonsense too often).

    The candidate fails; the run goes on."""


class BudgetExhausted(PlannerError):
    """A planner budget (LLM calls, cost) is spent: the search stops, the run goes on."""
