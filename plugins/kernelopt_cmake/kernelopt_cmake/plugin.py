"""The kernelopt-cmake plugin's hooks, what the ``kernelopt`` entry point registers: the
``cmake`` backend (backend.py; the project's kernelopt.toml descriptor.py), ``kernelopt init``
(init.py) and the planner's strategies (prompts.py)."""

from __future__ import annotations

from typing import Any

from kernelopt_cmake.backend import CMakeBackend
from kernelopt_core.api import hookimpl


@hookimpl
def kernelopt_register_backends() -> list[object]:
    return [CMakeBackend()]


@hookimpl
def kernelopt_prompt_fragments(backend: str, role: str) -> list[str]:
    from kernelopt_cmake.prompts import STRATEGIES

    return [STRATEGIES] if backend == "cmake" and role == "planner" else []


@hookimpl
def kernelopt_register_commands(cli: Any) -> None:
    from kernelopt_cmake.init import init_command

    cli.add_command(init_command)  # `kernelopt init`: a kernelopt.toml found, not hand-written
