"""The kernelopt-ninfer plugin's hooks, what the ``kernelopt`` entry point registers: the
``ninfer`` backend (backend.py, its target targets.py), the ``[ninfer]`` option table
(options.py), ``kernelopt run-ninfer`` (commands.py) and the planner's strategies
(prompts.py). docs/ninfer.md is the user's page."""

from __future__ import annotations

from typing import Any

from kernelopt_core.api import hookimpl
from kernelopt_ninfer.backend import NInferBackend
from kernelopt_ninfer.options import NInferOptions


@hookimpl
def kernelopt_register_backends() -> list[object]:
    return [NInferBackend()]


@hookimpl
def kernelopt_option_tables() -> list[type]:
    return [NInferOptions]


@hookimpl
def kernelopt_register_commands(cli: Any) -> None:
    from kernelopt_ninfer import commands

    commands.register(cli)


@hookimpl
def kernelopt_prompt_fragments(backend: str, role: str) -> list[str]:
    from kernelopt_ninfer.prompts import STRATEGIES

    return [STRATEGIES] if backend == "ninfer" and role == "planner" else []
