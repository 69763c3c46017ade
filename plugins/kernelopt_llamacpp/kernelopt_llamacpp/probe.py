"""The compile probe (kernelopt_core/knob_probe.py): each knob value's translation units
compiled alone, ``python -m kernelopt_llamacpp.probe --build B --src S --dir D --tu REL ...``.

For every variant in ``D/variants.json`` (its edited files under ``D/<id>/``), each of the op's
``.cu`` files is compiled with its own command from ``B/compile_commands.json`` (CMake's
export): the source read from the variant's copy (the original copied beside the edited
files when the variant did not edit it), so a quoted include of an edited header finds the
edited one first and every other header is found in the original directory (an ``-I`` added
after the command's own); the object and dependency outputs go under ``D``, never into the
build. nvcc stops at a static_assert in a second or two; a whole candidate build of the tree
takes minutes. Prints ``{"kernelopt_probe": 1, "results": {id: {"ok", "error"}}}``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kernelopt_core.api import Command, run_process

_OUTPUT_FLAGS = {"-o", "-MF", "-MT", "-MQ"}  # each takes the next argument
_DEPENDENCY_FLAGS = {"-MD", "-MMD"}


def compile_argv(entry: dict[str, Any], source: Path, obj: Path) -> list[str]:
    """``entry``'s compiler command, reading ``source`` and writing only ``obj``."""
    args = entry.get("arguments") or shlex.split(entry["command"])
    original = Path(entry["directory"], entry["file"]).resolve()
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg in _OUTPUT_FLAGS:
            skip = True
            continue
        if arg in _DEPENDENCY_FLAGS:
            continue
        looks_like_source = not arg.startswith("-") and arg.endswith(original.name)
        if looks_like_source and Path(entry["directory"], arg).resolve() == original:
            arg = str(source)
        out.append(arg)
    return [*out, f"-I{original.parent}", "-o", str(obj)]


def probe(build: Path, src: Path, probe_dir: Path, tus: list[str], jobs: int) -> dict[str, Any]:
    database = json.loads((build / "compile_commands.json").read_text())
    entries = {Path(e["directory"], e["file"]).resolve(): e for e in database}
    variants = json.loads((probe_dir / "variants.json").read_text())
    missing = [tu for tu in tus if (src / tu).resolve() not in entries]
    if missing:
        raise SystemExit(f"probe: no compile command for {', '.join(missing)} in "
                         f"{build / 'compile_commands.json'}")
    work = []
    for variant in variants:
        root = probe_dir / variant["id"]
        for tu in tus:
            copy = root / tu
            if not copy.exists():
                copy.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src / tu, copy)
            entry = entries[(src / tu).resolve()]
            argv = compile_argv(entry, copy, root / (tu + ".o"))
            work.append((variant["id"], tu, Command(tuple(argv), Path(entry["directory"]),
                                                     timeout_s=600, label=f"probe {tu}")))

    def run(item: tuple[str, str, Command]) -> tuple[str, str, bool, str]:
        vid, tu, command = item
        result = run_process(command)
        errors = [line for line in result.tail(4000).splitlines() if "error" in line.lower()]
        return vid, tu, result.ok, (errors[0] if errors else result.tail(300)).strip()

    results: dict[str, dict[str, Any]] = {v["id"]: {"ok": True} for v in variants}
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for vid, tu, ok, error in pool.map(run, work):
            if not ok and results[vid]["ok"]:
                results[vid] = {"ok": False, "error": f"{tu}: {error}"[:500]}
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernelopt_llamacpp.probe")
    parser.add_argument("--build", type=Path, required=True)
    parser.add_argument("--src", type=Path, required=True)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--tu", action="append", default=[], help="an op .cu, relative to --src")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    a = parser.parse_args(argv)
    results = probe(a.build, a.src, a.dir, a.tu, a.jobs)
    print(json.dumps({"kernelopt_probe": 1, "results": results}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
