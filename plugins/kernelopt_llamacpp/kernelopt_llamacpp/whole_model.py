"""The model check of a llama.cpp campaign (``kernelopt campaign TREE --backend llamacpp --top K``
or ``kernelopt run … --top K``): the model as the tree builds it, and with every op's winner in
place at once, the core's model-check contract (kernelopt_core/model_check.py).

``python -m kernelopt_llamacpp.whole_model --src TREE --model GGUF --out DIR --arch ARCH
[--winner DIR ...] [--rounds N] [--flash-attn on|off]``

1. Two copies of the tree under DIR (``upstream/``, ``kernelopt/``: the second with each winner
   folder's files laid over it), each built as the op runs' engine builds are (their configure
   arguments with the tools on) in the layout of their workspaces (``base-src``, ``base-build``),
   so that ccache, where the build uses it, serves the ggml objects the runs compiled (and the
   tools' objects a ``kernelopt profile`` of the model compiled); the winners' files compile
   anew.
2. Greedy tokens from both (engine.py's ``llama-completion``, temperature 0): identical or not.
3. ``llama-bench -p 512 -n 128 -r 5`` on both, ``--rounds`` times, interleaved (ABBA): tokens/s of
   the prompt (prefill) and of generation (decode), the medians of every sample, each with its
   spread (IQR over the median); the workload's spread is the IQR of the rounds' times.

Prints one line: ``{"kernelopt_model": 1, "modes": {"llama.cpp": {...}, "llama.cpp + kernelopt":
{...}}, "baseline": ..., "kernelopt": ..., "detail": ...}``; a mode's ``ms`` is the workload's
time at the median rates (512 prompt tokens, then 128 generated), ``match`` whether its tokens
equal upstream's; or ``{"kernelopt_model": 1, "error": ...}``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

from kernelopt_core.api import cmake_commands, run_process

UPSTREAM, OURS = "llama.cpp", "llama.cpp + kernelopt"
PROMPT, GENERATED = 512, 128


def copy_tree(src: Path, dest: Path, winners: list[Path]) -> list[str]:
    """``src`` copied to ``dest`` without its top-level build folders, .git, state roots, the
    folder ``dest`` is in (when inside ``src``) and models (``*.gguf``: the check reads its own
    by path), then each winner folder's files over it; the files laid over, relative paths."""
    own = {dest.resolve()} | set(dest.resolve().parents)

    def skip(folder: str, names: list[str]) -> set[str]:
        out = {n for n in names if n.endswith(".gguf") or (Path(folder) / n).resolve() in own}
        if Path(folder) == src:
            out |= {n for n in names if n.startswith(("build", ".git", ".kernelopt"))}
        return out

    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(src, dest, ignore=skip, symlinks=True)
    laid: list[str] = []
    for winner in winners:
        for path in sorted(p for p in winner.rglob("*") if p.is_file()):
            rel = path.relative_to(winner).as_posix()
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest / rel)
            laid.append(rel)
    return laid


def build(src: Path, build_dir: Path, arch: str, flash_attn: bool, log: Path) -> str | None:
    """The engine tools built as an op run's engine build; None, or why it failed."""
    from kernelopt_llamacpp.backend import ENGINE_TOOLS, cmake_args

    for command in cmake_commands(src, src, build_dir, cmake_args(arch, True, flash_attn),
                                  targets=list(ENGINE_TOOLS)):
        result = run_process(command, log.with_name(f"{log.stem}-{command.label}.log"))
        if not result.ok:
            return f"{src.parent.name}: {command.label} failed: {result.describe()}: {result.tail(600)}"
    return None


def rates(stdout: str) -> dict[str, list[float]]:
    """llama-bench's JSON lines: every sample's tokens/s of the prompt and of generation."""
    out: dict[str, list[float]] = {"prefill": [], "decode": []}
    for line in stdout.splitlines():
        if not line.startswith("{"):
            continue
        row = json.loads(line)
        samples = [float(s) for s in row.get("samples_ts") or [row["avg_ts"]]]
        out["decode" if row.get("n_gen") else "prefill"] += samples
    return out


def iqr_pct(values: list[float]) -> float:
    """The interquartile range over the median, in %: the report's "spread (IQR)"."""
    if len(values) < 2:
        return 0.0
    q = statistics.quantiles(values, n=4, method="inclusive")  # within the samples' range
    return round(100.0 * (q[2] - q[0]) / statistics.median(values), 2)


def mode(samples: dict[str, list[float]], rounds: list[float], match: bool) -> dict[str, Any]:
    """One build's numbers: the workload's ms and its spread over the rounds, and each phase's
    median tokens/s with its spread over every sample (a phase's change is read against it)."""
    prefill, decode = statistics.median(samples["prefill"]), statistics.median(samples["decode"])
    return {"ms": workload_ms(samples), "spread_pct": iqr_pct(rounds), "match": match,
            "windows": len(rounds), "prefill_tokens_per_s": round(prefill, 1),
            "prefill_spread_pct": iqr_pct(samples["prefill"]),
            "prefill_samples": len(samples["prefill"]),
            "decode_tokens_per_s": round(decode, 2),
            "decode_spread_pct": iqr_pct(samples["decode"]),
            "decode_samples": len(samples["decode"])}


def workload_ms(found: dict[str, list[float]]) -> float:
    return 1000.0 * (PROMPT / statistics.median(found["prefill"])
                     + GENERATED / statistics.median(found["decode"]))


def measure(builds: dict[str, Path], model: str, rounds: int, flash_attn: str) -> dict[str, Any]:
    from kernelopt_llamacpp import engine

    tokens = {label: engine.generate(b, model, 32, engine.PROMPT, flash_attn)
              for label, b in builds.items()}
    samples: dict[str, dict[str, list[float]]] = {k: {"prefill": [], "decode": []} for k in builds}
    per_round: dict[str, list[float]] = {k: [] for k in builds}
    order = list(builds)
    for r in range(rounds):
        for label in order if r % 2 == 0 else order[::-1]:  # ABBA: drift hits both alike
            argv = [engine._tool(builds[label], "llama-bench"), "-m", model, "-p", str(PROMPT),
                    "-n", str(GENERATED), "-r", "5", "-ngl", "99", "-fa", flash_attn, "-o", "jsonl"]
            found = rates(engine._run(argv).stdout)
            if not found["prefill"] or not found["decode"]:
                raise SystemExit(f"llama-bench printed no rates for {label}")
            per_round[label].append(workload_ms(found))
            for key in found:
                samples[label][key] += found[key]
    upstream = tokens[UPSTREAM]
    modes = {label: mode(samples[label], per_round[label], tokens[label] == upstream)
             for label in builds}
    detail = "; ".join(f"{label}: prefill {m['prefill_tokens_per_s']} t/s "
                       f"(IQR {m['prefill_spread_pct']} %), decode {m['decode_tokens_per_s']} "
                       f"t/s (IQR {m['decode_spread_pct']} %)" for label, m in modes.items())
    same = all(m["match"] for m in modes.values())
    return {"kernelopt_model": 1, "modes": modes, "baseline": UPSTREAM,
            "kernelopt": OURS if OURS in modes else UPSTREAM,
            "detail": f"{detail}; 32 greedy tokens {'identical' if same else 'DIFFER'}; "
                      f"{rounds} rounds of llama-bench -p {PROMPT} -n {GENERATED} -r 5"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernelopt_llamacpp.whole_model")
    parser.add_argument("--src", required=True, type=Path)
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--arch", default="native")
    parser.add_argument("--winner", action="append", default=[], type=Path)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--flash-attn", choices=("on", "off"), default="off")
    a = parser.parse_args(argv)
    builds: dict[str, Path] = {}
    sides = [(UPSTREAM, "upstream", [])] + ([(OURS, "kernelopt", a.winner)] if a.winner else [])
    try:
        for label, folder, winners in sides:
            src, build_dir = a.out / folder / "base-src", a.out / folder / "base-build"
            copy_tree(a.src.resolve(), src, winners)
            why = build(src, build_dir, a.arch, a.flash_attn == "on", a.out / f"build-{folder}.log")
            if why:
                print(json.dumps({"kernelopt_model": 1, "error": why}))
                return 0
            builds[label] = build_dir
        print(json.dumps(measure(builds, a.model, a.rounds, a.flash_attn)))
    except SystemExit as exc:  # engine.py's failures: a tool missing or failing
        print(json.dumps({"kernelopt_model": 1, "error": str(exc)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
