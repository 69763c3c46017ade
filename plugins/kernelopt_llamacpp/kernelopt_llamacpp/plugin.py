"""The kernelopt-llamacpp plugin's hooks, what the ``kernelopt`` entry point registers: the
``llamacpp`` backend (backend.py, its targets targets.py), the ``[llamacpp]`` option table
(options.py), ``kernelopt run-llamacpp`` (commands.py) and the planner's strategies
(prompts.py). docs/llamacpp.md is the user's page."""

from __future__ import annotations

from typing import Any

from kernelopt_core.api import hookimpl
from kernelopt_llamacpp.backend import LlamaCppBackend
from kernelopt_llamacpp.options import LlamaCppOptions


@hookimpl
def kernelopt_register_backends() -> list[object]:
    return [LlamaCppBackend()]


@hookimpl
def kernelopt_option_tables() -> list[type]:
    return [LlamaCppOptions]


@hookimpl
def kernelopt_register_commands(cli: Any) -> None:
    from kernelopt_llamacpp import commands

    commands.register(cli)


@hookimpl
def kernelopt_prompt_fragments(backend: str, role: str) -> list[str]:
    from kernelopt_llamacpp.prompts import STRATEGIES

    return [STRATEGIES] if backend == "llamacpp" and role == "planner" else []
