"""The engine gate's command: greedy outputs and tokens/s of a model through the tree's tools.

``python -m kernelopt_llamacpp.engine --build DIR --model GGUF [--tokens N] [--prompt TEXT]
[--flash-attn on|off]``

1. ``llama-completion -m GGUF -p PROMPT -n N --temp 0 --seed 1 -no-cnv --no-display-prompt
   --ignore-eos -ngl 99 -fa off``: greedy decoding (temperature 0, fixed seed, exactly N
   tokens). The generated text goes to ``$KERNELOPT_ENGINE_OUT``; with
   ``$KERNELOPT_ENGINE_REFERENCE`` (the baseline's file) set, ``match`` says whether they are
   identical.
2. ``llama-bench -m GGUF -p 64 -n 32 -ngl 99 -fa off -r 3 -o jsonl``: tokens/s of generation
   (the ``n_gen`` row's ``avg_ts``) and of prompt processing.

Flash attention is off unless the op being optimized is FLASH_ATTN_EXT: with it on (recent
llama.cpp's default where supported) attention never reaches SOFT_MAX, and the gate would time
and compare a model that does not run the edited kernel.

Prints one JSON line (the core's engine contract): ``{"time_ms": ms per generated token,
"match": true|false|null, "detail": "...", "tokens_per_s": ..., "prompt_tokens_per_s": ...}``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from kernelopt_core.api import ENGINE_OUT_ENV, ENGINE_REFERENCE_ENV, Command, ProcessResult, run_process

PROMPT = "The quick brown fox"


def _tool(build: Path, name: str) -> str:
    path = build / "bin" / name
    if not path.is_file():
        raise SystemExit(f"kernelopt-llamacpp engine: {path} is missing (build with the engine gate on)")
    return str(path)


def _run(argv: list[str]) -> ProcessResult:
    proc = run_process(Command(tuple(argv), Path.cwd(), timeout_s=600))
    if not proc.ok:
        raise SystemExit(f"{proc.describe()}:\n{proc.stderr[-2000:]}")
    return proc


def generate(build: Path, model: str, tokens: int, prompt: str, flash_attn: str) -> str:
    argv = [_tool(build, "llama-completion"), "-m", model, "-p", prompt, "-n", str(tokens),
            "--temp", "0", "--seed", "1", "-no-cnv", "--no-display-prompt", "--ignore-eos",
            "-ngl", "99", "-fa", flash_attn, "--no-perf"]
    proc = _run(argv)
    return proc.stdout


def bench(build: Path, model: str, flash_attn: str) -> dict[str, float]:
    argv = [_tool(build, "llama-bench"), "-m", model, "-p", "64", "-n", "32", "-ngl", "99",
            "-fa", flash_attn, "-r", "3", "-o", "jsonl"]
    proc = _run(argv)
    out: dict[str, float] = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            key = "tokens_per_s" if row.get("n_gen") else "prompt_tokens_per_s"
            out[key] = float(row["avg_ts"])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernelopt_llamacpp.engine")
    parser.add_argument("--build", required=True, type=Path)
    parser.add_argument("--model", required=True)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--prompt", default=PROMPT)
    parser.add_argument("--flash-attn", choices=("on", "off"), default="off",
                        help="off (default) routes attention through SOFT_MAX, not fattn")
    a = parser.parse_args(argv)
    t0 = time.perf_counter()
    text = generate(a.build, a.model, a.tokens, a.prompt, a.flash_attn)
    gen_s = time.perf_counter() - t0
    out = os.environ.get(ENGINE_OUT_ENV)
    if out:
        Path(out).write_text(text)
    reference = os.environ.get(ENGINE_REFERENCE_ENV)
    match = None
    detail = f"{a.tokens} greedy tokens"
    if reference:
        want = Path(reference).read_text()
        match = want == text
        detail += " identical to the baseline's" if match else f" differ: {want[:80]!r} vs {text[:80]!r}"
    rates = bench(a.build, a.model, a.flash_attn)
    tps = rates.get("tokens_per_s") or a.tokens / gen_s
    print(json.dumps({"time_ms": 1000.0 / tps, "match": match, "detail": detail,
                      "tokens_per_s": tps, **{k: v for k, v in rates.items() if k != "tokens_per_s"}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
