"""One entry point for the benchmark suites, named by what they measure.

    python -m bench list                 every suite, one line on what it measures
    python -m bench run NAME [ARG ...]   run one (ARGs go to its script: parts, models, ...)

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
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Suite:
    name: str
    what: str  # one line: what it measures
    command: tuple[str, ...]  # run from the repository root; the user's ARGs follow
    device: str = "H200"


SUITES = (
    Suite("measure", "the measurement engine: harness vs do_bench, GPU seconds per candidate, "
          "A/A and planted self-tests, bulk screening (PART: env dobench run hacks aa planted "
          "sweep)", ("bash", "bench/h200_measure.sh")),
    Suite("gate", "the CUDA example end to end, the CUDA reward-hack corpus, the gate self-test "
          "(A/A, planted ~3 %) beside the naive decision", ("bash", "bench/h200_gate.sh")),
    Suite("search", "the tuner's joint search against the exhaustive grid on the standalone "
          "Triton examples; GPU tests; after-idle warm-up (PART: gpu-tests warmup standalone)",
          ("bash", "bench/search.sh")),
    Suite("inductor", "torch.compile models: capture and ranking, the tuner per top kernel, the "
          "engine gate, Inductor's own max-autotune + coordinate descent side by side "
          "(ARGS: MODEL ...)", ("bash", "bench/h200_triton.sh")),
    Suite("engine-abba", "the engine gate's whole-model comparison alone: a kernel swapped for "
          "its original and its tuned file, ABBA (ARGS: MODEL KERNEL ORIGINAL TUNED)",
          ("bash", "bench/h200_engine_abba.sh")),
    Suite("triton-standalone", "the standalone Triton examples through `kernelopt run` "
          "(verdicts, times)", ("bash", "bench/h200_triton_standalone.sh")),
    Suite("models", "real torch.compile architectures (Llama-style prefill, GPT-2, ViT): probe, "
          "runs, the model four ways (python -m kernelopt_triton.model_compare), summary.json "
          "(bench/models_summary.py) (ARGS: probe|run [MODEL ...])",
          ("bash", "bench/h200_models.sh")),
    Suite("modes", "a model as its user compiles it (issue 53): the engine finding the captured "
          "kernel by its code (identity MODEL [TOP]), the swap under CUDA graphs, A/A and a "
          "slowed candidate (swapcheck MODEL MODE [TOP]), a model's largest GEMM template tuned "
          "(template MODEL MODE), a campaign on top of a compile mode and its model check in "
          "every mode (campaign MODEL MODE [TOP])", ("bash", "bench/h200_modes.sh")),
    Suite("modes-probe", "kernel names between processes and benchmark_kernel settings, and a "
          "model in every torch.compile mode in one process (ARGS: MODEL ...)",
          ("bash", "bench/h200_modes_probe.sh")),
    Suite("llamacpp", "kernelopt-llamacpp on a GPU: clean and incremental build, run-llamacpp "
          "SOFT_MAX / ROPE / NORM / RMS_NORM, the engine gate (PART: build testjobs detune softmax "
          "rope norm rmsnorm engine)", ("bash", "bench/h200_llamacpp.sh")),
    Suite("llamacpp-model", "what a Llama-7B-wide model dispatches in llama.cpp: llama-bench "
          "pp512/tg under ncu (every kernel), the graph's nodes (llama-eval-callback), each op's "
          "perf-case kernels (env PARTS=\"bench nodes tbo\")", ("bash", "bench/h200_llamacpp_model.sh")),
    Suite("llamacpp-perfcases", "perf cases written from test-backend-ops' own test structs, "
          "compiled into the real tool and run in perf and test mode on the CPU backend",
          ("bash", "bench/cpu_llamacpp_perfcases.sh"), device="CPU"),
    Suite("llamacpp-testjobs", "ROPE's correctness check, whole and split over processes, and "
          "test-backend-ops at several -j", ("bash", "bench/h200_rope_testjobs.sh")),
    Suite("llamacpp-cpu", "kernelopt-llamacpp's child programs against real llama.cpp tools on "
          "a CPU: op table, tbo wrapper, GGUF writer, engine command",
          ("bash", "bench/cpu_llamacpp_real.sh"), device="CPU"),
    Suite("llm-server", "the agents planner against a real OpenAI-compatible server (llama.cpp's "
          "llama-server, CPU): clear end, call accounting vs the server's log",
          ("bash", "bench/cpu_llama_server.sh"), device="CPU"),
    Suite("ninfer", "the NInfer fixture's CUDA path through `kernelopt run-ninfer`, and the "
          "refusal of an upstream-like tree", ("bash", "bench/h200_ninfer.sh")),
    Suite("profilers", "Nsight Compute through the product: raw captures, the ranking of a "
          "multi-kernel program, report.md's profile table, the engine profile and ncu's "
          "overhead (PART: capture product engine)", ("bash", "bench/profilers.sh")),
    Suite("graphsignal", "Graphsignal 1.x without its service: the watcher's payload and the "
          "profiler end to end", ("bash", "bench/graphsignal_record.sh")),
    Suite("campaign", "one campaign of the four standalone Triton examples on one GPU, on two, "
          "and through a Dask cluster (MODE: one two dask dask1)",
          ("bash", "bench/h200_campaign.sh"), device="H200 x2"),
)


def find(name: str) -> Suite:
    for suite in SUITES:
        if suite.name == name:
            return suite
    raise SystemExit(f"no suite {name!r}; `python -m bench list` names them")


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


def main(args: list[str]) -> int:
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    if args[0] == "list":
        width = max(len(s.name) for s in SUITES)
        for s in SUITES:
            print(f"{s.name:<{width}}  [{s.device}] {s.what}")
        return 0
    if args[0] == "run" and len(args) >= 2:
        return run(find(args[1]), args[2:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
