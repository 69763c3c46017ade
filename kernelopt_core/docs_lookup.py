"""Built-in doc lookup: grep local CUDA/HIP headers for a symbol."""

from __future__ import annotations

import os
import re
from pathlib import Path

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
