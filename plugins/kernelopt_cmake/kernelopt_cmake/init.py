"""``kernelopt init [PATH] [--yes] [--dry-run]``: a kernelopt.toml for a CMake project, found
rather than written by hand.

1. A configure in a scratch build directory, with a CMake File API query: the project's
   targets, their types and sources (the user's tree is never written but for the file).
2. The kernel's sources are the libraries' (else any source with ``__global__`` or
   ``#pragma omp`` outside the test and bench programs); headers are context; the test and
   bench programs' sources are the contract; executables named *test* and *bench* are the
   test and the bench (several: asked; none: asked for its build target); the binaries where
   CMake puts them (the File API's artifacts).
3. Their flags from their own usage text (``--seed``, ``--work``), then a smoke baseline:
   both built, the test run on seed 1, the bench once (device code under the GPU lock); the
   bench's JSON line gives the format and, when it says them, the shape and bytes. The text
   is read back by the descriptor's own loader; only then is kernelopt.toml written. With an
   LLM key set, one cheap request checks the provider a run there would use (a note either
   way; the descriptor does not depend on it).
Knobs are left to auto-detection (a comment says how to declare them). An existing
kernelopt.toml is never overwritten.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import click

from kernelopt_cmake.descriptor import load
from kernelopt_cmake.usage import included_headers, printed_sizes, read_test_usage, shape_arguments
from kernelopt_core.api import (
    Command,
    KerneloptError,
    ProcessResult,
    UsageError,
    check_llm_provider,
    cmake_commands,
    echo,
    note,
    run_on_gpu,
    run_process,
)

CODE = {".c", ".cc", ".cpp", ".cxx", ".cu", ".hip"}
HEADERS = {".h", ".hh", ".hpp", ".cuh"}
KERNEL_MARKS = re.compile(r"__global__|#\s*pragma\s+omp")


def configure(root: Path, build: Path) -> list[dict[str, Any]]:
    """The project's targets from CMake's File API: name, type, sources (relative paths)."""
    query = build / ".cmake" / "api" / "v1" / "query" / "codemodel-v2"
    query.parent.mkdir(parents=True, exist_ok=True)
    query.touch()
    for command in cmake_commands(root, root, build, ["-DCMAKE_BUILD_TYPE=Release"])[:1]:
        result = run_process(command, build / "configure.log")
        if not result.ok:
            raise UsageError(f"{root}: the CMake configure failed: {result.describe()}\n"
                             f"{result.tail()}", hint="make `cmake -S . -B build` work first")
    reply = build / ".cmake" / "api" / "v1" / "reply"
    index_file = next(reply.glob("index-*.json"), None)
    if index_file is None:
        raise UsageError(f"{root}: CMake wrote no File API reply (CMake >= 3.14 writes one)",
                         hint="update CMake, or write kernelopt.toml by hand (docs/descriptor.md)")
    index = json.loads(index_file.read_text())
    codemodel = json.loads((reply / index["reply"]["codemodel-v2"]["jsonFile"]).read_text())
    configs = codemodel["configurations"]
    config = next((c for c in configs if c.get("name") == "Release"), configs[0])
    targets = []
    for ref in config["targets"]:
        data = json.loads((reply / ref["jsonFile"]).read_text())
        # the project's own files: generated ones and those outside its root are not
        sources = [s["path"] for s in data.get("sources", [])
                   if not s.get("isGenerated") and not Path(s["path"]).is_absolute()]
        artifact = next((a["path"] for a in data.get("artifacts", [])), None)
        targets.append({"name": data["name"], "type": data["type"], "sources": sources,
                        "artifact": artifact})
    return targets


def classify(root: Path, targets: list[dict[str, Any]]) -> dict[str, Any]:
    executables = [t for t in targets if t["type"] == "EXECUTABLE"]
    benches = sorted(t["name"] for t in executables if "bench" in t["name"].lower())
    others = [t["name"] for t in executables if t["name"] not in benches]
    # named *test*; else *check* / *verify* / *valid*; else the one program beside the bench
    tests = sorted(n for n in others if "test" in n.lower()) or sorted(
        n for n in others if re.search(r"(?i)check|verif|valid", n))
    guessed = not tests and len(others) == 1  # said, and asked without --yes
    tests = others if guessed else tests
    programs = {s for t in executables if t["name"] in tests + benches for s in t["sources"]}

    def marked(source: str) -> bool:
        path = root / source
        return path.is_file() and bool(KERNEL_MARKS.search(path.read_text(errors="replace")))

    libraries = [t for t in targets if t["type"] in ("STATIC_LIBRARY", "SHARED_LIBRARY",
                                                     "OBJECT_LIBRARY", "MODULE_LIBRARY")]
    owned = sorted({s for t in libraries for s in t["sources"]} - programs)
    # several libraries (a helper, a third-party one): the sources with kernels, if any say so
    owned = [s for s in owned if marked(s)] or owned
    if not any(Path(s).suffix in CODE for s in owned):
        # no library: the sources with kernels, also when the programs compile them directly
        owned = sorted({s for t in targets for s in t["sources"] if marked(s)})
    kernel = set(owned)
    editable = [s for s in owned if Path(s).suffix in CODE]
    listed = [s for s in owned if Path(s).suffix in HEADERS]
    # the headers the kernel includes, listed in CMake or not (most projects do not list them)
    context = listed + included_headers(root, editable, set(listed) | programs)
    return {"editable": editable, "context": context,
            "contract": sorted(programs - kernel), "tests": tests,
            "test_guessed": guessed, "benches": benches,
            "artifacts": {t["name"]: t["artifact"] or t["name"] for t in executables},
            "device": "cuda" if any(s.endswith(".cu") for s in owned) else
                      "hip" if any(s.endswith(".hip") for s in owned) else None}


def choose(kind: str, names: list[str], yes: bool) -> str:
    if len(names) == 1:
        return names[0]
    if yes:
        found = ", ".join(names) or "none"
        raise UsageError(f"no single {kind} program to take with --yes (found: {found})",
                         hint=f"run without --yes to choose, or name one *{kind}* executable")
    if names:
        return str(click.prompt(f"{kind} program", type=click.Choice(names)))
    return str(click.prompt(f"no executable named *{kind}*: the build target of the {kind} "
                            "program"))


def state_root() -> Path:
    """Where the GPU lock lives, as a run would find it ($KERNELOPT_HOME, else .kernelopt)."""
    return Path(os.environ.get("KERNELOPT_HOME") or ".kernelopt").resolve()


def runs(command: Command, device: str | None) -> ProcessResult:
    """A program of the project: under the GPU lock when it runs device code."""
    return run_on_gpu(command, state_root()) if device else run_process(command)


def flag(usage: str, name: str) -> bool:
    """``--seed`` named in a usage text as a whole flag (not ``--seeds``)."""
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", usage) is not None


def smoke(root: Path, build: Path, found: dict[str, Any], test: str,
          bench: str) -> dict[str, Any]:
    """Both programs built, their flags read from their usage, the test on seed 1, one bench."""
    for command in cmake_commands(root, root, build, ["-DCMAKE_BUILD_TYPE=Release"],
                                  targets=sorted({test, bench}))[-1:]:
        result = run_process(command, build / "build.log")
        if not result.ok:
            raise UsageError(f"building {test} and {bench} failed: {result.describe()}\n"
                             f"{result.tail()}", hint=f"log: {build / 'build.log'}")
    device, paths = found["device"], found["artifacts"]
    test_bin, bench_bin = build / paths.get(test, test), build / paths.get(bench, bench)
    for binary in (test_bin, bench_bin):
        if not binary.exists():
            raise UsageError(f"{binary.name} was built but is not at {binary}",
                             hint="write kernelopt.toml by hand (docs/descriptor.md)")

    def usage(binary: Path) -> str:
        result = runs(Command((str(binary), "--help"), root, timeout_s=30), device)
        return result.stdout + result.stderr

    test_usage, worked = read_test_usage(usage(test_bin)), flag(usage(bench_bin), "--work")
    seed_args = {"flag": ("--seed", "1"), "positional": ("1",)}.get(test_usage.seed or "", ())
    argv = (str(test_bin), *seed_args)
    result = runs(Command(argv, root, timeout_s=1800), device)
    if not result.ok:
        raise UsageError(f"the test `{' '.join(argv)}` fails on the unmodified project: "
                         f"{result.describe()}\n{result.tail()}",
                         hint="kernelopt optimizes a kernel whose test passes")
    out = runs(Command((str(bench_bin), *(("--work", "1.0") if worked else ())), root,
                       timeout_s=600), device)
    lines = []
    for text in out.stdout.splitlines():
        with contextlib.suppress(ValueError):
            if text.strip().startswith("{") and isinstance(line := json.loads(text), dict) \
                    and isinstance(line.get("time_ms"), (int, float)):
                lines.append(line)
    human = human_time(out.stdout) if out.ok and not lines else None
    if not out.ok or (len(lines) != 1 and human is None):
        raise UsageError(f"the bench `{bench}` printed neither one JSON line with a numeric "
                         f"time_ms nor one labelled time (`median = 12.3 us`) "
                         f"({out.describe()}; {len(lines)} JSON lines): {out.tail(300)}",
                         hint='print {"kernelopt_bench": 1, "time_ms": ...} once (docs/'
                         "descriptor.md), or write bench_format yourself")
    shape_args = shape_arguments(test_usage, printed_sizes(out.stdout))
    if shape_args:  # the bench's shape, checked by the test in its own process: it must pass
        checked = runs(Command((*argv, *shape_args), root, timeout_s=1800), device)
        if not checked.ok:
            note(f"no shape_test: `{' '.join((*argv, *shape_args))}` (the test at the bench's "
                 f"shape) fails on the unmodified project: {checked.describe()}")
            shape_args = None
    return {"seed": test_usage.seed, "worked": worked, "line": lines[0] if lines else {},
            "human": human, "shape_args": shape_args,
            "test_path": paths.get(test, test), "bench_path": paths.get(bench, bench)}


# a bench's own human line: a label, then the time and its unit (`median= 12.3 us`,
# `mean time: 0.41 ms`); the labels in order of preference (the median is the robust one)
_LABELS = ("median", "mean", "avg", "average", "time", "min")
_TIME = re.compile(r"(?i)\b(median|mean|avg|average|time|min)\b([^0-9.,\n]{0,12}?)"
                   r"([0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)\s*(ns|us|µs|μs|ms|s)\b")
_UNITS = {"ns": "ns", "us": "us", "µs": "us", "μs": "us", "ms": "ms", "s": "s"}


def human_time(stdout: str) -> dict[str, str] | None:
    """The bench_regex and bench_unit for a bench whose time is one labelled number; None when
    no label or a label more than once (which of them is the time is then the user's call)."""
    found = list(_TIME.finditer(stdout))
    for label in _LABELS:
        same = [m for m in found if m.group(1).lower() == label]
        if len(same) > 1:
            return None
        unit = _UNITS.get(same[0].group(4).lower()) if same else None
        if unit is None:
            continue
        m = same[0]
        pattern = (r"\b" + re.escape(m.group(1)) + r"\b"
                   + re.escape(m.group(2)).replace(r"\ ", r"\s*")
                   + r"([0-9.eE+-]+)\s*" + re.escape(m.group(4)) + r"\b")
        # the run reads it with this very regex: exactly one match, the same number
        if [g.group(1) for g in re.finditer(pattern, stdout)] != [m.group(3)]:
            return None
        return {"regex": pattern, "unit": unit, "value": m.group(3)}
    return None


def toml_literal(text: str) -> str:
    """A TOML literal string (no escapes), or a basic one when it holds a quote."""
    plain = "'" not in text and all(ch == "\t" or ord(ch) >= 0x20 for ch in text)
    return f"'{text}'" if plain else json.dumps(text)


def descriptor(name: str, found: dict[str, Any], test: str, bench: str,
               probe: dict[str, Any]) -> str:
    line = probe["line"]

    def strings(values: list[str]) -> str:
        return "[" + ", ".join(json.dumps(v) for v in values) + "]"

    test_cmd = f"{{build}}/{probe['test_path']}" + {"flag": " --seed {seed}",
                                                    "positional": " {seed}"}.get(probe["seed"] or "", "")
    bench_cmd = f"{{build}}/{probe['bench_path']}" + (" --work {work}" if probe["worked"] else "")
    lines = [
        "# kernelopt descriptor written by `kernelopt init` (docs/descriptor.md explains every",
        "# key); checked by a smoke baseline: build, the test on seed 1, one bench.",
        'backend = "cmake"', "", "[build]", 'cmake_args = ["-DCMAKE_BUILD_TYPE=Release"]',
        f"targets = {strings(sorted({test, bench}))}", "", "[[target]]",
        f"name = {json.dumps(name)}",
    ]
    if found["device"]:
        lines.append(f'device = "{found["device"]}"')
    lines += [f"editable = {strings(found['editable'])}   # the kernel: what candidates change",
              f"context = {strings(found['context'])}",
              f"contract = {strings(found['contract'])}   # the test and bench: never edited",
              f"test = {json.dumps(test_cmd)}" + ("" if probe["seed"] else
                                                  "   # no seed in its usage: one fixed input"),
              f"bench = {json.dumps(bench_cmd)}"]
    if probe.get("shape_args"):
        lines.append(f"shape_test = {json.dumps(' '.join([test_cmd, *probe['shape_args']]))}"
                     "   # the test at the shape the bench prints")
    if probe.get("human"):  # the bench's own line, read as it prints it
        human = probe["human"]
        lines += ['bench_format = "regex"   # the bench prints a labelled time, not JSON',
                  f"bench_regex = {toml_literal(human['regex'])}",
                  f"bench_unit = {json.dumps(human['unit'])}"]
    else:
        lines.append('bench_format = "json"')
    if line.get("shape"):
        lines.append(f"shape = {json.dumps(str(line['shape']))}   # as the bench reports it")
    if isinstance(line.get("bytes"), int):
        lines.append(f"bytes = {line['bytes']}   # as the bench reports it (the roofline bound)")
    lines += ["", "# Knobs (#define TILE/BLOCK/UNROLL..., __launch_bounds__) are detected; to fix",
              "# their values: [[target.knobs]] name = \"TILE\" values = [8, 16, 32]", ""]
    return "\n".join(lines)


@click.command("init")
@click.argument("path", type=click.Path(path_type=Path), default=".")
@click.option("--yes", is_flag=True, help="Take every proposal; fail on what must be asked.")
@click.option("--dry-run", is_flag=True, help="Print the descriptor instead of writing it.")
def init_command(path: Path, yes: bool, dry_run: bool) -> None:
    """Write a kernelopt.toml for the CMake project at PATH (default: here), after a smoke
    baseline (build, test, one bench) proved it works."""
    root = path.resolve()
    if not (root / "CMakeLists.txt").exists():
        raise UsageError(f"{root} has no CMakeLists.txt", hint="give a CMake project's root")
    out = root / "kernelopt.toml"
    if out.exists() and not dry_run:
        raise UsageError(f"{out} already exists", hint="edit it, or move it away and run again")
    scratch = Path(tempfile.mkdtemp(prefix="kernelopt-init-"))
    try:
        found = classify(root, configure(root, scratch))
        if not found["editable"]:
            raise UsageError(f"{root}: no kernel source found (no library, no __global__ or "
                             "#pragma omp)", hint="write kernelopt.toml by hand "
                             "(docs/descriptor.md)")
        test, bench = choose("test", found["tests"], yes), choose("bench", found["benches"], yes)
        if found["test_guessed"]:  # no name says so: its exit code becomes the correctness check
            note(f"taking {test} as the test: the only program beside the bench (its exit "
                 "status decides correctness)")
            if not yes and not click.confirm(f"is {test} the test?", default=True, err=True):
                raise UsageError("no test program", hint="name the test's executable *test*")
        probe = smoke(root, scratch, found, test, bench)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    # transpose_bench -> "transpose": the bench's name without its "bench"
    name = re.sub(r"[_-]?bench(mark)?[_-]?", "", bench, flags=re.I) or root.name
    text = descriptor(name, found, test, bench, probe)
    check = Path(tempfile.mkdtemp(prefix="kernelopt-init-check-"))
    try:  # what a run will read: the descriptor's own loader, on the text about to be written
        (check / "kernelopt.toml").write_text(text, encoding="utf-8")
        load(check / "kernelopt.toml")
    finally:
        shutil.rmtree(check, ignore_errors=True)
    if probe["line"].get("checksum") is None and not probe.get("shape_args"):
        # the shape gate needs one of them: without, a real win ends `matched`
        note("this descriptor can end `matched` at best, never `optimized`: the bench reports "
             "no checksum and no shape_test checks the timed shape. Add a shape_test (the test "
             "at the bench's shape: print the sizes as `width=1024` from the bench and take "
             "them in the test), or a checksum in the bench's JSON line (docs/descriptor.md)")
        if not yes and not dry_run and not click.confirm("write it all the same?", default=True,
                                                         err=True):
            raise UsageError("nothing written", hint="add a shape_test or a checksum, then "
                             "run kernelopt init again")
    reading = (f"{probe['human']['value']} {probe['human']['unit']}, read from its own line"
               if probe.get("human") else f"{probe['line']['time_ms']} ms")
    note(f"smoke baseline passed: {test} on seed 1, one {bench} reading ({reading})")
    try:  # the LLM setting a run here would use, while nothing depends on it yet
        answered = check_llm_provider(root)
    except KerneloptError as exc:
        note(f"the LLM provider did not answer ({exc}); until it does, a run with the agents "
             "planner stops with exit 3 (`--planner tuner` needs none)")
    else:
        note(f"LLM provider checked: {answered}" if answered else
             "no LLM key set: runs use the built-in tuner")
    if dry_run:
        echo(text)
        return
    out.write_text(text, encoding="utf-8")
    note(f"wrote {out}; next: kernelopt run {path}")
