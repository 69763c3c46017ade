"""Built-in gates, registered through the same hook as any third-party gate.

Candidate phase (default order): ``policy`` → ``build`` → ``correctness`` → ``screen``.
Final phase (default order): ``confirm`` → ``shape`` → ``roofline`` → ``engine``.
Order and membership come from ``[gates]`` in config (docs/gates.md); how screen, confirm,
shape and roofline measure, from their own option tables (gates/options.py).
"""

from __future__ import annotations

import re

from kernelopt_core import evidence
from kernelopt_core.gates.base import FALLBACK, GateContext, GateResult
from kernelopt_core.gates.engine import EngineGate
from kernelopt_core.gates.options import GATE_TABLES
from kernelopt_core.gates.perf import ConfirmGate, RooflineGate, ScreenGate, ShapeGate
from kernelopt_core.gates.policy import PolicyGate
from kernelopt_core.hookspecs import hookimpl
from kernelopt_core.measure.parsers import ANSI
from kernelopt_core.process import OUTPUT_CAP


class BuildGate:
    name = "build"
    phase = "candidate"

    def evaluate(self, ctx: GateContext) -> GateResult:
        result = ctx.runner.build(ctx.candidate_tree, ctx.log_dir / "build.log")
        if result is None:
            return GateResult(self.name, True, "nothing to build")
        if not result.ok:
            return GateResult(
                self.name, False, f"{result.describe()}", {"log_tail": result.tail(4000)}
            )
        return GateResult(self.name, True, f"built in {result.seconds:.1f} s")


# a test's own words for a failure, most specific first: a fault of the device or the process
# (an illegal address, a trap, memory exhausted, a hang: what a CUDA runtime or driver says),
# an exception line, a mismatch, a failed test id, a FAIL line; banners ("=== FAILURES ===")
# are never the answer
DEVICE_FAULT = re.compile(
    r"illegal memory access|illegal instruction|misaligned address|device-side assert"
    r"|unspecified launch failure|launch timed out|out of memory|OutOfMemory"
    r"|\b(cuda|hip)Error[A-Z]\w+|left processes running|\(hung\)|device memory leak", re.I)
ERRORISH = re.compile(r"error|fail|abort|assert|hung|killed|left processes", re.I)  # not a
# passing test's name that mentions a fault
RANKED_FAILURES = (DEVICE_FAULT, re.compile(r"\b(CUDA|HIP) error: \S"),  # the runtime's words
                   re.compile(r"^\w+(Error|Exception)\b.*:"), re.compile(r"MISMATCH|mismatch"),
                   re.compile(r"^FAILED \S+::"), re.compile(r"\bFAIL(ED)?\b"))
WEAK_FAILURE = re.compile(r"error|fail|assert|wrong", re.I)
# a line that reports a pass (`test_dtype_mismatch PASSED`, a case's `: OK`): never the failure,
# whatever words its name holds
PASSED = re.compile(r"(\bPASSED|:\s*OK)\s*(\[\s*\d+%\])?$")
BANNER = re.compile(r"^[=_-]{3,}.*[=_-]{3,}$")
# a frame of a glibc backtrace (ggml_abort prints one): `lib.so(symbol+0x1f)[0x7f..]`; a
# symbol such as ggml_cuda_error is the printer's name, not what failed
BACKTRACE_FRAME = re.compile(r"^\S*\([^()\s]*\+0x[0-9a-f]+\)\s*\[0x[0-9a-f]+\]$")
# characters of a failed test's output searched for its words: all it keeps of its two streams
# (test-backend-ops printed its one failing case among thousands 93 kB before its end)
FAILURE_SCAN = 2 * OUTPUT_CAP


def failing_line(log: str) -> str:
    """The line of the test's output that says what failed: the first of the most specific
    kind present, else the last line that speaks of an error or failure, else the last line."""
    plain = (ANSI.sub("", line).strip() for line in log.splitlines())  # no colour codes
    lines = [line for line in plain if line
             and not BANNER.match(line) and not BACKTRACE_FRAME.match(line)]
    for pattern in RANKED_FAILURES:
        hit = next((line for line in lines if pattern.search(line) and not PASSED.search(line)
                    and (pattern is not DEVICE_FAULT or ERRORISH.search(line))), None)
        if hit:
            return hit[:500]
    hit = next((line for line in reversed(lines) if WEAK_FAILURE.search(line)), None)
    return (hit or (lines[-1] if lines else ""))[:500]


class CorrectnessGate:
    """Runs the target's test on every configured seed (fresh random inputs per seed)."""

    name = "correctness"
    phase = "candidate"

    def evaluate(self, ctx: GateContext) -> GateResult:
        # what the test printed about itself, if anything (kernelopt_core.evidence)
        failed, said = evidence.checked(ctx.runner.check_all, ctx.candidate_tree,
                                        ctx.log_dir / "test.log")
        if failed is not None:
            which, result = failed
            tail = result.tail(4000)
            # a test that exited 0 but failed for what it left running: its output says "OK"
            exited_ok = result.returncode == 0 and not result.timed_out
            # the words are searched beyond the tail: a few backtraces fill 4000 characters
            line = "" if exited_ok else failing_line(result.tail(FAILURE_SCAN))
            ran = result.describe()
            if result.timed_out:  # a hang's words first, not after a long command line
                line = f"timed out after {result.command.timeout_s:g} s" + (
                    f" ({line})" if line else "")
                ran = f"`{result.command.display()}`"  # describe() would say it again
            return GateResult(self.name, False, (f"{line} — " if line else "")
                              + f"{which}: {ran}",
                              {"seeds": which, "log_tail": tail, "failing_line": line},
                              failed_verdict=FALLBACK)
        reason = f"passed on seeds {list(ctx.settings.seeds)}"
        if said:
            reason += "; the test reports: " + "; ".join(evidence.describe(e) for e in said)
        return GateResult(self.name, True, reason, {"evidence": said} if said else {})


@hookimpl
def kernelopt_register_gates() -> list[object]:
    return [PolicyGate(), BuildGate(), CorrectnessGate(), ScreenGate(), ConfirmGate(),
            ShapeGate(), RooflineGate(), EngineGate()]


@hookimpl
def kernelopt_option_tables() -> list[type]:
    return list(GATE_TABLES)  # [screen], [confirm], [shape], [roofline]
