"""What the report says, label by label (issue 14 item 4), from a journal's events."""

from __future__ import annotations

from kernelopt_tests_support import records, run_header

from kernelopt_core import events
from kernelopt_core.report import render_markdown, summarize


def journal(status: str, confirm_passed: bool) -> list[dict]:
    rounds = {"baseline_ms": [15.2] * 4, "candidate_ms": [7.3] * 4}
    return records(
        run_header({"name": "k", "shape": "f32[8]", "files": ["k.c"]}),
        events.Config(planner="tuner", planner_reason="no key",
                      candidate_gates=["build", "correctness", "screen"], final_gates=["confirm"]),
        events.Baseline(ms=15.19, samples=[15.19, 15.2, 15.18]),
        candidate("c1", "TILE=8"),
        events.CandidateResult(candidate="c1", accepted=True, speedup=2.1, failed_gate=None,
                               reason="passed every candidate gate",
                               gates_passed=["build", "correctness", "screen"], tag="t/c1",
                               wall_s=1.0, child_s=0.5),
        candidate("c2", "TILE=9"),
        events.CandidateResult(candidate="c2", accepted=False, speedup=None, failed_gate="build",
                               reason="error: no", gates_passed=[], tag=None, wall_s=0.2,
                               child_s=0.1),
        events.SearchEnd(reason="patience", evaluated=1),
        events.Gate(candidate="c1", gate="confirm", final=True, passed=confirm_passed,
                    skipped=False, reason="not proven",
                    metrics={**rounds, "ratios": [2.07] * 4, "median_ratio": 2.07,
                             "noise_pct": 1.0, "wins": 2, "rounds": 4}),
        events.Verdict(status=status, candidate="c1", description="TILE=8", screen_speedup=2.1,
                       caught_by=[], reason="confirm: not proven"),
        events.End(exit_code=1, wall_seconds=3.0, gpu_seconds=1.0))


def candidate(cid: str, description: str) -> events.Candidate:
    knob, value = description.split("=")
    return events.Candidate(candidate=cid, parent="baseline", planner="tuner",
                            description=description, knobs={knob: int(value)}, files=["k.c"])


def test_a_matched_report_says_what_was_measured_and_names_no_winner() -> None:
    journaled = journal("matched", confirm_passed=False)
    s = summarize(journaled)
    assert s["report_line"].startswith("matched (median 2.07×, not proven faster)")
    assert "(baseline 15.2 ms, candidate 7.3 ms (medians)," in s["report_line"]
    assert "15.2 → 15.2" not in s["report_line"]
    md = render_markdown(journaled, s)
    assert "**matched** — (median" in md and "matched — matched" not in md
    assert "Winner candidate" not in md and "Best candidate (not proven faster" in md
    assert "- search ended: patience after 1 candidate\n" in md
    assert "| c1 | TILE=8 | accepted, then rejected at final gate confirm | 2.100 |" in md
    assert "| c2 | TILE=9 | rejected at build | — |" in md


def test_a_matched_line_says_which_gate_failed_when_confirm_passed() -> None:
    """Faster in every confirm round, then the shape gate failed: not "not proven faster", and
    the bandwidth shown is the kept baseline's (issue 34 item 4)."""
    journaled = journal("matched", confirm_passed=True)
    journaled[-2] = {**journaled[-2], "caught_by": ["shape"], "reason": "shape: no checksum"}
    journaled[0]["target"]["bytes"] = 2 ** 30
    s = summarize(journaled)
    assert s["report_line"].startswith(
        "matched (median 2.07×, faster in the confirm rounds, but the shape gate failed: "
        "baseline kept)"), s["report_line"]
    assert "not proven faster" not in s["report_line"]
    assert "baseline 70.6 GB/s" in s["report_line"]  # 1 GiB in the baseline's 15.2 ms


def test_a_fallback_report_does_not_call_its_last_candidate_a_winner() -> None:
    md = render_markdown(journal("fallback", False), summarize(journal("fallback", False)))
    assert "Winner candidate" not in md and "Last candidate through the final gates" in md


def test_the_failing_line_is_the_tests_own_most_specific_words() -> None:
    from kernelopt_core.gates.builtin import failing_line

    pytest_log = ("============================= FAILURES =============================\n"
                  "___ test_sum ___\n    assert got == want\nE   assert 3 == 4\n"
                  "FAILED test_k.py::test_sum - assert 3 == 4\n=== 1 failed in 0.1s ===\n")
    assert failing_line(pytest_log) == "FAILED test_k.py::test_sum - assert 3 == 4"
    seeds = "seed 1: max error 3e-9 ok\nseed 2: mismatch at i=7: 1.5 vs 1.0\n"
    assert failing_line(seeds) == "seed 2: mismatch at i=7: 1.5 vs 1.0"
    traceback = ('Traceback (most recent call last):\n  File "t.py", line 3, in <module>\n'
                 "    torch.testing.assert_close(out, ref)\n"
                 "AssertionError: Tensor-likes are not close! Mismatched elements: 3 / 8\n")
    assert failing_line(traceback).startswith("AssertionError: Tensor-likes are not close")
    assert failing_line("transpose_test: FAIL seed=1 shape=1x1\n") == \
        "transpose_test: FAIL seed=1 shape=1x1"
    assert failing_line("") == "" and failing_line("just exited\n") == "just exited"
    # a passing test or case whose name says mismatch/FAIL is never the failure (a review found
    # one ranked above the FAILED line once the whole output was searched)
    passes = ("tests/test_a.py::test_dtype_mismatch_raises PASSED [ 50%]\n"
              "  MUL_MAT(type_a=f16,fail_fast=1): OK\n" * 3)
    assert failing_line(passes + "FAILED tests/test_a.py::test_sum - assert 3 == 4\n") == \
        "FAILED tests/test_a.py::test_sum - assert 3 == 4"


def test_the_failing_case_far_from_the_end_of_a_long_test_log_without_colour_codes() -> None:
    """test-backend-ops (an H100's MUL_MAT run, 2026-12-07) prints its one failing case among
    thousands, 93 kB before the end, in colour; the summary lines after it say only "FAIL".
    The reason names the case, without the codes."""
    import gzip
    from pathlib import Path

    from kernelopt_core.gates.builtin import FAILURE_SCAN, failing_line

    log = gzip.decompress((Path(__file__).parent / "fixtures" / "failing-lines"
                           / "h100-mul-mat-test.log.gz").read_bytes()).decode()
    assert len(log) - log.index("ERR = 0.000609867") > 64 * 1024 and len(log) <= FAILURE_SCAN
    assert failing_line(log[-FAILURE_SCAN:]) == (
        "[MUL_MAT] ERR = 0.000609867 > 0.000500000   MUL_MAT(type_a=q4_1,type_b=f32,m=16,n=1,"
        "k=256,bs=[1,1],nr=[1,2],per=[0,1,2,3],k_v=0,o=1,src_overlap=0,m_v=0,pad=0): FAIL")


def test_the_profile_table_and_a_journal_of_the_old_profile_format() -> None:
    from pathlib import Path

    from kernelopt_core.profiling.parsers import ncu_kernels
    from kernelopt_core.profiling.view import annotate

    recorded = (Path(__file__).parent / "fixtures" / "profilers" / "ncu-cmake-cuda-baseline.csv")
    profile = annotate({"tool": "ncu", "kernels": [k.to_json() for k in ncu_kernels(
        recorded.read_text())]}, {"row_sum_kernel": "kernel.cu"})
    journaled = journal("optimized", True)
    [profiled] = records(events.Profile(profiler="ncu", tree="baseline", program="bench",
                                        metrics=profile))
    journaled.insert(3, profiled)
    md = render_markdown(journaled, summarize(journaled))
    assert "## Profile (ncu, per launch)" in md and "| baseline | `void <unnamed>::row_sum" in md
    # a journal written before kernels were records (a dict of name -> summed metrics)
    old = {"dram_bytes": 1.5e10, "kernels": {"row_sum_kernel": {"dram__bytes.sum": 1.5e10}}}
    journaled[3] = {**journaled[3], "metrics": old}
    assert events.parse(journaled[3]) is not None  # read, and left out for its old format
    md = render_markdown(journaled, summarize(journaled))
    assert "## Profile" not in md and "## Candidates" in md


def test_the_report_says_which_knob_values_were_not_tried_and_why() -> None:
    """The knob probe's drops (knob_probe event), e.g. llama.cpp's values that change no kernel
    the timed case launches, are in report.md with their reason; none: no section."""
    unreached = ("changes only cpy_scalar, cpy_scalar_contiguous; the pinned case launches "
                 "cpy_scalar_transpose (not a candidate: it cannot change the time)")
    journaled = journal("fallback", False)
    [probed] = records(events.KnobProbe(
        ok=True, variants=6, seconds=0.2,
        failed={"CUDA_CPY_BLOCK_SIZE": {v: unreached for v in ("32", "64")},
                "TILE": {"512": "cpy.cu: error: too much shared data"}},
        dropped=["CUDA_CPY_BLOCK_SIZE"]))
    journaled.insert(2, probed)
    md = render_markdown(journaled, summarize(journaled))
    assert "## Knob values not tried (dropped before the search)" in md
    assert f"| CUDA_CPY_BLOCK_SIZE | 32, 64 | {unreached} |" in md
    assert "| TILE | 512 | cpy.cu: error: too much shared data |" in md
    assert "- no value of CUDA_CPY_BLOCK_SIZE is left: not a knob of this run" in md
    assert "Knob values not tried" not in render_markdown(journal("fallback", False),
                                                           summarize(journal("fallback", False)))


def test_a_device_fault_is_named_before_a_generic_line() -> None:
    """Outputs recorded on the H200 (bench/results/2026-12-04-h200-faults): the CUDA runtime's
    or torch's words for the fault lead the reason, not a FAIL banner or torch's closing hint."""
    from kernelopt_core.gates.builtin import failing_line

    cuda = ("rowsum_test: FAIL seed=1 shape=1x1\n\nCUDA error in row_sum (cudaDeviceSynchronize): "
            "cudaErrorIllegalAddress (an illegal memory access was encountered)\n")
    assert "illegal memory access" in failing_line(cuda)
    torch_text = ("Traceback (most recent call last):\n  File \"harness.py\", line 195, in _sync\n"
                  "    torch.cuda.synchronize()\ntorch.AcceleratorError: CUDA error: unspecified "
                  "launch failure\nSearch for `cudaErrorLaunchFailure' in https://docs.nvidia.com/"
                  "cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.\n"
                  "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
                  "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n")
    assert failing_line(torch_text) == ("torch.AcceleratorError: CUDA error: unspecified launch "
                                        "failure")
    oom = ("rowsum_test: FAIL seed=1\nCUDA error in row_sum (launch): cudaErrorMemoryAllocation "
           "(out of memory)\n")
    assert "out of memory" in failing_line(oom)


def test_a_ggml_abort_is_named_by_the_cuda_error_not_a_backtrace_frame() -> None:
    """test-backend-ops' output for llama.cpp's illegal-address candidate on the H200
    (bench/results/2026-12-04-h200-faults, llamacpp): ggml's CUDA error line, then each of
    four shards' glibc backtraces (several thousand characters), then the wrapper's summary.
    The reason is the runtime's words, found however far the backtraces push them up; a
    frame naming ggml_cuda_error is never the answer, nor is a CUDA error with no fault name."""
    from kernelopt_core.gates.builtin import FAILURE_SCAN, failing_line

    build = "/tmp/k/work/llamacpp-SOFT_MAX-9f24bd3721/cand-build/bin"
    frames = "".join(
        f"{build}/libggml-cuda.so.0(_Z15ggml_cuda_errorPKcS0_S0_iS0_+0xb7)[0x7f8c1594{i:04x}]\n"
        f"{build}/libggml-base.so.0(ggml_abort+0x15b)[0x7f8c1959{i:04x}]\n"
        f"/lib/x86_64-linux-gnu/libc.so.6(+0x129ecc)[0x7f8c1532{i:04x}]\n" for i in range(40))
    log = ("Backend 1/2: CUDA0\n  Device description: NVIDIA H200\n"
           "CUDA error: an illegal memory access was encountered\n"
           "  current device: 0, in function ggml_backend_cuda_synchronize at "
           "../cand-src/ggml/src/ggml-cuda/ggml-cuda.cu:2544\n"
           "  cudaStreamSynchronize(cuda_ctx->stream())\n"
           "../cand-src/ggml/src/ggml-cuda/ggml-cuda.cu:109: CUDA error\n" + frames
           + "kernelopt-llamacpp: no SOFT_MAX case ran OK on CUDA0 (0 not supported; exit -6): "
           "nothing was checked\n")
    assert len(log) > 4000 and len(log) < FAILURE_SCAN
    assert failing_line(log) == "CUDA error: an illegal memory access was encountered"
    assert failing_line(log.replace("an illegal memory access was encountered",
                                    "device-side assert triggered")) == \
        "CUDA error: device-side assert triggered"
    # no device fault's name: the runtime's line still beats the frames and the summary
    assert failing_line("CUDA error: invalid argument\n" + frames) == "CUDA error: invalid argument"
    assert "ggml_cuda_error" not in failing_line(frames + "exit 1\n")


def with_engine(status: str, passed: bool, metrics: dict, reason: str) -> list[dict]:
    journaled = journal(status, confirm_passed=True)
    engine = records(events.Gate(candidate="c1", gate="engine", final=True, passed=passed,
                                 skipped=False, reason=reason, metrics=metrics))
    if not passed:
        journaled[-2] = {**journaled[-2], "caught_by": ["engine"], "reason": f"engine: {reason}"}
    return journaled[:-2] + engine + journaled[-2:]


def test_every_engine_decision_shows_its_numbers_in_the_line() -> None:
    """Issue 53: the engine's reason and numbers on the console's line (report_line) and in
    summary.json: a kernel win the model cannot resolve is optimized for the kernel, the whole
    model within noise; a measured slowdown is matched with its numbers; an engine that could
    not run says why."""
    numbers = {"baseline_ms": [4.41] * 12, "candidate_ms": [4.40] * 12, "speedup": 1.001,
               "noise_pct": 1.0, "rounds": 12, "amdahl_speedup": 1.002, "time_share": 0.04}
    s = summarize(with_engine("optimized", True, {**numbers, "model_resolved": False},
                              "whole model within noise: outputs match"))
    assert s["report_line"].startswith("2.07× (kernel) (")
    assert ("whole model within noise: 1.001× (band ±1.0 %, 12 paired rounds, Amdahl 1.002×)"
            in s["report_line"]), s["report_line"]
    assert s["engine"]["model_resolved"] is False and s["engine"]["rounds"] == 12
    s = summarize(with_engine("optimized", True, {**numbers, "model_resolved": True}, "ok"))
    assert s["report_line"].startswith("2.07× (") and "(kernel)" not in s["report_line"]
    assert "whole program 1.001× (band ±1.0 %" in s["report_line"]
    slower = {**numbers, "speedup": 0.93, "model_resolved": None}
    s = summarize(with_engine("matched", False, slower, "whole program slower: 4.41 → 4.74 ms"))
    assert "but the engine gate failed: baseline kept" in s["report_line"]
    assert "whole program 0.930× (band ±1.0 %, 12 paired rounds" in s["report_line"]
    s = summarize(with_engine("matched", False, {}, "the engine fails with the baseline's "
                              "kernel: no kernel of this compile has the code of k"))
    assert "engine: the engine fails with the baseline's kernel: no kernel" in s["report_line"]
