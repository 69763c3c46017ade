"""Built-in gates, registered through the same hook as any third-party gate.

Candidate phase (default order): ``policy`` → ``build`` → ``correctness`` → ``screen``.
Final phase (default order): ``confirm`` → ``shape`` → ``roofline``.
Order and membership come from ``[gates]`` in config (docs/gates.md).
"""

from __future__ import annotations

import re

from kernelopt_core.gates.base import FALLBACK, GateContext, GateResult
from kernelopt_core.gates.engine import EngineGate
from kernelopt_core.gates.perf import ConfirmGate, RooflineGate, ScreenGate, ShapeGate
from kernelopt_core.hookspecs import hookimpl

# Patterns an honest kernel edit does not add. Each names the reward hack it would enable.
POLICY_RULES: list[tuple[str, re.Pattern[str]]] = [
    ("vendor library swap", re.compile(
        r"\b(cublas\w*|cudnn\w*|cutlass|rocblas\w*|hipblas\w*|miopen\w*|cblas_\w+|mkl_\w+|"
        r"openblas\w*|torch::|at::|ATen)\b|#\s*include\s*[<\"](cublas|cudnn|cutlass|cblas|mkl|"
        r"rocblas|hipblas|miopen|torch|ATen)", re.I)),
    ("timer tampering", re.compile(
        r"\b(clock_gettime|gettimeofday|QueryPerformanceCounter|__rdtsc|rdtsc|"
        r"cudaEvent\w+|hipEvent\w+|std::chrono|perf_counter|time\.time|"
        r"torch\.cuda\.Event|elapsed_time)\b")),
    ("work on a side stream or thread", re.compile(
        r"\b(cudaStreamCreate\w*|hipStreamCreate\w*|std::thread|std::async|std::jthread|"
        r"pthread_create|fork|threading\.Thread|multiprocessing|concurrent\.futures|"
        r"torch\.cuda\.(Stream|stream|ExternalStream))\b")),
    ("bypass of the harness's instrumentation", re.compile(
        r"\b(DisableTorchFunction|DisableTorchFunctionSubclass|_disable_current_modes|torch\._C|"
        r"sys\.modules|set_stream|torch\.Stream|cuda\.streams|kernelopt\w*|setattr|builtins)\b|"
        # rebinding a module's attribute (json.dumps = ..., time.perf_counter = ...)
        r"\b(json|os|sys|time|math|torch|triton|numpy|np|statistics|importlib)(\.\w+)+\s*=(?!=)")),
    ("output forging (the bench's time line shares the kernel's stdout)", re.compile(
        r"\b(printf|puts|fputs|fprintf|fwrite|print|device_print|_exit|quick_exit|atexit|at_quick_exit)\s*\(|"
        r"\bstd::(cout|cerr|clog)\b|\bsys\.(stdout|stderr|__stdout__)\b|\bos\.write\b")),
    ("process or environment tampering", re.compile(
        r"\b(system|popen|execv\w*|setenv|putenv|dlsym|dlopen|LD_PRELOAD)\s*\(|LD_PRELOAD")),
]


def strip_comment(line: str, marker: str) -> str:
    """``line`` without its trailing comment (``marker``: "#" or "//"); a marker inside a
    string literal is not a comment, so `s = "#"; threading.Thread(...)` is still seen."""
    quote = ""
    i = 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif line.startswith(marker, i):
            return line[:i]
        i += 1
    return line


def added_lines(old: bytes | None, new: bytes) -> list[tuple[int, str]]:
    """Lines of ``new`` that do not occur in ``old`` (with their 1-based numbers)."""
    before = set((old or b"").decode("utf-8", errors="replace").splitlines())
    return [(n, line) for n, line in
            enumerate(new.decode("utf-8", errors="replace").splitlines(), 1)
            if line not in before]


class PolicyGate:
    """Static check of the added lines: no vendor libraries, timers, side streams or threads,
    and no process/environment tampering. Cheap, deterministic, and first in line."""

    name = "policy"
    phase = "candidate"

    def evaluate(self, ctx: GateContext) -> GateResult:
        findings = []
        for path, data in sorted(ctx.edits.items()):
            for number, line in added_lines(ctx.baseline_files.get(path), data):
                code = strip_comment(line, "#" if path.endswith(".py") else "//")
                for reason, pattern in POLICY_RULES:
                    match = pattern.search(code)
                    if match:
                        findings.append(f"{path}:{number}: {reason} (`{match.group(0)}`)")
        if findings:
            return GateResult(self.name, False, "; ".join(findings[:5]),
                              {"findings": findings}, failed_verdict=FALLBACK)
        return GateResult(self.name, True, "no forbidden constructs in the added lines")


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


class CorrectnessGate:
    """Runs the target's test on every configured seed (fresh random inputs per seed)."""

    name = "correctness"
    phase = "candidate"

    def evaluate(self, ctx: GateContext) -> GateResult:
        for seed in ctx.settings.seeds:
            result = ctx.runner.check(ctx.candidate_tree, seed, ctx.log_dir / "test.log")
            if not result.ok:
                return GateResult(
                    self.name,
                    False,
                    f"seed {seed}: {result.describe()}",
                    {"seed": seed, "log_tail": result.tail(4000)},
                    failed_verdict=FALLBACK,
                )
        return GateResult(self.name, True, f"passed on seeds {list(ctx.settings.seeds)}")


@hookimpl
def kernelopt_register_gates() -> list[object]:
    return [PolicyGate(), BuildGate(), CorrectnessGate(), ScreenGate(), ConfirmGate(),
            ShapeGate(), RooflineGate(), EngineGate()]
