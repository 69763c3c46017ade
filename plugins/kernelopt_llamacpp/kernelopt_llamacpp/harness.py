"""The timed case checked too: test-backend-ops' test mode runs ``make_test_cases_eval()``, and
the op's perf cases (what ``perf`` times) are mostly not among them (SOFT_MAX's
``ne=[4096,4096,5,1]`` is not), so the shape gate could not check the shape the bench timed.

The harness (``Target.harness``: the same file in the baseline's and every candidate's tree,
never a candidate's to edit, never in report.diff) adds, after the eval cases, every perf case
when ``KERNELOPT_TBO_PERF_IN_TEST`` is set. Test mode then selects the pinned perf case by its
full string (``test -o 'OP(params)'``) and compares it with the CPU backend like any other case.
Without the variable the tool behaves as upstream's. A test-backend-ops whose case selection
reads differently gets no harness: the pin then says whether the eval set covers the case.

Cases the perf set lacks (perfcases.py: written from the op's own test struct, e.g. NORM's
at a 7B-class prompt's 4096 × 512, f32) are appended to ``make_test_cases_perf()``."""

from __future__ import annotations

import re

FILE = "tests/test-backend-ops.cpp"
ENV = "KERNELOPT_TBO_PERF_IN_TEST"
# test_backend()'s selection: `test_cases = make_test_cases_eval();` in its MODE_TEST branch
# (not the `auto test_cases = ...` of the coverage listing)
_SELECTION = re.compile(r"^([ \t]*)test_cases = make_test_cases_eval\(\);[ \t]*$", re.M)


_PERF_START = re.compile(r"make_test_cases_perf\(\)\s*\{")
_RETURN = re.compile(r"^([ \t]*)return test_cases;[ \t]*$", re.M)


def _with_extra_perf(text: str, cases: tuple[str, ...]) -> str | None:
    """``cases`` (C++ ``new test_X(...)`` expressions) before the last ``return test_cases;``
    of make_test_cases_perf's body (which ends at the first ``}`` in column 0); None when that
    is not found."""
    start = _PERF_START.search(text)
    end = text.find("\n}\n", start.end()) if start else -1
    if start is None or end < 0:
        return None
    returns = list(_RETURN.finditer(text[start.end():end]))
    if not returns:
        return None
    pad, at = returns[-1].group(1), start.end() + returns[-1].start()
    lines = "".join(f"{pad}test_cases.emplace_back({case});  // kernelopt-llamacpp's harness\n"
                    for case in cases)
    return text[:at] + lines + text[at:]


def patched(text: str, extra_perf: tuple[str, ...] = ()) -> str | None:
    """``text`` (test-backend-ops.cpp) with the perf cases added to test mode under ``ENV``,
    and ``extra_perf`` added to the perf set; None when the selection is not found exactly
    once, or the perf set's end when there are cases to add (another version: no harness)."""
    found = list(_SELECTION.finditer(text))
    if len(found) != 1 or ENV in text:
        return None
    match = found[0]
    pad = match.group(1)
    addition = (
        f"\n{pad}if (mode == MODE_TEST && getenv(\"{ENV}\") != nullptr) {{"
        f"  // kernelopt-llamacpp's harness: the timed cases are checked too\n"
        f"{pad}    for (auto & tc : make_test_cases_perf()) {{\n"
        f"{pad}        test_cases.push_back(std::move(tc));\n"
        f"{pad}    }}\n"
        f"{pad}}}")
    text = text[:match.end()] + addition + text[match.end():]
    return _with_extra_perf(text, extra_perf) if extra_perf else text


def patched_source(source: bytes, extra_perf: tuple[str, ...] = ()) -> str | None:
    """The patched text of test-backend-ops.cpp's bytes; None when it is empty (no file) or
    not UTF-8 (the harness must change nothing but its addition)."""
    try:
        return patched(source.decode("utf-8"), extra_perf)
    except UnicodeDecodeError:
        return None
