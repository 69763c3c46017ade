"""An NInfer checkout: recognised by its layout, and its op table built from files and CMake.

NInfer's responsibility chain for one op (its docs/op-development.md, §5)::

    include/ninfer/ops/<family>.h     contract        (read-only: the op's semantics)
    src/ops/wrapper/<family>.cpp      validation, dispatch                (context)
    src/ops/launcher/<name>.cu + .h   grid/block/shared-memory policy     (editable)
    src/ops/kernel/<name>*.cuh        __global__/__device__ code          (editable)
    src/ops/common/                   math/memory/warp/MMA primitives     (context)
    tests/ops/test_<op>.cpp, bench/ops/<op>_bench.cu                      (contract)

Names do not match one to one (silu_mul's wrapper includes ``ops/launcher/silu_and_mul.h``,
whose launcher includes ``ops/kernel/silu_and_mul.cuh``; gated_rmsnorm is served by the
rmsnorm wrapper), so the table follows the files themselves: the ops are the CMake targets
``ninfer_<op>_test`` / ``ninfer_<op>_bench`` (cmakelists.py), the contract headers are the
``ninfer/ops/*.h`` the test includes, the wrapper is the one implementing such a header, the
launchers are what the wrapper includes, the kernels what the launchers include.

``python -m kernelopt_ninfer.layout REPO`` prints the table (markdown).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import attrs

from kernelopt_ninfer.cmakelists import Registration, options, registrations

OPS_INCLUDE = "include/ninfer/ops"
WRAPPER, LAUNCHER, KERNEL, COMMON = ("src/ops/wrapper", "src/ops/launcher", "src/ops/kernel",
                                     "src/ops/common")
MARKERS = (OPS_INCLUDE, WRAPPER, LAUNCHER, KERNEL, COMMON, "tests/ops", "bench/ops")
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)
C_LIKE = (".h", ".hpp", ".cuh", ".cu", ".cpp", ".cc", ".inl")


@attrs.frozen
class Op:
    """One op's row of the table; paths relative to the tree's root."""

    name: str
    test: str | None  # the CMake/CTest target ninfer_<op>_test
    bench: str | None  # ninfer_<op>_bench
    headers: tuple[str, ...] = ()
    wrappers: tuple[str, ...] = ()
    launchers: tuple[str, ...] = ()
    kernels: tuple[str, ...] = ()
    common: tuple[str, ...] = ()
    test_sources: tuple[str, ...] = ()
    bench_sources: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # how a row departs from the plain layout

    @property
    def editable(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.launchers + self.kernels))

    @property
    def context(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.wrappers + self.common))

    @property
    def contract(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.headers + self.test_sources + self.bench_sources))


def confidence(root: Path) -> float:
    """How sure we are that ``root`` is an NInfer tree: 0 without its CMakeLists.txt and
    include/ninfer/ops/; then more for each of the other layout markers and NINFER_BUILD_*."""
    cmake = root / "CMakeLists.txt"
    if not root.is_dir() or not cmake.is_file() or not (root / OPS_INCLUDE).is_dir():
        return 0.0
    hits = sum((root / marker).is_dir() for marker in MARKERS)
    hits += any(name.startswith("NINFER_BUILD_")
                for name in options(cmake.read_text(encoding="utf-8", errors="replace")))
    return round(0.3 + 0.65 * hits / (len(MARKERS) + 1), 3)


def _text(root: Path, rel: str) -> str:
    try:
        return (root / rel).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def includes(root: Path, rel: str) -> list[str]:
    """The quoted #includes of ``rel`` that resolve to files of the tree (NInfer includes from
    src/ and include/, e.g. ``ops/kernel/rmsnorm.cuh``), relative to the root, in order."""
    out = []
    here = (root / rel).parent
    for name in INCLUDE.findall(_text(root, rel)):
        for base in (here, root / "src", root / "include", root):
            path = base / name
            if path.is_file():
                try:
                    out.append(path.resolve().relative_to(root.resolve()).as_posix())
                except ValueError:
                    break
                break
    return out


def _files(root: Path, folder: str, suffixes: tuple[str, ...] = C_LIKE) -> list[str]:
    base = root / folder
    if not base.is_dir():
        return []
    return sorted(p.relative_to(root).as_posix() for p in base.rglob("*")
                  if p.is_file() and p.suffix in suffixes)


def _closure(root: Path, start: list[str], inside: str) -> list[str]:
    """``start`` and every file under ``inside`` they include, transitively."""
    seen: list[str] = []
    todo = list(start)
    while todo:
        rel = todo.pop(0)
        if rel in seen:
            continue
        seen.append(rel)
        todo += [f for f in includes(root, rel) if f.startswith(inside + "/") and f not in seen]
    return seen


def _stem(rel: str) -> str:
    return Path(rel).name.split(".", 1)[0]


def _headers(root: Path, op: str, sources: tuple[str, ...]) -> list[str]:
    own = f"{OPS_INCLUDE}/{op}.h"
    found = [own] if (root / own).is_file() else []
    for source in sources:
        found += [f for f in includes(root, source) if f.startswith(OPS_INCLUDE + "/")]
    return list(dict.fromkeys(found))


def _wrappers(root: Path, op: str, headers: list[str]) -> list[str]:
    """The wrapper named after the op, else the ones whose first contract include is one of
    the op's headers (a wrapper includes the contract it implements first), else any that
    includes one."""
    own = f"{WRAPPER}/{op}.cpp"
    if (root / own).is_file():
        return [own]
    first, any_ = [], []
    for wrapper in _files(root, WRAPPER, (".cpp", ".cc", ".cu")):
        contracts = [f for f in includes(root, wrapper) if f.startswith(OPS_INCLUDE + "/")]
        if contracts and contracts[0] in headers:
            first.append(wrapper)
        elif set(contracts) & set(headers):
            any_.append(wrapper)
    return first or any_


def _launchers(root: Path, op: str, wrappers: list[str]) -> tuple[list[str], list[str]]:
    """(launcher files, notes): the launcher headers the wrappers include and the .cu files
    implementing them."""
    notes: list[str] = []
    headers = [f for w in wrappers for f in includes(root, w) if f.startswith(LAUNCHER + "/")]
    if not headers:
        headers = [f for f in (f"{LAUNCHER}/{op}.h",) if (root / f).is_file()]
        if wrappers:
            notes.append(f"{', '.join(wrappers)} includes no launcher header: took {op}.*")
    found = list(dict.fromkeys(headers))
    sources = _files(root, LAUNCHER, (".cu", ".cpp"))
    for header in found[:]:
        stem = _stem(header)
        for source in sources:
            first = next(iter(includes(root, source)), None)
            # named after the header, or including it first (NInfer's convention: a .cu
            # includes its own header first); a prefix (rmsnorm_rope.cu) is another op's
            if (_stem(source) == stem or first == header) and source not in found:
                found.append(source)
    if not any(f.endswith((".cu", ".cpp")) for f in found):
        own = [s for s in sources if _stem(s) == op]
        found += own
        if own and headers:
            notes.append(f"no launcher source includes {', '.join(headers)}: took {op}.cu")
    return found, notes


def _kernels(root: Path, op: str, launchers: list[str]) -> tuple[list[str], list[str]]:
    direct = [f for launcher in launchers for f in includes(root, launcher)
              if f.startswith(KERNEL + "/")]
    if direct:
        return _closure(root, list(dict.fromkeys(direct)), KERNEL), []
    guessed = [f for f in _files(root, KERNEL, (".cuh", ".h", ".cu")) if _stem(f).startswith(op)]
    notes = [f"the launchers include no kernel file: took {KERNEL}/{op}*"] if guessed else []
    return _closure(root, guessed, KERNEL), notes


def _op_of(target: str, kind: str) -> str | None:
    match = re.fullmatch(rf"ninfer_(\w+?)_{kind}", target)
    return match.group(1) if match else None


def op_table(root: Path) -> dict[str, Op]:
    """Every op with a registered test or bench program, by name."""
    tests, benches = registrations(root)
    test_of: dict[str, Registration] = {}
    bench_of: dict[str, Registration] = {}
    for reg in tests:
        op = _op_of(reg.target, "test")
        if op and any(s.startswith("tests/ops/") for s in reg.sources):
            test_of.setdefault(op, reg)
    for reg in benches:
        op = _op_of(reg.target, "bench")
        if op:
            bench_of.setdefault(op, reg)
    common = tuple(_files(root, COMMON))
    table: dict[str, Op] = {}
    for name in sorted(set(test_of) | set(bench_of)):
        test, bench = test_of.get(name), bench_of.get(name)
        test_sources = test.sources if test else ()
        bench_sources = bench.sources if bench else ()
        headers = _headers(root, name, test_sources + bench_sources)
        wrappers = _wrappers(root, name, headers)
        launchers, notes = _launchers(root, name, wrappers)
        kernels, more = _kernels(root, name, launchers)
        table[name] = Op(name, test.target if test else None, bench.target if bench else None,
                         tuple(headers), tuple(wrappers), tuple(launchers), tuple(kernels), common,
                         tuple(s for s in test_sources if (root / s).is_file()),
                         tuple(s for s in bench_sources if (root / s).is_file()),
                         tuple(notes + more))
    return table


def optimizable(table: dict[str, Op]) -> list[str]:
    """Ops the loop can run: a test to check them and files to edit."""
    return sorted(name for name, op in table.items() if op.test and op.editable)


def why_not(op: Op) -> str | None:
    if op.test is None:
        return f"{op.name} has a bench ({op.bench}) but no test program ninfer_{op.name}_test"
    if not op.editable:
        return f"no launcher or kernel file was found for {op.name}"
    return None


def override(root: Path, op: Op, editable: tuple[str, ...] | None,
             context: tuple[str, ...] | None) -> Op:
    """The row with the user's file lists in place of the found ones (checked to exist)."""
    for given in (editable or ()) + (context or ()):
        path = (root / given).resolve()
        if Path(given).is_absolute() or not path.is_relative_to(root.resolve()) or not path.is_file():
            raise ValueError(f"{given!r} is not a file inside {root}")
    contract = set(op.contract)
    clash = sorted(set(editable or ()) & contract)
    if clash:  # the test, its oracle and the bench are what a candidate is judged by
        raise ValueError(f"{', '.join(clash)} is contract (the op's header, test or bench) "
                         "and cannot be editable")
    if editable:
        op = attrs.evolve(op, launchers=tuple(editable), kernels=(),
                          notes=op.notes + ("editable files given by the user",))
    if context:
        op = attrs.evolve(op, wrappers=tuple(context), common=(),
                          notes=op.notes + ("context files given by the user",))
    return op


def markdown(table: dict[str, Op]) -> str:
    rows = ["| op | test | bench | editable | context (wrapper) | contract headers | notes |",
            "|---|---|---|---|---|---|---|"]
    for name, op in sorted(table.items()):
        rows.append(f"| {name} | {op.test or '-'} | {op.bench or '-'} | "
                    f"{', '.join(op.editable) or '-'} | {', '.join(op.wrappers) or '-'} | "
                    f"{', '.join(op.headers) or '-'} | {'; '.join(op.notes) or ''} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: python -m kernelopt_ninfer.layout NINFER_TREE  (prints the op table)",
              file=sys.stderr)
        return 2
    root = Path(args[0])
    if confidence(root) == 0.0:
        print(f"kernelopt-ninfer: {root} is not an NInfer tree", file=sys.stderr)
        return 2
    print(markdown(op_table(root)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
