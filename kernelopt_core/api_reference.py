"""docs/api-reference.md, generated from the code of the public API (``kernelopt_core.api``):
the fields of its records with their types, defaults and the comments beside them, the
methods of its protocols and the signatures of its functions, each with its docstring.

``python -m kernelopt_core.api_reference > docs/api-reference.md`` writes it, and
``python -m kernelopt_core.api_reference --plugins-doc`` the hooks' signatures in
docs/plugins.md (``hooks``);
tests/test_architecture.py fails when the file is not what this prints, so the reference
cannot drift from the code.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

import attrs

from kernelopt_core import api

# what the reference holds, in the order an author meets it
RECORDS = ("Target", "Knob", "BenchSpec", "Tree", "Command", "Settings", "SearchSettings",
           "GateSettings", "Timeouts", "ScreenOptions", "ConfirmOptions", "ShapeOptions",
           "RooflineOptions", "GateContext",
           "GateResult", "Confirmed", "BenchReading", "BenchLine", "PlanContext", "Budget",
           "Proposal", "Outcome", "Profile", "TunerFrontier", "Node",
           "Screened", "KernelProfile", "MetricColumn", "RecordedProfile", "LLMProvider",
           "DocHit", "Job", "JobResult", "ProcessResult", "Nvcc", "CudaGpu", "RunResult",
           "DeviceInfo")
PROTOCOLS = ("Backend", "ChecksShape", "ChecksSeeds", "BenchesWork", "PairsEngine",
             "ComparesModel", "SplitsPhases", "LabelsKernels", "ProbesCompile",
             "ServesBenchWorker", "DefinesKernels", "Gate", "RequiresGates", "ClaimsSpeedup",
             "Planner", "Exhaustive", "SelectsItself", "UsesPlugins",
             "ChecksInputs", "ChecksProvider", "Profiler", "Executor", "ConfiguresItself",
             "GateServices",
             "EventLog")
FUNCTIONS = ("run", "benches_work", "option", "option_table", "run_process", "run_on_gpu",
             "gpu_lock", "run_command",
             "repo_path", "cmake_commands", "needs_configure", "define_pattern",
             "powers_around", "current_values", "anchored_pattern", "apply_knobs",
             "source_texts", "launch_bounds_knobs", "unroll_knobs", "find_nvcc", "nvcc_version",
             "cuda_kernel_names", "cuda_ledger_build", "cuda_ledger_watch",
             "cuda_gpus", "gpu_arch", "listed_gpus", "visible_gpus", "read_pin", "write_pin",
             "sign_test_p", "cached_device", "ncu_kernels", "last_profile", "check_llm_provider", "read_toml",
             "toml_line",
             "read_dotenv", "echo", "note")
_FIELD = re.compile(r"^    (\w+): ([^=#]+?)(?:\s*=\s*(.*?))?\s*(?:#\s*(.*))?$")


def _doc(obj: Any) -> str:
    text = inspect.getdoc(obj) or ""
    return re.sub(r"``([^`]+)``", r"`\1`", text)  # rST literals as Markdown code


def _field_comments(cls: type) -> dict[str, str]:
    """Each field's comment: the ``#`` lines right above it and the one beside it."""
    comments: dict[str, str] = {}
    above: list[str] = []
    for line in inspect.getsource(cls).splitlines():
        stripped = line.strip()
        if line.startswith("    #"):
            above.append(stripped.lstrip("# "))
            continue
        match = _FIELD.match(line)
        if match and not line.startswith("     "):
            beside = [match.group(4)] if match.group(4) else []
            comments[match.group(1)] = " ".join([*above, *beside])
        above = []
    return comments


def _default(field: attrs.Attribute) -> str:
    default = field.default
    if default is attrs.NOTHING:
        return "required"
    factory = getattr(default, "factory", None)  # attrs.Factory
    if factory is not None:
        return f"`{factory.__name__}()`" if isinstance(factory, type) else "computed"
    if callable(default):
        return "a function"
    return f"`{default!r}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _record(name: str) -> list[str]:
    cls = getattr(api, name)
    comments = _field_comments(cls)
    out = [f"### `{name}`", "", _doc(cls), "", "| field | type | default | what |",
           "|---|---|---|---|"]
    for field in attrs.fields(cls):
        kind = field.type if isinstance(field.type, str) else getattr(field.type, "__name__",
                                                                      str(field.type))
        out.append(f"| `{field.name}` | `{_cell(str(kind))}` | {_cell(_default(field))} | "
                   f"{_cell(comments.get(field.name, ''))} |")
    return [*out, ""]


def _signature(name: str, function: Callable[..., Any]) -> str:
    parts = []
    for param in inspect.signature(function, eval_str=False).parameters.values():
        if param.name == "self":
            continue
        text = param.name
        if param.kind is param.VAR_POSITIONAL:
            text = "*" + text
        elif param.kind is param.VAR_KEYWORD:
            text = "**" + text
        if param.annotation is not param.empty:
            text += f": {param.annotation}"
        if param.default is not param.empty:
            text += f" = {param.default!r}"
        parts.append(text)
    returns = inspect.signature(function, eval_str=False).return_annotation
    arrow = f" -> {returns}" if returns is not inspect.Signature.empty else ""
    return f"{name}({', '.join(parts)}){arrow}"


def _protocol(name: str) -> list[str]:
    cls = getattr(api, name)
    out = [f"### `{name}`", "", _doc(cls), ""]
    for member, value in vars(cls).items():
        if member.startswith("_") or not callable(value) and not isinstance(value, property):
            continue
        function = value.fget if isinstance(value, property) else value
        if function is None:
            continue
        out += [f"- `{_signature(member, function)}`" + (f": {_doc(function)}" if _doc(function)
                                                          else "")]
    return [*out, ""]


def _function(name: str) -> list[str]:
    function = getattr(api, name)
    return [f"### `{_signature(name, function)}`", "", _doc(function), ""]


def render() -> str:
    lines = ["# The public API: reference", "",
             "Generated from the code of `kernelopt_core.api` by `python -m "
             "kernelopt_core.api_reference > docs/api-reference.md` (a test keeps it current). "
             "docs/plugins.md says how the pieces fit; this file lists them.", "",
             "## Records", ""]
    for name in RECORDS:
        lines += _record(name)
    lines += ["## Protocols", ""]
    for name in PROTOCOLS:
        lines += _protocol(name)
    lines += ["## Functions", ""]
    for name in FUNCTIONS:
        lines += _function(name)
    text = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", text).rstrip() + "\n"


HOOKS_START, HOOKS_END = "<!-- hooks: generated by kernelopt_core.api_reference -->", "<!-- hooks end -->"


def hooks() -> str:
    """Every hook a plugin may implement (``kernelopt_*`` in hookspecs.py): its signature and
    docstring, the block docs/plugins.md holds between HOOKS_START and HOOKS_END."""
    from kernelopt_core import hookspecs

    lines = [HOOKS_START, ""]
    for name, function in vars(hookspecs).items():
        if name.startswith(hookspecs.PROJECT + "_") and callable(function):
            lines += [f"- `{_signature(name, function)}`: {_cell(_doc(function))}"]
    return "\n".join([*lines, "", HOOKS_END])


def with_hooks(doc: str) -> str:
    """docs/plugins.md's text with its hooks block as hookspecs.py says it."""
    start, end = doc.index(HOOKS_START), doc.index(HOOKS_END) + len(HOOKS_END)
    return doc[:start] + hooks() + doc[end:]


if __name__ == "__main__":
    import sys
    from pathlib import Path

    if sys.argv[1:] == ["--plugins-doc"]:  # rewrite docs/plugins.md's hooks block in place
        doc = Path(__file__).resolve().parents[1] / "docs" / "plugins.md"
        doc.write_text(with_hooks(doc.read_text(encoding="utf-8")), encoding="utf-8")
    else:
        sys.stdout.write(render())
