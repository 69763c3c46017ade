"""The ``policy`` gate: a static scan of the code a candidate adds.

Each rule names the reward hack it would enable (docs/gates.md). Only *code* is judged: comments
and string literals (docstrings too) are blanked first, so prose that mentions ``print`` or
kernelopt is not a finding, while ``printf("...")`` still is. Preprocessor lines
keep their strings (``#include "cublas_v2.h"`` must be seen). Existing code is never judged:
only lines of the candidate that the baseline's file does not contain.

A candidate whose edits change no code (only comments or whitespace differ; strings count as
code) is refused too: it can only win by noise, and on a loaded machine it once did.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize

from kernelopt_core.gates.base import FALLBACK, GateContext, GateResult

Rule = tuple[str, re.Pattern[str]]

POLICY_RULES: list[Rule] = [
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
        r"pthread_create|fork|posix_spawnp?|threading\.Thread|multiprocessing|concurrent\.futures|"
        r"torch\.cuda\.(Stream|stream|ExternalStream))\b")),
    ("bypass of the harness's instrumentation", re.compile(
        r"\b(DisableTorchFunction|DisableTorchFunctionSubclass|_disable_current_modes|torch\._C|"
        r"sys\.modules|set_stream|torch\.Stream|cuda\.streams|kernelopt\w*|setattr|builtins|"
        r"__dict__|__import__|import_module|_getframe|__setattr__|__getattribute__|ctypes|"
        r"get_referrers|get_objects)\b|\b(vars|globals)\s*\(|\bimport\s+(gc|inspect)\b|"
        r"\bfrom\s+(gc|inspect)\s+import\b|\b(gc|inspect)\.\w+")),
    ("output forging (the bench's time line shares the kernel's stdout)", re.compile(
        r"\b(printf|puts|fputs|fprintf|fwrite|print|device_print|_exit|quick_exit|atexit|"
        r"at_quick_exit|dup2?|freopen|fdopen)\s*\(|\b(write|open)\s*\(\s*[12]\s*[,)]|"
        r"\bstd::(cout|cerr|clog)\b|\bsys\.(stdout|stderr|__stdout__)\b|\bos\.write\b")),
    ("process or environment tampering", re.compile(
        r"\b(system|popen|execv\w*|setenv|putenv|dlsym|dlopen|LD_PRELOAD)\s*\(|LD_PRELOAD|"
        r"\bos\.environ\s*(\[[^\]]*\]\s*=(?!=)|\.(update|setdefault)\b)")),
]
PYTHON_RULES: list[Rule] = [
    # rebinding an attribute of a module or object the harness uses (json.dumps = ...,
    # st.median = ... through an alias); a statement, so annotations (`x: torch.Tensor = `)
    # do not match; methods' own state (self., ctx., cls.) is fine
    ("rebinding an attribute the harness may read", re.compile(
        r"^\s*(?!(self|ctx|cls)\.)[A-Za-z_]\w*(\.\w+)+\s*(\[[^\]]*\])?\s*=(?!=)")),
    # the same inside a tuple target (`_, ch.reply = 0, wrapper`)
    ("rebinding an attribute the harness may read", re.compile(
        r"^\s*\(?\s*(?:[\w.\[\]]+\s*,\s*)*(?!(self|ctx|cls)\.)[A-Za-z_]\w*(\.\w+)+"
        r"\s*(?:\[[^\]]*\])?\s*(?:,\s*[\w.\[\]]+\s*)*\)?\s*=(?!=)")),
]


# comments, strings and (Python 3.12+) the literal parts of f-strings
PROSE_TOKENS = {tokenize.COMMENT, tokenize.STRING} | (
    {tokenize.FSTRING_MIDDLE} if hasattr(tokenize, "FSTRING_MIDDLE") else set())


def python_code(text: str) -> list[str]:
    """The lines of a Python source with comments and string literals blanked."""
    lines = text.splitlines()
    out = [list(line) for line in lines]
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):  # unparsable: judge it line by line
        return c_like_code(text, "#")
    for tok in tokens:
        if tok.type not in PROSE_TOKENS:
            continue
        if tok.type == tokenize.STRING and "f" in tok.string.split(tok.string[-1], 1)[0].lower():
            continue  # an f-string before 3.12 is one token: its {expressions} are code
        (r0, c0), (r1, c1) = tok.start, tok.end
        for row in range(r0, min(r1, len(out)) + 1):
            line = out[row - 1]
            for i in range(c0 if row == r0 else 0, min(c1 if row == r1 else len(line), len(line))):
                line[i] = " "
    return ["".join(line) for line in out]


def c_like_code(text: str, line_comment: str = "//", keep_strings: bool = False) -> list[str]:
    """The lines of a C/C++/CUDA source with comments and string/char contents blanked
    (``keep_strings``: comments only).

    Preprocessor lines keep their strings (an ``#include "..."`` is code)."""
    out: list[str] = []
    in_block = False
    for line in text.splitlines():
        chars = list(line)
        preprocessor = keep_strings or (line.lstrip().startswith("#") and line_comment == "//")
        quote = ""
        i = 0
        while i < len(chars):
            c = line[i]
            if in_block:
                if line.startswith("*/", i):
                    chars[i] = chars[i + 1] = " "
                    in_block = False
                    i += 2
                    continue
                chars[i] = " "
            elif quote:
                if c == "\\":
                    if not preprocessor:
                        chars[i] = " "
                        if i + 1 < len(chars):
                            chars[i + 1] = " "
                    i += 2
                    continue
                if c == quote:
                    quote = ""
                elif not preprocessor:
                    chars[i] = " "
            elif c in "'\"":
                quote = c
            elif line.startswith(line_comment, i):
                chars[i:] = " " * (len(chars) - i)
                break
            elif line_comment == "//" and line.startswith("/*", i):
                chars[i] = chars[i + 1] = " "
                in_block = True
                i += 2
                continue
            i += 1
        out.append("".join(chars))
    return out


def added_code(path: str, old: bytes | None, new: bytes) -> list[tuple[int, str]]:
    """(1-based number, code-only text) of each line of ``new`` that ``old`` does not contain."""
    before = set((old or b"").decode("utf-8", errors="replace").splitlines())
    text = new.decode("utf-8", errors="replace")
    code = python_code(text) if path.endswith(".py") else c_like_code(text)
    return [(n, code[n - 1]) for n, line in enumerate(text.splitlines(), 1)
            if line not in before]


C_LIKE = (".c", ".cc", ".cpp", ".cxx", ".cu", ".cuh", ".h", ".hh", ".hpp", ".hxx", ".hip",
          ".cl", ".metal", ".inl", ".inc")
STRING_LITERAL = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'')


def _normalized(lines: list[str]) -> list[str]:
    """Each non-empty line with its runs of whitespace made one space, outside strings."""
    out = []
    for line in lines:
        parts, last = [], 0
        for m in STRING_LITERAL.finditer(line):
            parts += [re.sub(r"\s+", " ", line[last:m.start()]), m.group(0)]
            last = m.end()
        text = "".join(parts + [re.sub(r"\s+", " ", line[last:])]).strip()
        if text:
            out.append(text)
    return out


def same_code(path: str, old: bytes | None, new: bytes) -> bool:
    """Whether ``new`` is ``old`` but for comments, blank lines and the amount of whitespace
    (Python: the same syntax tree; C-like: the same lines once comments are gone and each run
    of whitespace outside strings is one space). Another kind of file: never (it cannot tell)."""
    if old is None:
        return False
    before, after = (b.decode("utf-8", errors="replace") for b in (old, new))
    if path.endswith(".py"):
        try:
            return ast.dump(ast.parse(before)) == ast.dump(ast.parse(after))
        except (SyntaxError, ValueError):
            comment = "#"
    elif path.endswith(C_LIKE):
        comment = "//"
    else:
        return False
    return (_normalized(c_like_code(before, comment, keep_strings=True))
            == _normalized(c_like_code(after, comment, keep_strings=True)))


class PolicyGate:
    """Static check of the added code: no vendor libraries, timers, side streams or threads,
    output forging, reaching into the harness, or process/environment tampering. Cheap,
    deterministic, and first in line."""

    name = "policy"
    phase = "candidate"

    def evaluate(self, ctx: GateContext) -> GateResult:
        if ctx.edits and all(same_code(path, ctx.baseline_files.get(path), data)
                             for path, data in ctx.edits.items()):
            files = ", ".join(sorted(ctx.edits))
            return GateResult(self.name, False, f"no code changed: {files} differ from the "
                              "baseline's only in comments or whitespace (a no-op edit can win "
                              "only by noise)", {"findings": ["no code changed"]},
                              failed_verdict=FALLBACK)
        findings = []
        for path, data in sorted(ctx.edits.items()):
            rules = POLICY_RULES + (PYTHON_RULES if path.endswith(".py") else [])
            for number, code in added_code(path, ctx.baseline_files.get(path), data):
                for reason, pattern in rules:
                    match = pattern.search(code)
                    if match:
                        findings.append(f"{path}:{number}: {reason} (`{match.group(0).strip()}`)")
        if findings:
            return GateResult(self.name, False, "; ".join(findings[:5]),
                              {"findings": findings}, failed_verdict=FALLBACK)
        return GateResult(self.name, True, "no forbidden constructs in the added code")
