"""The compile probe (kernelopt_core/knob_probe.py): each knob value's translation units
compiled alone, ``python -m kernelopt_llamacpp.probe --build B --src S --dir D --tu REL ...``.

For every variant in ``D/variants.json`` (its edited files under ``D/<id>/``), each of the op's
``.cu`` files is compiled with its own command from ``B/compile_commands.json`` (CMake's
export): the source read from the variant's copy (the original copied beside the edited
files when the variant did not edit it), so a quoted include of an edited header finds the
edited one first and every other header is found in the original directory (an ``-I`` added
after the command's own); the object and dependency outputs go under ``D``, never into the
build. nvcc stops at a static_assert in a second or two; a whole candidate build of the tree
takes minutes. Prints ``{"kernelopt_probe": 1, "results": {id: {"ok", "error"}}}``.

With ``--pin`` (the pinned case, whose ``dispatched`` kernels ncu read when the pin was made:
tbo.dispatch_profile), a variant that changes none of those kernels (reach.py: cpy.cu's
``CUDA_CPY_BLOCK_SIZE`` where the pinned case launches ``cpy_scalar_transpose``) is rejected
first, without compiling, with an error that names what it changes and what the case launches.
A knob given with ``--compiles`` (a selection cap: its values are its switch's cases, each
compiled in every build, dispatch_knobs.py) is judged by that reach check alone, never compiled.

Each translation unit is also compiled unedited, the same way, in the same batch as the
values: if that fails (a header the machine lacks, a command this rewrite cannot redirect) the
probe exits 1 and judges nothing, so the core keeps every value. The compiles run at once, one
per CPU, as the jobs of one ninja child (no threads: a child started from several threads at
once is not safe with the core's process start-up); without ninja on PATH, one after another.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

from kernelopt_core.api import Command, run_process

# flags whose value names an output: dropped with the value (separate, joined or after "=")
_VALUED = ("-o", "-MF", "-MT", "-MQ", "--output-file", "--dependency-output")
_DEPENDENCY_FLAGS = {"-MD", "-MMD", "--generate-dependencies-with-compile",
                     "--generate-nonsystem-dependencies-with-compile"}


class Unredirectable(Exception):
    """A command whose outputs this rewrite cannot be sure to redirect."""


def compile_argv(entry: dict[str, Any], source: Path, obj: Path) -> list[str]:
    """``entry``'s compiler command, reading ``source`` and writing only ``obj``."""
    args = entry.get("arguments") or shlex.split(entry["command"])
    original = Path(entry["directory"], entry["file"]).resolve()
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg.startswith("@") or arg in ("--options-file", "-optf"):
            raise Unredirectable(f"{arg}: flags read from a file")
        if arg in _VALUED:
            skip = True
            continue
        if arg in _DEPENDENCY_FLAGS or any(arg.startswith(f + "=") for f in _VALUED) or any(
                arg.startswith(f) and len(arg) > len(f) for f in ("-o", "-MF", "-MT", "-MQ")):
            continue
        looks_like_source = not arg.startswith("-") and arg.endswith(original.name)
        if looks_like_source and Path(entry["directory"], arg).resolve() == original:
            arg = str(source)
        out.append(arg)
    return [*out, f"-I{original.parent}", "-o", str(obj)]


def _first_error(output: str) -> str:
    errors = [line for line in output[-4000:].splitlines() if "error" in line.lower()]
    return (errors[0] if errors else output[-300:]).strip()


JOB_LIMIT_S = 600  # one compile; past it the value is not judged


def _compile_all(jobs: dict[str, tuple[dict[str, Any], Path, Path]],
                 scratch: Path) -> dict[str, tuple[bool | None, str]]:
    """Each job (its compile command's entry, the source to read, the object to write)
    compiled, as (ok, first error line); ok is None when the compile did not finish (killed,
    timed out, never started): that says nothing of the value. The jobs are independent: with
    ninja on PATH they run at once, one per CPU, from one ninja child (a 16-core H200 probed
    ROPE's five values one after another in 60 s); without it, one after another."""
    ninja = shutil.which("ninja")
    if ninja is None or len(jobs) < 2:
        out: dict[str, tuple[bool | None, str]] = {}
        for key, (entry, source, obj) in jobs.items():
            result = run_process(Command(tuple(compile_argv(entry, source, obj)),
                                         Path(entry["directory"]), timeout_s=JOB_LIMIT_S,
                                         label=f"probe {source.name}"))
            finished = not (result.timed_out or result.missing) and 0 <= result.returncode < 128
            out[key] = (result.ok if finished else None, _first_error(result.tail(4000)))
        return out
    scratch.mkdir(parents=True, exist_ok=True)
    edges = ["rule job\n  command = sh $in\n"]
    for n, (entry, source, obj) in enumerate(jobs.values()):
        argv = shlex.join(["timeout", "-s", "KILL", str(JOB_LIMIT_S),
                           *compile_argv(entry, source, obj)])
        (scratch / f"job{n}.sh").write_text(  # no status file: not judged
            f"cd {shlex.quote(entry['directory'])} || exit 0\n{argv} > "
            f"{shlex.quote(str(scratch / f'job{n}.log'))} 2>&1\n"
            f"echo $? > {shlex.quote(str(scratch / f'job{n}.status'))}\n")
        edges.append(f"build job{n}.status: job job{n}.sh\n")
    (scratch / "build.ninja").write_text("".join(edges))
    result = run_process(Command((ninja, "-C", str(scratch), "-k", "0", "-j",
                                  str(max(1, min(len(jobs), os.cpu_count() or 1)))),
                                 scratch, timeout_s=JOB_LIMIT_S * len(jobs),
                                 label="probe (ninja)"))
    out = {}
    for n, key in enumerate(jobs):
        status, log = scratch / f"job{n}.status", scratch / f"job{n}.log"
        text = log.read_text(errors="replace") if log.is_file() else ""
        code = status.read_text().strip() if status.is_file() else ""
        if not code.isdigit() or int(code) >= 124:  # timeout's 124/137, a signal, no status
            out[key] = (None, _first_error(text or result.tail(4000)))
        else:
            out[key] = (code == "0", _first_error(text))
    return out


def unreached(src: Path, probe_dir: Path, variants: list[dict[str, Any]], pin: Path | None,
              tus: list[str]) -> dict[str, dict[str, Any]]:
    """Variants whose edits change none of the kernels the pinned case launches (the pin's
    ``dispatched``, reach.py): not candidates, so rejected without compiling."""
    from kernelopt_llamacpp.reach import Reach, dispatched_instance

    try:
        dispatched = json.loads(pin.read_text()).get("dispatched") if pin else None
    except (OSError, ValueError):
        dispatched = None
    if not dispatched:
        return {}
    launched = sorted({dispatched_instance(k.get("kernel") or k["function"], k["function"])
                       for k in dispatched})
    # the edited files and the op's translation units (a header's define is used in the .cu)
    files = sorted({rel for v in variants for rel in v["files"]} | set(tus))
    reach = Reach({rel: (src / rel).read_text(encoding="utf-8", errors="replace") for rel in files
                   if (src / rel).is_file()})
    out: dict[str, dict[str, Any]] = {}
    for variant in variants:
        touched: set[str] = set()
        for rel in variant["files"]:
            changed = reach.touched(rel, (probe_dir / variant["id"] / rel).read_text(
                encoding="utf-8", errors="replace"))
            if changed is None:
                break
            touched |= changed
        else:
            if touched and not any(reach.may_run(t, k) for t in touched for k in launched):
                out[variant["id"]] = {"ok": False, "error": (
                    f"changes only {', '.join(sorted(touched))}; the pinned case launches "
                    f"{', '.join(launched)} (not a candidate: it cannot change the time)")}
    return out


def probe(build: Path, src: Path, probe_dir: Path, tus: list[str],
          pin: Path | None = None, compiles: frozenset[str] = frozenset()) -> dict[str, Any]:
    """``compiles``: knobs whose every value compiles in every build (a selection cap's switch
    cases, dispatch_knobs.py): judged by the reach check alone, never compiled."""
    database = json.loads((build / "compile_commands.json").read_text())
    entries = {Path(e["directory"], e["file"]).resolve(): e for e in database}
    variants = json.loads((probe_dir / "variants.json").read_text())
    rejected = unreached(src, probe_dir, variants, pin, tus)
    known = {v["id"]: {"ok": True} for v in variants
             if v["id"] not in rejected and v["knob"] in compiles}
    variants = [v for v in variants if v["id"] not in rejected and v["id"] not in known]
    if not variants:
        return {**rejected, **known}
    missing = [tu for tu in tus if (src / tu).resolve() not in entries]
    if missing:
        raise SystemExit(f"probe: no compile command for {', '.join(missing)} in "
                         f"{build / 'compile_commands.json'}")

    def job(root: Path, tu: str) -> tuple[dict[str, Any], Path, Path]:
        """``tu`` compiled from ``root`` (the original copied there unless the variant edited it)."""
        copy = root / tu
        if not copy.exists():
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src / tu, copy)
        return entries[(src / tu).resolve()], copy, root / (tu + ".o")

    # the unedited files beside the values, in the same batch (one compile's wall, not two):
    # if one of them fails, the failure is the machine's, not a value's, and nothing is judged
    compiled = _compile_all({**{f"v0\t{tu}": job(probe_dir / "v0", tu) for tu in tus},
                             **{f"{v['id']}\t{tu}": job(probe_dir / v["id"], tu)
                                for v in variants for tu in tus}}, probe_dir / "jobs")
    for tu in tus:
        ok, error = compiled[f"v0\t{tu}"]
        if not ok:
            raise SystemExit(f"probe: the unedited {tu} does not compile this way, so no value "
                             f"is judged: {error}")
    results: dict[str, dict[str, Any]] = {**rejected, **known}
    for variant in variants:
        got = {tu: compiled[f"{variant['id']}\t{tu}"] for tu in tus}
        failed = [(tu, error) for tu, (ok, error) in got.items() if ok is False]
        if failed:
            results[variant["id"]] = {"ok": False, "error": f"{failed[0][0]}: {failed[0][1]}"[:500]}
        elif all(ok for ok, _ in got.values()):
            results[variant["id"]] = {"ok": True}
        # else a compile did not finish: no result, so the core keeps the value
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernelopt_llamacpp.probe")
    parser.add_argument("--build", type=Path, required=True)
    parser.add_argument("--src", type=Path, required=True)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--tu", action="append", default=[], help="an op .cu, relative to --src")
    parser.add_argument("--pin", type=Path, help="the pin file: its `dispatched` kernels")
    parser.add_argument("--compiles", action="append", default=[],
                        help="a knob whose every value compiles (reach check only; repeatable)")
    a = parser.parse_args(argv)
    try:
        results = probe(a.build, a.src, a.dir, a.tu, a.pin, frozenset(a.compiles))
    except Unredirectable as exc:
        raise SystemExit(f"probe: {exc}: cannot compile a value without touching the build") \
            from exc
    print(json.dumps({"kernelopt_probe": 1, "results": results}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
