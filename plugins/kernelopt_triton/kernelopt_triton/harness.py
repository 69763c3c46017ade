"""The child process behind the ``triton`` backend's check and bench commands.

    python -m kernelopt_triton.harness check FILE --seed N [--oracle ORIGINAL]
    python -m kernelopt_triton.harness bench FILE [--oracle ORIGINAL] [--iters N]

FILE is a kernel file (docs/triton.md). ``--oracle`` names the user's original file: its
``make_args``, ``reference``, ``TOLERANCE``, ``OUTPUTS``, ``SHAPE`` and ``BYTES`` are the
contract, so a candidate that edits them changes nothing but its own ``launch`` and kernels.

Exit codes: 0 correct (check) / measured (bench), 1 wrong output, 2 the file breaks the
convention, 3 torch or triton is missing. Without a usable GPU the kernels run under Triton's
interpreter (``TRITON_INTERPRET=1``, set before triton is imported) on CPU tensors, and the
bench line says ``"interpreted": true``.

This module is the command line; the work is in its siblings, all imported here at the top,
before any kernel file loads, so each binds the clock, statistics and output functions it reads
while they are still the standard library's: harness_device (torch, the GPU or the
interpreter), harness_inputs (make_args, poisoned outputs), harness_check (the three launches
of a seed, Mismatch), harness_session (Session: load, check, bench, compile, sweep) and
harness_serve (the bench worker).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from kernelopt_triton.harness_check import EXIT_CONVENTION, EXIT_WRONG, Mismatch
from kernelopt_triton.harness_device import EXIT_PREREQUISITE
from kernelopt_triton.harness_serve import serve_requests
from kernelopt_triton.harness_session import Session
from kernelopt_triton.loading import ConventionError

__all__ = ["EXIT_CONVENTION", "EXIT_PREREQUISITE", "EXIT_WRONG", "ConventionError", "Mismatch",
           "Session", "main", "run_bench", "run_check", "run_checks"]

# bound at import, before any kernel file: a candidate that rebinds json or os does not change
# the line the bench mode prints (code that reaches into this process's objects, through gc or
# frames, is what the policy gate bans)
_dumps, _write, _exit = json.dumps, os.write, os._exit


def run_check(path: Path, seed: int, oracle: Path | None = None) -> str:
    """Check one kernel file on ``seed``; returns a summary, raises Mismatch/ConventionError."""
    return run_checks(path, (seed,), oracle)[0]


def run_checks(path: Path, seeds: tuple[int, ...], oracle: Path | None = None) -> list[str]:
    """Check one kernel file on every seed in one process; a summary per seed."""
    return Session(path, oracle, seeds, bench_seeds=None).check()


def run_bench(path: Path, oracle: Path | None = None, iters: int | None = None,
              warmup: int | None = None) -> dict[str, Any]:
    """One bench reading in a fresh process (``bench`` mode)."""
    return Session(path, oracle, ()).bench(iters=iters, min_launches=warmup)


def _seed_list(text: str) -> tuple[int, ...]:
    try:
        seeds = tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        seeds = ()
    if not seeds:
        raise SystemExit(f"--seeds {text!r}: give comma-separated integers, e.g. 1,2,3")
    return seeds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernelopt_triton.harness")
    sub = parser.add_subparsers(dest="mode", required=True)
    check = sub.add_parser("check", help="exit 0 when the kernel is correct on every seed")
    check.add_argument("file", type=Path)
    seeds = check.add_mutually_exclusive_group(required=True)
    seeds.add_argument("--seed", type=int)
    seeds.add_argument("--seeds", help="comma-separated: every seed in this one process")
    check.add_argument("--oracle", type=Path, help="the original file: make_args/reference/...")
    bench = sub.add_parser("bench", help="print one kernelopt JSON line")
    bench.add_argument("file", type=Path)
    bench.add_argument("--oracle", type=Path)
    bench.add_argument("--iters", type=int, default=None,
                       help="timed launches [about 5 ms of kernel time, 20-50; 4 interpreted]")
    bench.add_argument("--warmup", type=int, default=None)
    serve = sub.add_parser("serve", help="a bench worker: serve load/check/bench/compile/sweep requests "
                           "on the pipes kernelopt passes (KERNELOPT_WORKER_FDS)")
    serve.add_argument("file", type=Path)
    serve.add_argument("--oracle", type=Path)
    args = parser.parse_args(argv)
    if args.mode == "serve":
        return serve_requests(args.file, args.oracle)
    try:
        if args.mode == "check":
            wanted = (args.seed,) if args.seed is not None else _seed_list(args.seeds)
            for line in run_checks(args.file, wanted, args.oracle):
                print(line, flush=True)
            return 0
        line = _dumps(run_bench(args.file, args.oracle, args.iters, args.warmup))
    except Mismatch as exc:
        print(f"MISMATCH: {exc}", file=sys.stderr, flush=True)
        return EXIT_WRONG
    except ConventionError as exc:
        print(f"kernel file: {exc}", file=sys.stderr, flush=True)
        return EXIT_CONVENTION
    except SystemExit as exc:
        if exc.code not in (0, None):  # a prerequisite missing (3): the harness's own exit
            raise
        # the kernel file left the process "successfully": no result is never a pass
        print(f"kernel file: exited during {args.mode} (SystemExit({exc.code!r}))",
              file=sys.stderr, flush=True)
        return 4
    sys.stdout.flush()
    # Ours is the last line: leave before any atexit handler of the kernel file can print.
    _write(1, (line + "\n").encode())
    _exit(0)


if __name__ == "__main__":
    raise SystemExit(main())
