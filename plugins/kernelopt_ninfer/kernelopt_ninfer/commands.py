"""``kernelopt run-ninfer``: ``kernelopt run REPO --backend ninfer`` with the tree from
``--repo`` or ``$NINFER_REPO``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelopt_core.api import repo_path, run_command
from kernelopt_ninfer.targets import REPO_ENV


def register(cli: Any) -> None:
    import click

    def tree(flags: dict[str, Any]) -> Path:
        return repo_path(flags, REPO_ENV, "NInfer tree")

    # --op/--case land in [ninfer]'s ninfer_op/ninfer_case (options.py says why the prefix);
    # --device, --cuda-arch, --artifact, --editable, --context, --bench-args come with the table
    params = [click.Option(["--repo"], help=f"The NInfer tree [${REPO_ENV} from the environment "
                           "or .env]."),
              click.Option(["--op", "ninfer_op"], help="The NInfer op to optimize (e.g. rmsnorm)."),
              click.Option(["--case", "ninfer_case"], help="The bench case to time (its tag as "
                           "printed); the largest median when unset.")]
    cli.add_command(run_command(
        "run-ninfer", forced={"backend": "ninfer"}, resolve_path=tree, params=params,
        help="Optimize one op of an NInfer tree (= run REPO --backend ninfer --ninfer-op OP)."))
