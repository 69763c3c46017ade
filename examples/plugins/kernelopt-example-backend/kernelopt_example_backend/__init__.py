"""kernelopt-example-backend: the ``scriptdir`` backend, for a directory that holds a Python
kernel (``kernel.py``), its seeded correctness test (``check.py --seed N --build DIR``) and
its bench (``bench.py BUILD_DIR [WORK]``, printing kernelopt's JSON line).

The smallest complete backend. It *describes* each step as a command and the core spawns it
(timeouts, logs, the GPU lock and profilers stay in one place). The tuner's knobs are the
kernel's module constants marked ``# knob`` (``CHUNK = 1  # knob``). It imports only
``kernelopt_core.api`` and the standard library.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from kernelopt_core.api import (
    BenchSpec,
    Command,
    Knob,
    Settings,
    Target,
    Tree,
    UsageError,
    hookimpl,
)

FILES = ("kernel.py", "check.py", "bench.py")
KNOB = re.compile(r"^([A-Z][A-Z0-9_]*) = (\d+)  # knob$", re.M)
POWERS = tuple(str(1 << i) for i in range(11))  # a knob's values: 1, 2, 4 ... 1024
COPY = "import shutil, sys; shutil.copy(sys.argv[1], sys.argv[2])"


def is_project(path: Path) -> bool:
    return path.is_dir() and all((path / name).is_file() for name in FILES)


class ScriptDirBackend:
    name = "scriptdir"

    def detect(self, path: Path) -> float:
        # 0 = not mine; a descriptor-backed backend (cmake: kernelopt.toml) answers higher
        return 0.5 if is_project(path) else 0.0

    def discover(self, path: Path, settings: Settings) -> list[Target]:
        root = path.resolve()
        if not is_project(root):
            raise UsageError(f"{root} is not a scriptdir project",
                             hint=f"put {', '.join(FILES)} side by side in one directory")
        source = (root / "kernel.py").read_text(encoding="utf-8")
        knobs = tuple(Knob(name, "kernel.py", POWERS, rf"^{name} = (\d+)  # knob$")
                      for name, value in KNOB.findall(source))
        # shape and bytes come from the bench's JSON line ("shape", "bytes")
        return [Target(self.name, root.name, root, editable=("kernel.py",),
                       contract=("check.py", "bench.py"), knobs=knobs,
                       bench=BenchSpec(format="json"))]

    def build(self, target: Target, tree: Tree) -> list[Command]:
        # "building" a Python kernel is copying it into the tree's build directory
        return [Command((sys.executable, "-c", COPY, str(tree.src / "kernel.py"),
                         str(tree.build / "kernel.py")), tree.src, timeout_s=60)]

    def check(self, target: Target, tree: Tree, seed: int) -> Command:
        return Command((sys.executable, str(tree.src / "check.py"), "--seed", str(seed),
                        "--build", str(tree.build)), tree.src, timeout_s=120)

    def bench(self, target: Target, tree: Tree, work: float = 1.0) -> Command | None:
        # ``work`` < 1: `kernelopt gate-selftest` plants a truly faster candidate
        return Command((sys.executable, str(tree.src / "bench.py"), str(tree.build), str(work)),
                       tree.src, timeout_s=120)

    def engine(self, target: Target, tree: Tree) -> Command | None:
        return None  # no whole program around this kernel


@hookimpl
def kernelopt_register_backends() -> list[ScriptDirBackend]:
    return [ScriptDirBackend()]
