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
at a 7B-class prompt's 4096 × 512, f32) are appended to ``make_test_cases_perf()``.

Seeded inputs: upstream draws every tensor's values from ``std::random_device``, so no two runs
see the same inputs, and a case whose error sits near its tolerance fails now and then on any
build (an H100's MUL_MAT q4_1 case, ERR 0.00061 > 0.0005, once in nine runs of three builds that
never reach its kernel). With ``KERNELOPT_TBO_SEED`` set, init_tensor_uniform's values are a
function of that seed, the tensor's name, type, shape and offset in its buffer (unnamed operands
of one shape differ) and the chunk (the chunks then follow the tensor's own size, not the first
tensor's a process initialized nor the host's core count): the baseline and every candidate are
checked on the same uniform inputs for a seed, whatever the host's cores (with the same C++
standard library and backend; tbo check gives run n seed n). The
tool's other draws (attention masks, index tensors, ``rand()``) stay random. Without the
variable, or in a version whose init_tensor_uniform reads differently, the draws come from
``std::random_device`` as upstream's."""

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


SEED_ENV = "KERNELOPT_TBO_SEED"
_INIT = re.compile(r"^static void init_tensor_uniform\(ggml_tensor \* tensor\b", re.M)
_DRAW = "thread_local std::default_random_engine gen(std::random_device{}());"
_STATIC_THREADS = "static const size_t n_threads"
_HOST_CAP = "std::min<size_t>(4, N_THREADS/2)"
_FIXED_CAP = "std::min<size_t>(4, 4)"  # the cap of a host with 8 or more hardware threads
_SEED_FUNCTION = f"""// kernelopt-llamacpp's harness: with {SEED_ENV} set, a tensor's values are a
// function of the seed, its name, type, shape and place in its buffer and the chunk (the same
// inputs in every build)
static unsigned kernelopt_tbo_seed(const ggml_tensor * tensor, size_t start) {{
    const char * seed = getenv("{SEED_ENV}");
    if (seed == nullptr) {{
        return std::random_device{{}}();
    }}
    uint64_t h = 1469598103934665603ull ^ strtoull(seed, nullptr, 10);
    auto mix = [&h](uint64_t v) {{ h ^= v; h *= 1099511628211ull; }};
    for (const char * p = ggml_get_name(tensor); *p; ++p) {{
        mix((uint8_t) *p);
    }}
    for (int i = 0; i < GGML_MAX_DIMS; ++i) {{
        mix((uint64_t) tensor->ne[i]);
    }}
    mix((uint64_t) tensor->type);
    if (tensor->buffer != nullptr && tensor->data != nullptr) {{  // unnamed operands of one shape
        mix((uint64_t) ((const char *) tensor->data
                        - (const char *) ggml_backend_buffer_get_base(tensor->buffer)));
    }}
    mix((uint64_t) start);
    return (unsigned) (h ^ (h >> 32));
}}

"""


def with_seeded_inputs(text: str) -> str:
    """init_tensor_uniform's draws seeded by ``SEED_ENV`` (module docstring); ``text`` as it was
    where the function or its one draw is not found exactly once (another version)."""
    found = list(_INIT.finditer(text))
    if len(found) != 1:
        return text
    body_end = text.find("\n}\n", found[0].end())
    draws = text.count(_DRAW, found[0].end(), body_end)
    if body_end < 0 or draws != 1:
        return text
    at = text.index(_DRAW, found[0].end(), body_end)
    seeded = "std::default_random_engine gen(kernelopt_tbo_seed(tensor, start));"
    text = text[:at] + seeded + text[at + len(_DRAW):]
    # the chunks (one seed each) from this tensor's size, not from the first tensor a process
    # initialized (upstream's count is static: a shard's or worker's first case would set it)
    static = text.find(_STATIC_THREADS, found[0].end(), body_end)
    if static >= 0:
        text = text[:static] + "const size_t n_threads" + text[static + len(_STATIC_THREADS):]
    # nor from the host's cores: upstream caps the chunks at N_THREADS/2 (hardware threads), so
    # a seed gave other values on a 16-core GPU machine than on a 2-core one (2026-12-07)
    body_end = text.find("\n}\n", found[0].end())
    cap = text.find(_HOST_CAP, found[0].end(), body_end)
    if cap >= 0:  # absent in another version: still seeded, its chunks as that version splits
        text = text[:cap] + _FIXED_CAP + text[cap + len(_HOST_CAP):]
    return text[:found[0].start()] + _SEED_FUNCTION + text[found[0].start():]


def seeds_inputs(text: str) -> bool:
    """Whether a (patched) test-backend-ops.cpp draws its inputs from ``SEED_ENV``."""
    return "kernelopt_tbo_seed(tensor, start)" in text


def patched(text: str, extra_perf: tuple[str, ...] = ()) -> str | None:
    """``text`` (test-backend-ops.cpp) with the perf cases added to test mode under ``ENV``,
    its inputs seeded by ``SEED_ENV`` where it can be (with_seeded_inputs), and ``extra_perf``
    added to the perf set; None when the selection is not found exactly once, or the perf set's
    end when there are cases to add (another version: no harness)."""
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
    text = with_seeded_inputs(text[:match.end()] + addition + text[match.end():])
    return _with_extra_perf(text, extra_perf) if extra_perf else text


def patched_source(source: bytes, extra_perf: tuple[str, ...] = ()) -> str | None:
    """The patched text of test-backend-ops.cpp's bytes; None when it is empty (no file) or
    not UTF-8 (the harness must change nothing but its addition)."""
    try:
        return patched(source.decode("utf-8"), extra_perf)
    except UnicodeDecodeError:
        return None
