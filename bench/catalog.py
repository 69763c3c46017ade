"""Every script under bench/, by what it measures or does (``python -m bench list``).

A suite is named after the script it runs: suite ``NAME`` runs ``bench/NAME.sh`` with ``-``
for ``_``, after a ``h200_`` or ``cpu_`` prefix for where it runs. ``uses`` names the scripts
a suite's script calls or sources and the inputs it runs (bench/models/*.py are model files a
suite compiles, not scripts). A tool is a script run by hand, not by a suite.
tests/test_bench_catalog.py checks that every script is listed and each suite's uses are whole.
"""

from __future__ import annotations

from dataclasses import dataclass

SITE = "bench/h200_site.sh"  # sourced by the GPU scripts: the carried wheels installed once
LLAMACPP_TREE = "bench/h200_llamacpp_tree.sh"  # sourced: the vendored llama.cpp tree unpacked
LLAMACPP_SRC = "bench/llamacpp_src.sh"  # sourced by the CPU llama.cpp scripts: SRC
TARBALL = "bench/make_llamacpp_tarball.sh"  # the trimmed llama.cpp tree the GPU machine needs


@dataclass(frozen=True)
class Suite:
    name: str
    what: str  # one line: what it measures
    script: str  # run with bash from the repository root; the user's ARGs follow
    device: str = "H200"
    uses: tuple[str, ...] = ()

    @property
    def command(self) -> tuple[str, ...]:
        return ("bash", self.script)


@dataclass(frozen=True)
class Tool:
    script: str
    what: str


SUITES = (
    Suite("measure", "the measurement engine: harness vs do_bench, GPU seconds per candidate, "
          "A/A and planted self-tests, bulk screening (PART: env dobench run hacks aa planted "
          "sweep)", "bench/h200_measure.sh",
          uses=(SITE, "bench/level_probe.py", "bench/sweep_probe.py",
                "bench/triton_vs_do_bench.py")),
    Suite("gate", "the CUDA example end to end, the CUDA reward-hack corpus, the gate self-test "
          "(A/A, planted ~3 %) beside the naive decision", "bench/h200_gate.sh", uses=(SITE,)),
    Suite("search", "the tuner's joint search against the exhaustive grid on the standalone "
          "Triton examples; GPU tests; after-idle warm-up (PART: gpu-tests warmup standalone)",
          "bench/search.sh", uses=(SITE, "bench/h200_tuner_vs_grid.sh", "bench/tuner_vs_grid.py",
                                   "bench/warmup_settle.py")),
    Suite("inductor", "torch.compile models: capture and ranking, the tuner per top kernel, the "
          "engine gate, Inductor's own max-autotune + coordinate descent side by side "
          "(ARGS: MODEL ...)", "bench/h200_inductor.sh",
          uses=(SITE, "bench/h200_tuner_vs_grid.sh", "bench/inductor_kernel_times.py",
                "bench/triton_vs_do_bench.py")),
    Suite("engine-abba", "the engine gate's whole-model comparison alone: a kernel swapped for "
          "its original and its tuned file, ABBA (ARGS: MODEL KERNEL ORIGINAL TUNED)",
          "bench/h200_engine_abba.sh"),
    Suite("triton-standalone", "the standalone Triton examples through `kernelopt run` "
          "(verdicts, times)", "bench/h200_triton_standalone.sh", uses=(SITE,)),
    Suite("models", "real torch.compile architectures (Llama-style prefill, GPT-2, ViT): probe, "
          "runs, the model four ways (python -m kernelopt_triton.model_compare), summary.json "
          "(bench/models_summary.py) (ARGS: probe|run [MODEL ...])", "bench/h200_models.sh",
          uses=(SITE, "bench/inductor_kernel_times.py", "bench/inductor_mode_gap.py",
                "bench/models_summary.py")),
    Suite("modes", "a model as its user compiles it (issue 53): the engine finding the captured "
          "kernel by its code (identity MODEL [TOP]), the swap under CUDA graphs, A/A and a "
          "slowed candidate (swapcheck MODEL MODE [TOP]), a model's largest GEMM template tuned "
          "(template MODEL MODE), a campaign on top of a compile mode (MODE race: none named, "
          "the capture's race) and its model check in every mode (campaign MODEL MODE [TOP]), "
          "the compile modes alone in one process (modes MODEL [MODE]), the largest reduction "
          "kernels' runs with their other form searched (forms MODEL [TOP]), depthwise "
          "convolutions as kernelopt's Triton kernel against the library's, alone and in the model "
          "(depthwise MODEL), kernelopt's model handed back as a user calls it (use MODEL CHECK)",
          "bench/h200_modes.sh",
          uses=(SITE, "bench/models/convnext.py", "bench/models/mobilenetv3.py", "bench/models/qwen2.py",
                "bench/models/twin_graphs.py", "bench/depthwise_probe.py",
                "bench/use_optimized.py")),
    Suite("settings", "Inductor settings on top of a model's compile mode (issue 53): each a "
          "compile of its own beside the mode in one process, outputs matched, paired ratios "
          "(model_compare --setting) (ARGS: MODE MODEL[,MODEL...] [KEY=VALUE ...])",
          "bench/h200_settings.sh", uses=(SITE, "bench/models/qwen2.py")),
    Suite("modes-probe", "kernel names between processes and benchmark_kernel settings, and a "
          "model in every torch.compile mode in one process (ARGS: MODEL ...)",
          "bench/h200_modes_probe.sh",
          uses=(SITE, "bench/inductor_modes_probe.py", "bench/models/convnext.py",
                "bench/models/qwen2.py")),
    Suite("readers", "the journal's readers through real GPU runs: two standalone Triton runs "
          "whole (progress lines, report.md, summary.json), then a run SIGKILLed after its "
          "first candidate and continued with `kernelopt resume`", "bench/h200_readers.sh",
          uses=(SITE,)),
    Suite("faults", "the GPU fault corpus (tests/faults/cuda, tests/faults/triton; llama.cpp's "
          "generated from its softmax.cu) replayed through the product: what each fault did, "
          "files left outside, the clean candidate's verdict (PART: all cuda triton "
          "llamacpp-clean llamacpp-faults llamacpp)", "bench/h200_faults.sh",
          uses=(SITE, LLAMACPP_TREE, "bench/faults_summary.py", "bench/llamacpp_faults.py")),
    Suite("ledger-trap-probe", "a diagnosis: llama.cpp's trap variant under test-backend-ops "
          "plain, with the CUDA ledger, and with GGML_NO_BACKTRACE=1; the threads of a run "
          "alive after 25 s", "bench/h200_ledger_trap_probe.sh",
          uses=("bench/llamacpp_faults.py", TARBALL)),
    Suite("llamacpp", "kernelopt-llamacpp on a GPU: clean and incremental build, run-llamacpp "
          "SOFT_MAX / ROPE / NORM / RMS_NORM, the engine gate (PART: build testjobs detune softmax "
          "rope norm rmsnorm engine)", "bench/h200_llamacpp.sh", uses=(LLAMACPP_TREE, TARBALL)),
    Suite("llamacpp-model", "what a Llama-7B-wide model dispatches in llama.cpp: llama-bench "
          "pp512/tg under ncu (every kernel), the graph's nodes (llama-eval-callback), each op's "
          "perf-case kernels (env PARTS=\"bench nodes tbo\")", "bench/h200_llamacpp_model.sh",
          uses=(LLAMACPP_TREE, TARBALL)),
    Suite("llamacpp-op", "one llama.cpp op through `kernelopt run-llamacpp` at the model's "
          "heaviest node (env OP, BUDGET)", "bench/h200_llamacpp_op.sh", uses=(LLAMACPP_TREE,)),
    Suite("llamacpp-campaign", "kernelopt over a llama.cpp model as its user runs it: the "
          "profile (ncu, engine, e2e), a campaign of the top ops and the model check, "
          "coverage.json (env TOP, BUDGET, NODES, CAMPAIGN_ARGS; STEP=time times each top op, "
          "no search)",
          "bench/h200_llamacpp_campaign.sh",
          uses=(LLAMACPP_TREE, "bench/llamacpp_time_ops.py", TARBALL)),
    Suite("llamacpp-fresh", "an op's run on a fresh machine as a new user types it (no nodes, "
          "no profile): console lines stamped with seconds, the time to the first candidate and "
          "the verdict, the baseline build's .ninja_log (env OP, BUDGET; PHASE: at a GGUF "
          "model's node of that phase)",
          "bench/h200_llamacpp_fresh.sh", uses=(LLAMACPP_TREE,)),
    Suite("llamacpp-perfcases", "perf cases written from test-backend-ops' own test structs, "
          "compiled into the real tool and run in perf and test mode on the CPU backend",
          "bench/cpu_llamacpp_perfcases.sh", device="CPU", uses=(LLAMACPP_SRC,)),
    Suite("llamacpp-seed-check", "the harness's seeded test inputs against the real ggml on the "
          "CPU: the same seed and layout give the same bytes in every process, a twin tensor "
          "others (bench/llamacpp_seedcheck.cpp)",
          "bench/llamacpp_seed_check.sh", device="CPU",
          uses=(TARBALL, "bench/llamacpp_seedcheck.cpp")),
    Suite("rope-testjobs", "ROPE's correctness check, whole and split over processes, and "
          "test-backend-ops at several -j", "bench/h200_rope_testjobs.sh", uses=(SITE,)),
    Suite("llamacpp-real", "kernelopt-llamacpp's child programs against real llama.cpp tools on "
          "a CPU: op table, tbo wrapper, GGUF writer, engine command",
          "bench/cpu_llamacpp_real.sh", device="CPU", uses=(LLAMACPP_SRC,)),
    Suite("llama-server", "the agents planner against a real OpenAI-compatible server (llama.cpp's "
          "llama-server, CPU): clear end, call accounting vs the server's log",
          "bench/cpu_llama_server.sh", device="CPU", uses=(LLAMACPP_SRC,)),
    Suite("ninfer", "the NInfer fixture's CUDA path through `kernelopt run-ninfer`, and the "
          "refusal of an upstream-like tree", "bench/h200_ninfer.sh", uses=(SITE,)),
    Suite("profilers", "Nsight Compute through the product: raw captures, the ranking of a "
          "multi-kernel program, report.md's profile table, the engine profile and ncu's "
          "overhead (PART: capture product engine)", "bench/profilers.sh",
          uses=(SITE, "bench/ncu_engine", "bench/ncu_multikernel")),
    Suite("ncu-capture", "raw Nsight Compute output (per launch, per kernel) of "
          "examples/cmake-cuda, the Triton softmax and a multi-kernel program, for the ncu "
          "parser's fixtures; the profilers on the machine (the profilers suite's capture part)",
          "bench/h200_ncu_capture.sh", uses=(SITE, "bench/ncu_multikernel")),
    Suite("graphsignal-record", "Graphsignal 1.x without its service: the watcher's payload and "
          "the profiler end to end", "bench/graphsignal_record.sh",
          uses=("bench/ncu_multikernel",)),
    Suite("campaign", "one campaign of the four standalone Triton examples on one GPU, on two, "
          "and through a Dask cluster (MODE: one two dask dask1)", "bench/h200_campaign.sh",
          device="H200 x2", uses=(SITE,)),
)

TOOLS = (
    Tool("bench/h200_collect.sh", "run one bench command under a time limit on the GPU machine "
         "and bring back what it wrote, kernelopt's run folders too, as one tarball"),
    Tool(TARBALL, "the trimmed llama.cpp source tarball the GPU machine needs "
         "(.whl/llama.cpp-trimmed.tar.gz; downloads the llama_cpp_python sdist)"),
    Tool("bench/llamacpp_verdicts.py", "verdicts.json from the runs the llamacpp suite saved"),
    Tool("bench/joint_replay.py", "the tuner's joint search replayed on a grid recorded by "
         "bench/tuner_vs_grid.py (no GPU)"),
    Tool("bench/retake_replay.py", "the confirm retake rule replayed on logged planted "
         "decisions (no GPU)"),
    Tool("bench/models_summary.py", "summary.json of a models results folder"),
    Tool("bench/modes_table.py", "issue 53's model table (every mode, what kernelopt returns, "
         "its ratio to max-autotune) and a summary.json per model from modes campaign folders"),
    Tool("bench/faults_summary.py", "the fault corpus's results from real runs' journals "
         "(fingerprint, summarize; tests/test_fault_corpus.py too)"),
)


def find(name: str) -> Suite | None:
    return next((suite for suite in SUITES if suite.name == name), None)


def listing() -> list[str]:
    """``python -m bench list``'s lines: each suite, its script and uses, then the tools."""
    width = max(len(s.name) for s in SUITES)
    lines: list[str] = []
    for s in SUITES:
        lines.append(f"{s.name:<{width}}  [{s.device}] {s.what}")
        uses = f"; uses {', '.join(s.uses)}" if s.uses else ""
        lines.append(f"{'':<{width}}    runs {s.script}{uses}")
    lines += ["", "tools, run by hand:"]
    width = max(len(t.script) for t in TOOLS)
    lines += [f"  {t.script:<{width}}  {t.what}" for t in TOOLS]
    return lines
