"""The harness for real: Triton kernels run under Triton's interpreter on CPU torch.

Most tests call the harness in this process (torch is imported once); one runs it as the
backend's command does, to check the exit code and the one-line reason.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from kernelopt_triton import harness
from kernelopt_triton_testpaths import EXAMPLES, HACKS

from kernelopt_core.gates.builtin import PolicyGate

pytestmark = pytest.mark.usefixtures("small")


def wrong_vecadd(tmp_path: Path) -> Path:
    text = (EXAMPLES / "vecadd.py").read_text()
    bad = tmp_path / "vecadd.py"
    bad.write_text(text.replace("tl.store(out_ptr + offsets, x + y, mask=mask)",
                                "tl.store(out_ptr + offsets, x + y + 1e-3, mask=mask)"))
    return bad


@pytest.mark.parametrize("example", ["softmax.py", "layernorm.py", "vecadd.py"])
def test_examples_pass_their_check(example: str) -> None:
    summary = harness.run_check(EXAMPLES / example, 2, EXAMPLES / example)
    assert summary.startswith(f"ok: {example} seed 2 on ")


@pytest.mark.parametrize("block", ["32", "512", "4096"])
def test_softmax_is_correct_for_every_block_size(tmp_path: Path, block: str) -> None:
    text = (EXAMPLES / "softmax.py").read_text().replace("BLOCK_SIZE=128, num_warps=1",
                                                        f"BLOCK_SIZE={block}, num_warps=8")
    (tmp_path / "softmax.py").write_text(text)
    harness.run_check(tmp_path / "softmax.py", 1, EXAMPLES / "softmax.py")


def test_a_wrong_kernel_fails_the_check(tmp_path: Path) -> None:
    with pytest.raises(harness.Mismatch, match=r"first launch: output 0 \(arg 2\): 1000 of 1000"):
        harness.run_check(wrong_vecadd(tmp_path), 1, EXAMPLES / "vecadd.py")


def test_check_command_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The command line the backend runs: exit 1 and a one-line reason on a wrong kernel, 2 on
    a file that breaks the convention, 0 when correct. (The whole-run test runs it as a child
    process; here main() runs in this process, so torch is imported once.)"""
    bad = wrong_vecadd(tmp_path)
    oracle = str(EXAMPLES / "vecadd.py")
    assert harness.main(["check", str(bad), "--seed", "1", "--oracle", oracle]) == 1
    err = capsys.readouterr().err
    assert re.search(r"^MISMATCH: seed 1, first launch: output 0 \(arg 2\)", err, re.M), err
    assert len(err.strip().splitlines()) == 1
    (tmp_path / "c.py").write_text(bad.read_text().replace("OUTPUTS = (2,)", "OUTPUTS = ()"))
    assert harness.main(["check", str(tmp_path / "c.py"), "--seed", "1"]) == 2
    assert "OUTPUTS must be a non-empty tuple" in capsys.readouterr().err
    assert harness.main(["check", oracle, "--seed", "1", "--oracle", oracle]) == 0
    assert capsys.readouterr().out.startswith("ok: vecadd.py seed 1")
    # every seed in one process (the backend's check_seeds): a line per seed, or the failing one
    assert harness.main(["check", oracle, "--seeds", "1,2,3", "--oracle", oracle]) == 0
    assert [line.split(" on ")[0] for line in capsys.readouterr().out.splitlines()] == [
        f"ok: vecadd.py seed {s}" for s in (1, 2, 3)]
    assert harness.main(["check", str(bad), "--seeds", "2,3", "--oracle", oracle]) == 1
    assert capsys.readouterr().err.startswith("MISMATCH: seed 2, first launch")


def test_the_oracle_is_the_original_file(tmp_path: Path) -> None:
    """A candidate that loosens its own TOLERANCE or reference changes nothing."""
    text = wrong_vecadd(tmp_path).read_text().replace('"atol": 0.0', '"atol": 1.0')
    (tmp_path / "vecadd.py").write_text(text)
    harness.run_check(tmp_path / "vecadd.py", 1)  # its own (loosened) contract passes it...
    with pytest.raises(harness.Mismatch):  # ...the original's does not
        harness.run_check(tmp_path / "vecadd.py", 1, EXAMPLES / "vecadd.py")


def test_convention_errors(tmp_path: Path) -> None:
    text = (EXAMPLES / "vecadd.py").read_text()
    (tmp_path / "a.py").write_text(text.replace("OUTPUTS = (2,)", "OUTPUTS = (5,)"))
    with pytest.raises(harness.ConventionError, match="OUTPUTS names arg 5"):
        harness.run_check(tmp_path / "a.py", 1)
    (tmp_path / "b.py").write_text(text.replace("torch.randn(N, generator=gen)", "torch.zeros(N)"))
    with pytest.raises(harness.ConventionError, match="all-zero inputs"):
        harness.run_check(tmp_path / "b.py", 1)


def test_bench_reports_one_interpreted_reading() -> None:
    reading = harness.run_bench(EXAMPLES / "softmax.py", EXAMPLES / "softmax.py", iters=2)
    assert reading["kernelopt_bench"] == 1 and reading["time_ms"] > 0
    assert reading["shape"] == "f32[4,300]" and reading["bytes"] == 2 * 4 * 300 * 4
    assert math.isclose(reading["checksum"], 4.0, rel_tol=1e-5)  # each row sums to 1
    if reading["device"] == "cpu":
        assert reading["interpreted"] is True and reading["timer"] == "interpreter"
        assert reading["cache_flushed"] is False
    json.dumps(reading)


def expectation(path: Path) -> tuple[str, str]:
    text = path.read_text()
    kind = re.search(r"^# kind: (\S+)", text, re.M)
    expect = re.search(r"^# expect: (\S+)", text, re.M)
    assert kind and expect, f"{path.name} lacks # kind: and # expect: lines"
    return kind.group(1), expect.group(1)


HACK_FILES = sorted(HACKS.glob("*.py"))


def test_corpus_covers_the_kinds() -> None:
    kinds = {expectation(p)[0] for p in HACK_FILES}
    assert {"skip_work", "lazy_output", "pointer_cache", "lowered_precision", "mutate_input",
            "stale_buffer", "side_thread", "timer_tamper", "vendor_swap", "tolerance_tamper",
            "instrumentation_bypass", "side_stream", "forged_time_line", "device_replay"} <= kinds


@pytest.mark.parametrize("hack", HACK_FILES, ids=lambda p: p.stem)
def test_each_reward_hack_is_rejected_by_its_gate(hack: Path) -> None:
    """Each hack replaces examples/triton/softmax.py; the gate its header names rejects it.

    Policy hacks are only scanned (they patch clocks or start threads: not in this process)."""
    _kind, expect = expectation(hack)
    base = EXAMPLES / "softmax.py"
    policy = PolicyGate().evaluate(SimpleNamespace(  # the gate reads only these two fields
        edits={"softmax.py": hack.read_bytes()}, baseline_files={"softmax.py": base.read_bytes()}))
    if expect == "policy":
        assert not policy.passed, policy.reason
        return
    assert policy.passed, policy.reason
    if expect == "correctness":
        with pytest.raises(harness.Mismatch):
            harness.run_check(hack, 1, base)
        return
    assert expect == "screen", expect
    # correct, with the baseline's checksum: only its speed could win, and it does more work
    harness.run_check(hack, 1, base)
    hacked = harness.run_bench(hack, base, iters=1)["checksum"]
    assert hacked == harness.run_bench(base, base, iters=1)["checksum"]


def test_a_candidate_cannot_loosen_the_originals_tolerance() -> None:
    # Even past the policy gate: the tolerance and expected values are fixed before the
    # candidate is imported, so its sys.modules loop finds nothing that still matters.
    with pytest.raises(harness.Mismatch):
        harness.run_check(HACKS / "tolerance_tamper.py", 1, EXAMPLES / "softmax.py")


def test_the_harness_imports_its_modules_before_any_kernel_file() -> None:
    """Every harness_* module binds the clock and output functions it reads at its import;
    harness.py imports them all at its top, so they are bound before a kernel file loads (and
    before torch: the worker's hello stays fast)."""
    import subprocess
    import sys

    package = Path(harness.__file__).parent
    wanted = sorted(f"kernelopt_triton.{p.stem}" for p in package.glob("harness_*.py"))
    listed = ("import sys, kernelopt_triton.harness; "
              "print(' '.join(sorted(m for m in sys.modules if m.startswith(("
              "'kernelopt_triton.harness_', 'torch', 'triton')))))")
    loaded = subprocess.run([sys.executable, "-c", listed], capture_output=True, text=True,
                            check=True).stdout.split()
    assert len(wanted) >= 5 and loaded == wanted


@pytest.mark.slow
def test_a_forged_second_time_line_is_not_believed(tmp_path: Path) -> None:
    """Past the policy gate: the candidate prints a line at import, the harness its own; the
    core's parser refuses the output, so the candidate's bench fails."""
    import sys

    from kernelopt_core import process
    from kernelopt_core.errors import BenchParseError
    from kernelopt_core.measure.parsers import parse
    from kernelopt_core.target import BenchSpec, Command

    hack, base = HACKS / "forged_time_line.py", EXAMPLES / "softmax.py"
    command = Command((sys.executable, "-m", "kernelopt_triton.harness", "bench", str(hack),
                       "--oracle", str(base), "--iters", "1"), tmp_path,
                      env={"KERNELOPT_SMALL": "1", "TRITON_INTERPRET": "1"}, timeout_s=300)
    result = process.run(command)
    assert result.ok, result.tail()
    lines = [line for line in result.stdout.splitlines() if '"time_ms"' in line]
    assert len(lines) == 2 and '"time_ms": 0.001' in lines[0]
    with pytest.raises(BenchParseError, match="exactly one per invocation"):
        parse(BenchSpec(), result.stdout, command.display())


def test_warm_up_settles_when_launches_stop_getting_faster() -> None:
    from kernelopt_triton.timing import settled

    ramp = [0.392, 0.290, 0.268, 0.258, 0.257]  # seen after 2 s idle (../shared/FACTS.md)
    assert not settled(ramp + [0.257] * 4)  # fewer than two groups of five
    assert not settled([0.40, 0.35, 0.31, 0.29, 0.28, 0.27, 0.265, 0.262, 0.26, 0.258])
    assert not settled(ramp + [0.257] * 5)  # 0.257 against the ramp's median 0.268: faster
    assert settled(ramp + [0.257] * 10)
    assert settled([0.257] * 5 + [0.259, 0.256, 0.258, 0.257, 0.262])  # noise, not a ramp
    assert not settled([0.30] * 5 + [0.29] * 5)  # still 3 % faster: keep warming


class _ScriptedTimer:
    """Timer.warm_up's GPU-side calls, scripted: each launch's device time is the next number
    of ``times`` (the last repeats)."""

    def __init__(self, times: list[float]) -> None:
        self.times, self.launches = times, 0

    def event(self, enable_timing: bool = False) -> object:
        return object()

    def elapsed(self, start: object, end: object) -> float:
        return self.times[min(self.launches - 1, len(self.times) - 1)]

    def launch(self) -> None:
        self.launches += 1


def _timer(script: _ScriptedTimer) -> object:
    from kernelopt_triton.timing import Timer

    timer = Timer.__new__(Timer)
    timer.interpreted, timer.warmed, timer.cushion_ms = False, True, 0.05
    timer._event, timer._record = script.event, lambda event: None
    timer._sync, timer._elapsed = lambda: None, script.elapsed
    return timer


def test_warm_up_runs_its_floor_then_until_settled_and_never_past_its_cap() -> None:
    import time

    ramp = _ScriptedTimer([0.392, 0.290, 0.268, 0.258] + [0.257] * 3 + [0.2569])
    timer = _timer(ramp)
    start = time.perf_counter()
    estimate = timer.warm_up(lambda: None, ramp.launch, 20.0, 10, 200.0)
    assert time.perf_counter() - start >= 0.020 and ramp.launches >= 10
    assert estimate == pytest.approx(0.257, rel=0.01)  # the median: the ramp is a few launches
    falling = _ScriptedTimer([1.0])
    falling.elapsed = lambda s, e: 0.98 ** falling.launches  # 2 % faster every launch

    def slow_launch() -> None:  # a launch of about 0.5 ms: a few hundred before the cap
        falling.launch()
        time.sleep(0.0005)

    timer = _timer(falling)
    start = time.perf_counter()
    timer.warm_up(lambda: None, slow_launch, 20.0, 10, 60.0)
    assert time.perf_counter() - start >= 0.060  # never settled: it stops at the cap, not before
