"""The engine gate's command: the whole engine over the user's artifact, through ``ninfer_bench``.

``python -m kernelopt_ninfer.engine --build DIR --artifact PATH.ninfer``

runs ``ninfer_bench --weights PATH -p 512 -n 128 -r 5 --warmup 1 -o json`` (NInfer's own
end-to-end benchmark: a 512-token prefill and 128 generated tokens, five measured repetitions
after one warm-up) and prints the core's engine line::

    {"time_ms": ..., "match": true|false|null, "detail": "...", "tokens_per_s": ..., ...}

``time_ms``: the sum of the tests' mean total seconds (prefill + decode), in ms. What is
compared: ninfer_bench reports no generated text, so the outputs written to
``$KERNELOPT_ENGINE_OUT`` are everything it reports that is not a time, a rate or a memory
figure (the tests run, their token counts, each repetition's generated-token count, speculative
acceptance counts); ``match`` says whether the candidate's equal the baseline's
(``$KERNELOPT_ENGINE_REFERENCE``). That proves the engine runs the same work to completion with
the candidate, not that its tokens are the same; the op's numerics rest on its own test, and
``detail`` says so.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from kernelopt_core.api import ENGINE_OUT_ENV, ENGINE_REFERENCE_ENV, Command, run_process
from kernelopt_ninfer.bench_run import find_binary

ARGS = ("-p", "512", "-n", "128", "-r", "5", "--warmup", "1", "-o", "json")
VOLATILE = re.compile(r"(_s|_seconds|_mean|_stddev|_bytes|timings|_rate|_length)$")
TIMEOUT_S = 3600.0


def report_of(stdout: str) -> dict[str, Any] | None:
    """ninfer_bench's JSON document (multi-line) in its stdout, or None."""
    decoder = json.JSONDecoder()
    for match in re.finditer(r"^\{", stdout, re.M):
        try:
            obj, _end = decoder.raw_decode(stdout[match.start():])
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("tests"), list):
            return obj
    return None


def outputs(report: dict[str, Any]) -> Any:
    """What the run did, without its times, rates and memory figures."""
    def keep(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: keep(v) for k, v in sorted(value.items()) if not VOLATILE.search(k)}
        if isinstance(value, list):
            return [keep(v) for v in value]
        return value
    return keep(report["tests"])


def timing(report: dict[str, Any]) -> tuple[float, dict[str, float]]:
    """(whole-program ms, the rates worth keeping) from the tests' means."""
    total_s = 0.0
    rates: dict[str, float] = {}
    for test in report["tests"]:
        total_s += float(test.get("total_seconds_mean") or 0.0)
        if test.get("decode_output_tok_s_mean"):
            rates["tokens_per_s"] = float(test["decode_output_tok_s_mean"])
        if test.get("prefill_tok_s_mean"):
            rates["prompt_tokens_per_s"] = float(test["prefill_tok_s_mean"])
    return 1000.0 * total_s, rates


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernelopt_ninfer.engine")
    parser.add_argument("--build", required=True, type=Path)
    parser.add_argument("--artifact", required=True)
    a = parser.parse_args(argv)
    binary = find_binary(a.build, "ninfer_bench")
    if binary is None:
        print(f"kernelopt-ninfer engine: ninfer_bench is not in {a.build}", file=sys.stderr)
        return 1
    result = run_process(Command((str(binary), "--weights", a.artifact, *ARGS), binary.parent,
                                 timeout_s=TIMEOUT_S))
    sys.stderr.write(result.stdout + result.stderr)  # logged; only our line below is parsed
    report = report_of(result.stdout)
    if not result.ok or report is None:
        print(f"kernelopt-ninfer engine: {result.describe()}"
              + ("" if report else ": no JSON report with `tests`"), file=sys.stderr)
        return 1
    ms, rates = timing(report)
    if ms <= 0:
        print("kernelopt-ninfer engine: the report has no total_seconds_mean", file=sys.stderr)
        return 1
    mine = outputs(report)
    out = os.environ.get(ENGINE_OUT_ENV)
    if out:
        Path(out).write_text(json.dumps(mine, indent=1, sort_keys=True))
    reference = os.environ.get(ENGINE_REFERENCE_ENV)
    match = None
    detail = ("ninfer_bench -p 512 -n 128: tests, token counts and repetitions compared "
              "(it reports no generated text; the op's numerics rest on its own test)")
    if reference:
        match = json.loads(Path(reference).read_text()) == mine
        detail = ("same " if match else "DIFFERENT ") + detail[len("ninfer_bench -p 512 -n 128: "):]
    print(json.dumps({"time_ms": ms, "match": match, "detail": detail, **rates}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
