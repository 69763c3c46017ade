"""The ``cmake`` backend: a project that declares build, test and bench in kernelopt.toml."""

from __future__ import annotations

import shlex
from pathlib import Path

from kernelopt_cmake.descriptor import FILENAME, Descriptor, TargetSpec, load
from kernelopt_core.api import (
    BenchSpec,
    Command,
    Knob,
    Settings,
    Target,
    Tree,
    UsageError,
    cmake_commands,
    cuda_kernel_names,
    cuda_ledger_build,
    cuda_ledger_watch,
    define_pattern,
)


def descriptor_path(path: Path) -> Path | None:
    if path.is_file() and path.name == FILENAME:
        return path
    if path.is_dir() and (path / FILENAME).is_file():
        return path / FILENAME
    return None


def _expand(template: str, values: dict[str, str]) -> tuple[str, ...]:
    """Split like a shell (no shell runs), then fill placeholders in each word."""
    try:
        words = shlex.split(template)
    except ValueError as exc:
        raise UsageError(f"command {template!r} does not parse: {exc}") from exc
    out = []
    for word in words:
        try:
            out.append(word.format(**values))
        except (KeyError, IndexError) as exc:
            raise UsageError(
                f"command {template!r}: unknown placeholder {exc}",
                hint="placeholders are {repo} {build} {seed} {out} {work}; {{ }} is a literal brace",
            ) from None
    return tuple(out)


def _device_of(files: list[str]) -> str:
    if any(f.endswith((".cu", ".cuh")) for f in files):
        return "cuda"
    if any(f.endswith(".hip") for f in files):
        return "hip"
    return "cpu"


class CMakeBackend:
    name = "cmake"

    def kernel_names(self, target: Target, files: dict[str, bytes]) -> dict[str, str]:
        """The CUDA/HIP kernels the files define (the backend kit's ``__global__`` reader)."""
        return cuda_kernel_names(files)

    def detect(self, path: Path) -> float:
        found = descriptor_path(path)
        if found is None:
            return 0.0
        head = found.read_text(encoding="utf-8", errors="replace")
        # on docs/plugins.md's scale: a CMakeLists.txt beside it or a [build] table are our
        # marker files (0.9); [[target]] tables alone, a command-based project we can run
        # (0.5); any other kernelopt.toml only generically (0.1), below a backend of its own
        if (found.parent / "CMakeLists.txt").exists() or "[build]" in head:
            return 0.9
        return 0.5 if "[[target]]" in head or "[target]" in head else 0.1

    def discover(self, path: Path, settings: Settings) -> list[Target]:
        found = descriptor_path(path)
        if found is None:
            raise UsageError(
                f"no {FILENAME} at {path}",
                hint=f"write a {FILENAME} describing build, test and bench (docs/descriptor.md)",
            )
        descriptor = load(found, settings.owned_tables())
        root = found.parent.resolve()
        return [self._target(root, descriptor, spec) for spec in descriptor.target]

    def _target(self, root: Path, descriptor: Descriptor, spec: TargetSpec) -> Target:
        knobs = []
        for k in spec.knobs:
            file = k.file or spec.editable[0]
            if file not in spec.editable:
                raise UsageError(
                    f"{root / FILENAME}: knob {k.name!r} is in {file!r}, which is not editable",
                    hint="a knob's file must be listed in the target's `editable`",
                )
            knobs.append(Knob(k.name, file, tuple(str(v) for v in k.values),
                              k.pattern or define_pattern(k.name)))
        bench = None
        if spec.bench:
            bench = BenchSpec(spec.bench_format, spec.bench_column, spec.bench_regex,
                              spec.bench_unit)
        return Target(
            backend=self.name,
            name=spec.name,
            root=root,
            editable=tuple(spec.editable),
            context=tuple(spec.context),
            contract=tuple(spec.contract),
            shape=spec.shape,
            bytes_moved=spec.bytes,
            flops=spec.flops,
            knobs=tuple(knobs),
            bench=bench,
            device=spec.device or _device_of(spec.editable),
            peak_gbps=spec.peak_gbps,
            data=(descriptor, spec),
        )

    # ------------------------------------------------------------------ commands
    def _values(self, tree: Tree, seed: int | None = None, work: float = 1.0) -> dict[str, str]:
        out = tree.build / "kernelopt-out"
        out.mkdir(parents=True, exist_ok=True)
        values = {"repo": str(tree.src), "build": str(tree.build), "out": str(out),
                  "work": repr(work)}
        if seed is not None:
            values["seed"] = str(seed)
        return values

    def _command(self, template: str, tree: Tree, timeout: float, label: str,
                 seed: int | None = None, work: float = 1.0) -> Command:
        return Command(_expand(template, self._values(tree, seed, work)), cwd=tree.src,
                       timeout_s=timeout, label=label)

    def build(self, target: Target, tree: Tree) -> list[Command]:
        descriptor, _spec = target.data
        b = descriptor.build
        # a CUDA target's test runs with the device-memory ledger (the kit's): built once
        ledger = cuda_ledger_build(tree) if target.device == "cuda" else None
        first = [ledger] if ledger is not None else []
        if b.commands:
            return first + [self._command(c, tree, b.timeout_s, "build") for c in b.commands]
        return first + cmake_commands(
            tree.src, tree.src / b.source_dir, tree.build,
            [a.format(**self._values(tree)) for a in b.cmake_args], targets=b.targets,
            generator=b.generator, jobs=b.jobs, configure_timeout_s=b.timeout_s,
            build_timeout_s=b.timeout_s)

    def check(self, target: Target, tree: Tree, seed: int) -> Command:
        """The test; a CUDA target's with the ledger loaded: a candidate that holds device
        memory per call beyond the baseline's fails it (docs/faults.md)."""
        _descriptor, spec = target.data
        command = self._command(spec.test, tree, spec.timeout_s, "test", seed)
        return cuda_ledger_watch(command, tree, seed) if target.device == "cuda" else command

    def bench(self, target: Target, tree: Tree, work: float = 1.0) -> Command | None:
        """``work`` fills {work}: the fraction of the work a planted gate-self-test candidate
        does; benches without the placeholder cannot plant one."""
        _descriptor, spec = target.data
        if not spec.bench:
            return None
        if work != 1.0 and "{work}" not in spec.bench:
            raise UsageError(
                f"target {spec.name!r}: the bench command has no {{work}} placeholder",
                hint="add `--work {work}` (or similar) to `bench` so the gate self-test can "
                "plant a candidate doing a fraction of the work",
            )
        return self._command(spec.bench, tree, spec.timeout_s, "bench", work=work)

    def shape_check(self, target: Target, tree: Tree, seed: int) -> Command | None:
        _descriptor, spec = target.data
        if not spec.shape_test:
            return None
        return self._command(spec.shape_test, tree, spec.timeout_s, "shape test", seed)

    def engine(self, target: Target, tree: Tree) -> Command | None:
        _descriptor, spec = target.data
        return self._command(spec.engine, tree, spec.timeout_s, "engine") if spec.engine else None
