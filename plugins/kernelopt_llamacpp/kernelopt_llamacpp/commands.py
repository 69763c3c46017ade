"""``kernelopt run-llamacpp``: ``kernelopt run REPO --backend llamacpp`` with the tree from
``--repo`` or ``$LLAMACPP_REPO``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelopt_core.api import repo_path, run_command
from kernelopt_llamacpp.targets import REPO_ENV


def register(cli: Any) -> None:
    import click

    def tree(flags: dict[str, Any]) -> Path:
        # usage first: the tree and the op (read from the source, no GPU needed) are checked
        # before nvcc and the GPU (discover), so a typo is never reported as a missing GPU
        return repo_path(flags, REPO_ENV, "llama.cpp tree")

    # [llamacpp]'s flags (--op, --case, ...) come with every loop command: --op may also be
    # `[llamacpp] op` or KERNELOPT_OP, and discover names the known ops when none is given
    options = [click.Option(["--repo"], help=f"The llama.cpp tree [${REPO_ENV} from the "
                            "environment or .env].")]
    cli.add_command(run_command(
        "run-llamacpp", forced={"backend": "llamacpp"}, resolve_path=tree, params=options,
        help="Optimize one ggml-cuda op of a llama.cpp tree (= run REPO --backend llamacpp "
             "--op OP)."))
