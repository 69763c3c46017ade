"""``[dask]``: where the campaign's jobs run."""

from __future__ import annotations

import attrs

from kernelopt_core.api import option, option_table


@option_table("dask")
@attrs.frozen
class DaskOptions:
    """``[dask]`` in kernelopt.toml or the user's config; flags of ``kernelopt run``."""

    scheduler: str = option(
        "local", "The dask executor's scheduler: local (a cluster on this host, one worker per "
        "GPU slot) or a `dask scheduler` address such as tcp://head:8786.")
    worker_wait_s: float = option(
        60.0, "Seconds the dask executor waits for the scheduler to answer and for a worker "
        "offering the GPU resource.", validator=attrs.validators.gt(0))
