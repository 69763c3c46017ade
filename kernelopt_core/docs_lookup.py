"""Built-in doc lookup: grep local CUDA/HIP headers for a symbol; and ``kernelopt docs
SYMBOL``, the lookup the agents get (every plugin's ``kernelopt_doc_lookup``, these headers
among them) from the command line."""

from __future__ import annotations

import os
import re
from pathlib import Path

import click

from kernelopt_core.hookspecs import DocHit, hookimpl

MAX_HITS = 8


def header_dirs(language: str) -> list[Path]:
    roots: list[Path] = []
    if language in ("cuda", "cpp"):
        for var in ("CUDA_HOME", "CUDA_PATH"):
            if os.environ.get(var):
                roots.append(Path(os.environ[var]) / "include")
        roots.append(Path("/usr/local/cuda/include"))
    if language in ("hip", "cpp"):
        roots.append(Path(os.environ.get("ROCM_PATH", "/opt/rocm")) / "include")
    return [r for r in roots if r.is_dir()]


@hookimpl
def kernelopt_doc_lookup(symbol: str, language: str) -> list[DocHit]:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_:]*", symbol):
        return []
    word = re.compile(rf"\b{re.escape(symbol)}\b")
    hits: list[DocHit] = []
    for root in header_dirs(language):
        for path in sorted(root.rglob("*.h*")):
            try:
                lines = path.read_text(errors="replace").splitlines()
            except OSError:
                continue
            for number, line in enumerate(lines, 1):
                if word.search(line):
                    context = "\n".join(lines[max(0, number - 3) : number + 2])
                    hits.append(DocHit(str(path), number, context))
                    if len(hits) >= MAX_HITS:
                        return hits
    return hits


@click.command("docs")
@click.argument("symbol")
@click.option("--language", type=click.Choice(["cuda", "hip", "cpp"]), default="cpp",
              show_default=True, help="Whose headers: CUDA's, ROCm's, or both.")
@click.pass_context
def docs_command(ctx: click.Context, symbol: str, language: str) -> None:
    """Look SYMBOL up as the agents do: every doc-lookup plugin, and the local CUDA/ROCm
    headers ($CUDA_HOME, $CUDA_PATH, /usr/local/cuda, $ROCM_PATH, /opt/rocm)."""
    from kernelopt_core import ui
    from kernelopt_core.commands.common import host_of
    from kernelopt_core.errors import UsageError

    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_:]*", symbol):
        raise UsageError(f"{symbol!r} is not a C/C++ identifier",
                         hint="give one symbol, e.g. kernelopt docs __shfl_xor_sync")
    hits = host_of(ctx).doc_lookup(symbol, language)
    if not hits:
        looked = ", ".join(str(d) for d in header_dirs(language)) or "no header directory found"
        ui.note(f"nothing found for {symbol} ({language}; looked in: {looked})")
        ui.note("fix: install the toolkit's headers or point CUDA_HOME / ROCM_PATH at them")
        ctx.exit(1)
    for hit in hits:
        ui.echo(f"{hit.source}:{hit.line}")
        ui.echo("\n".join("    " + line for line in hit.text.splitlines()))


@hookimpl
def kernelopt_register_commands(cli: click.Group) -> None:
    cli.add_command(docs_command)
