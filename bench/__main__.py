"""One entry point for the benchmark suites, named by what they measure.

    python -m bench list                 every suite, one line on what it measures, the script
                                         it runs and what that uses; then the tools
    python -m bench run NAME [ARG ...]   run one (ARGs go to its script: parts, models, ...)
    python -m bench pack DIR [DIR ...]   a results folder made light to carry: its raw files
                                         into DIR/raw.tar.xz (bench/pack.py)
    python -m bench pack --check [DIR ...]   what breaks that rule (default: bench/results/*)

Each run writes a results folder (``$OUT``, default ``bench/results/out/<UTC date>-<NAME>``)
holding provenance.json (date, GPU, driver, commit, dirty or not, the command) beside what the
suite writes and console.log. From the repository root; the GPU suites on the GPU machine,
with wheels of this repository's packages in .whl/ (../shared/tools/h200-wheels builds them).
A published number's README under bench/results/ names the commit and command that made it.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from bench import catalog, pack
from bench.catalog import Suite

ROOT = Path(__file__).resolve().parents[1]


def _out(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True,
                              timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def provenance(suite: Suite, argv: list[str]) -> dict[str, object]:
    smi = _out(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
    gpus = [line.split(", ") for line in smi.splitlines() if line]
    return {
        "suite": suite.name,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "gpu": [g[0] for g in gpus] or None,
        "driver": gpus[0][1] if gpus and len(gpus[0]) > 1 else None,
        "commit": _out(["git", "rev-parse", "HEAD"]) or None,
        "dirty": bool(_out(["git", "status", "--porcelain", "--untracked-files=no"])),
        "command": shlex.join(["python", "-m", "bench", "run", suite.name, *argv]),
        "script": shlex.join([*suite.command, *argv]),
        "host": os.uname().nodename,
    }


def run(suite: Suite, argv: list[str]) -> int:
    day = time.strftime("%Y-%m-%d", time.gmtime())
    out = Path(os.environ.get("OUT") or ROOT / "bench" / "results" / "out" / f"{day}-{suite.name}")
    out.mkdir(parents=True, exist_ok=True)
    (out / "provenance.json").write_text(json.dumps(provenance(suite, argv), indent=2) + "\n")
    with open(out / "console.log", "wb") as log:
        proc = subprocess.Popen([*suite.command, *argv], cwd=ROOT, env={**os.environ,
                                "OUT": str(out)}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert proc.stdout is not None
        for chunk in iter(lambda: proc.stdout.read1(4096), b""):  # type: ignore[union-attr]
            sys.stdout.buffer.write(chunk)
            sys.stdout.flush()
            log.write(chunk)
        code = proc.wait()
    print(f"results: {out}")
    return code


def find(name: str) -> Suite:
    suite = catalog.find(name)
    if suite is None:
        raise SystemExit(f"no suite {name!r}; `python -m bench list` names them")
    return suite


def pack_folders(args: list[str]) -> int:
    check = args[:1] == ["--check"]
    folders = [Path(a) for a in args[int(check):]] or pack.results_folders(ROOT / "bench" / "results")
    if check:
        found = [line for folder in folders for line in pack.problems(folder)]
        print("\n".join(found) or f"{len(folders)} folder(s) keep the rule")
        return 1 if found else 0
    for folder in folders:
        done = pack.pack(folder)
        print(f"{folder}: {done.added} file(s) packed, {done.members} in {pack.ARCHIVE} "
              f"({done.archive_bytes} bytes)")
    return 0


def main(args: list[str]) -> int:
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    if args[0] == "list":
        print("\n".join(catalog.listing()))
        return 0
    if args[0] == "run" and len(args) >= 2:
        return run(find(args[1]), args[2:])
    if args[0] == "pack" and len(args) >= 2:
        return pack_folders(args[1:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
