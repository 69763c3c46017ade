"""The ``dask`` campaign executor's hooks (executor.py holds the executor, task.py what runs on
a worker). Nothing here imports ``distributed``: the plugin loads with every kernelopt command.
"""

from __future__ import annotations

from kernelopt_core.api import hookimpl
from kernelopt_dask.executor import DaskExecutor
from kernelopt_dask.options import DaskOptions


@hookimpl
def kernelopt_register_executors() -> list[object]:
    return [DaskExecutor()]


@hookimpl
def kernelopt_option_tables() -> list[type]:
    return [DaskOptions]
