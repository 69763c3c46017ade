"""``kernelopt init [PATH] [--yes] [--dry-run]``: a kernelopt.toml for a CMake project, found
rather than written by hand.

1. A configure in a scratch build directory, with a CMake File API query: the project's
   targets, their types and sources (the user's tree is never written but for the file).
2. The kernel's sources are the libraries' (else any source with ``__global__`` or
   ``#pragma omp`` outside the test and bench programs); headers are context; the test and
   bench programs' sources are the contract; executables named *test* and *bench* are the
   test and the bench (several: asked; none: asked for its build target); the binaries where
   CMake puts them (the File API's artifacts).
3. Their flags from their own usage text (the seed as spelled there: ``-s SEED``,
   ``--seed=N``, a positional ``seed``; ``--work``), then a smoke baseline: both built, the
   test run on seed 1, the bench once (device code under the GPU lock); the bench's JSON line
   gives the format and, when it says them, the shape and bytes; else its own time line
   (``elapsed: 6.95 ms``, ``0.42 ms/iter``: bench_time.py) gives a bench_regex, checked on
   that output. The sizes it prints (``grid 2048x2048``, ``n=4096``) give the shape and,
   where the test takes them, a shape_test (run once first). The text is read back by the
   descriptor's own loader; only then is kernelopt.toml written. With an LLM key set, one
   cheap request checks the provider a run there would use (a note either way; the
   descriptor does not depend on it).
Knobs are left to auto-detection (a comment says how to declare them). An existing
kernelopt.toml is never overwritten. ``--dry-run`` asks nothing: a choice init would ask
about is marked in the draft it prints, and it then exits as the refusal would (2).
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

from kernelopt_cmake.bench_time import human_time
from kernelopt_cmake.init_draft import (
    Draft,
    Probe,
    checked_descriptor,
    descriptor,
)
from kernelopt_cmake.usage import (
    included_headers,
    printed_sizes,
    proposed_shape,
    read_test_usage,
    shape_arguments,
)
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


def choose(kind: str, names: list[str], yes: bool, draft: Draft) -> str | None:
    """The one program of its kind; several or none: asked, refused with --yes, marked in a
    dry run's draft (which goes on with the first, or without one)."""
    if len(names) == 1:
        return names[0]
    found = ", ".join(names) or "none"
    if yes or draft.dry_run:
        error = UsageError(f"init asks which {kind} program (found: {found})")
        if yes:
            error = UsageError(f"no single {kind} program to take with --yes (found: {found})",
                               hint=f"run without --yes to choose, or name one *{kind}* executable")
        draft.mark(kind, f"CHOOSE: one of {found} (init asks; this draft took {names[0]})"
                   if names else f"CHOOSE: no executable is named *{kind}*: its build target "
                   "(init asks)", error)
        return names[0] if names else None
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


def build_programs(root: Path, build: Path, names: list[str]) -> None:
    for command in cmake_commands(root, root, build, ["-DCMAKE_BUILD_TYPE=Release"],
                                  targets=names)[-1:]:
        result = run_process(command, build / "build.log")
        if not result.ok:
            raise UsageError(f"building {' and '.join(names)} failed: {result.describe()}\n"
                             f"{result.tail()}", hint=f"log: {build / 'build.log'}")


def program(build: Path, path: str) -> Path:
    binary = build / path
    if not binary.exists():
        raise UsageError(f"{binary.name} was built but is not at {binary}",
                         hint="write kernelopt.toml by hand (docs/descriptor.md)")
    return binary


def usage_text(binary: Path, root: Path, device: str | None) -> str:
    result = runs(Command((str(binary), "--help"), root, timeout_s=30), device)
    return result.stdout + result.stderr


def smoke(root: Path, build: Path, found: dict[str, Any], test: str | None, bench: str | None,
          draft: Draft) -> Probe:
    """Both programs built, their flags read from their usage, the test on seed 1, one bench
    (a program still to be chosen is left out: a dry run's draft marks it)."""
    build_programs(root, build, sorted({n for n in (test, bench) if n}))
    device, paths = found["device"], found["artifacts"]
    probe = Probe(paths.get(test, test) if test else None, paths.get(bench, bench) if bench else None)
    argv: tuple[str, ...] = ()
    if probe.test_path:
        test_bin = program(build, probe.test_path)
        probe.usage = read_test_usage(usage_text(test_bin, root, device))
        argv = (str(test_bin), *probe.usage.seed_words("1"))
        result = runs(Command(argv, root, timeout_s=1800), device)
        if not result.ok:
            raise UsageError(f"the test `{' '.join(argv)}` fails on the unmodified project: "
                             f"{result.describe()}\n{result.tail()}",
                             hint="kernelopt optimizes a kernel whose test passes")
    if probe.bench_path:
        bench_bin = program(build, probe.bench_path)
        probe.worked = flag(usage_text(bench_bin, root, device), "--work")
        out = runs(Command((str(bench_bin), *(("--work", "1.0") if probe.worked else ())), root,
                           timeout_s=600), device)
        read_bench(out, str(bench), probe, draft)
        sizes = printed_sizes(out.stdout)
        probe.shape = proposed_shape(sizes, probe.usage)
        if argv:
            probe.shape_args = checked_shape(argv, shape_arguments(probe.usage, sizes), root,
                                             device)
    return probe


def read_bench(out: ProcessResult, bench: str, probe: Probe, draft: Draft) -> None:
    """The bench's time: its one JSON line with time_ms, else its own labelled time line."""
    if not out.ok:
        raise UsageError(f"the bench `{bench}` fails on the unmodified project: "
                         f"{out.describe()}\n{out.tail()}", hint="make the bench run first")
    lines = []
    for text in out.stdout.splitlines():
        with contextlib.suppress(ValueError):
            if text.strip().startswith("{") and isinstance(line := json.loads(text), dict) \
                    and isinstance(line.get("time_ms"), (int, float)):
                lines.append(line)
    human = human_time(out.stdout) if not lines else None
    if len(lines) != 1 and human is None:
        draft.mark("bench_format", "CHOOSE: no one time read from the bench's output: write "
                   "bench_format and bench_regex (docs/descriptor.md)", UsageError(
                       f"the bench `{bench}` printed neither one JSON line with a numeric "
                       "time_ms nor one labelled time (`median = 12.3 us`, `elapsed: 6.9 ms`, "
                       f"`0.42 ms/iter`; two of the same kind are the user's call) ({len(lines)} "
                       f"JSON lines): {out.tail(300)}",
                       hint='print {"kernelopt_bench": 1, "time_ms": ...} once (docs/'
                       "descriptor.md), or write bench_format and bench_regex yourself"))
        return
    probe.line, probe.human = (lines[0] if lines else {}), human


def checked_shape(argv: tuple[str, ...], args: list[str] | None, root: Path,
                  device: str | None) -> list[str] | None:
    """The test at the bench's shape, run in its own process: proposed only if it passes."""
    if args:
        checked = runs(Command((*argv, *args), root, timeout_s=1800), device)
        if not checked.ok:
            note(f"no shape_test: `{' '.join((*argv, *args))}` (the test at the bench's "
                 f"shape) fails on the unmodified project: {checked.describe()}")
            return None
    return args


def warn_unverified(probe: Probe, yes: bool, dry_run: bool) -> None:
    """Said before writing: what no gate will see of the timed shape."""
    if probe.checksum is None and not probe.shape_args:
        # the shape gate needs one of them: without, a real win ends `matched`
        note("this descriptor can end `matched` at best, never `optimized`: the bench reports "
             "no checksum and no shape_test checks the timed shape. Add a shape_test (the test "
             "at the bench's shape: print the sizes as `width=1024` from the bench and take "
             "them in the test), or a checksum (in the bench's JSON line, or `checksum 0.19` "
             "on its time line; docs/descriptor.md)")
        if not yes and not dry_run and not click.confirm("write it all the same?", default=True,
                                                         err=True):
            raise UsageError("nothing written", hint="add a shape_test or a checksum, then "
                             "run kernelopt init again")
    elif not probe.shape_args and probe.human and probe.human.checksum is not None:
        digits = len(re.sub(r"^[-+0.]*|[eE].*$|\.", "", probe.human.checksum))
        if digits < 6:  # rounded to the last digit printed: a correct candidate may differ
            note(f"the bench prints its checksum with {digits} significant digits "
                 f"({probe.human.checksum}); the shape gate compares it within 1e-5 "
                 "(checksum_rtol): print it with more (`%.9g`), or add a shape_test")


@click.command("init")
@click.argument("path", type=click.Path(path_type=Path), default=".")
@click.option("--yes", is_flag=True, help="Take every proposal; fail on what must be asked.")
@click.option("--dry-run", is_flag=True, help="Print the descriptor instead of writing it (a "
              "choice it would ask about is marked, and nothing is written).")
def init_command(path: Path, yes: bool, dry_run: bool) -> None:
    """Write a kernelopt.toml for the CMake project at PATH (default: here), after a smoke
    baseline (build, test, one bench) proved it works."""
    root = path.resolve()
    if not (root / "CMakeLists.txt").exists():
        raise UsageError(f"{root} has no CMakeLists.txt", hint="give a CMake project's root")
    out = root / "kernelopt.toml"
    if out.exists() and not dry_run:
        raise UsageError(f"{out} already exists", hint="edit it, or move it away and run again")
    draft = Draft(dry_run)
    scratch = Path(tempfile.mkdtemp(prefix="kernelopt-init-"))
    try:
        found = classify(root, configure(root, scratch))
        if not found["editable"]:
            raise UsageError(f"{root}: no kernel source found (no library, no __global__ or "
                             "#pragma omp)", hint="write kernelopt.toml by hand "
                             "(docs/descriptor.md)")
        test = choose("test", found["tests"], yes, draft)
        bench = choose("bench", found["benches"], yes, draft)
        if found["test_guessed"]:  # no name says so: its exit code becomes the correctness check
            note(f"taking {test} as the test: the only program beside the bench (its exit "
                 "status decides correctness)")
            if not yes and not dry_run and not click.confirm(f"is {test} the test?",
                                                             default=True, err=True):
                raise UsageError("no test program", hint="name the test's executable *test*")
        probe = smoke(root, scratch, found, test, bench, draft)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    # transpose_bench -> "transpose": the bench's name without its "bench"
    name = re.sub(r"[_-]?bench(mark)?[_-]?", "", bench or "", flags=re.I) or root.name
    text = descriptor(name, found, test, bench, probe, draft)
    if draft.marks:  # a draft, not a descriptor: shown, and refused as the choice would be
        echo(text)
        raise draft.refusal()
    checked_descriptor(text)
    warn_unverified(probe, yes, dry_run)
    reading = (f"{probe.human.value} {probe.human.unit}, read from its own line"
               if probe.human else f"{probe.line['time_ms']} ms")
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
