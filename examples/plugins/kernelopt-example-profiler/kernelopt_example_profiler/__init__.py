"""kernelopt-example-profiler: the ``rusage`` profiler, for benches with no device profiler
to run under (CPU kernels): it wraps the bench in a small runner that records the CPU time
and peak memory of the bench's processes (``getrusage`` of the children), and reports them
as one row, the bench process, with columns of its own.

Choose it with ``kernelopt run PATH --profiler rusage``: the core runs the wrapped bench
after the baseline's readings and again for the winner (never inside a timed window), and
report.md shows a table per profile with this profiler's columns. It imports only
``kernelopt_core.api`` and the standard library.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from kernelopt_core.api import Command, KernelProfile, hookimpl

OUTPUT = "rusage.json"
# Runs the bench as a child, waits, then reads what the children used; its own exit status is
# the bench's, so a failing bench still fails the profile.
RUNNER = """import json, resource, subprocess, sys, time
out, argv = sys.argv[1], sys.argv[2:]
started = time.perf_counter()
code = subprocess.call(argv)
wall = time.perf_counter() - started
used = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(out, "w") as fh:
    json.dump({"argv": argv, "exit": code, "wall_s": wall, "user_s": used.ru_utime,
               "system_s": used.ru_stime, "max_rss_kb": used.ru_maxrss}, fh)
sys.exit(code)
"""


class RusageProfiler:
    name = "rusage"

    def unavailable_reason(self) -> str | None:
        return "rusage needs a POSIX system (the resource module)" if sys.platform == "win32" \
            else None

    def wrap(self, command: Command, out_dir: Path) -> Command:
        return Command((sys.executable, "-c", RUNNER, str(out_dir / OUTPUT), *command.argv),
                       command.cwd, env=command.env, timeout_s=command.timeout_s,
                       label=f"{command.label} under rusage".strip())

    def parse(self, out_dir: Path) -> dict[str, Any]:
        try:
            used = json.loads((out_dir / OUTPUT).read_text())
        except (OSError, ValueError) as exc:
            return {"error": f"rusage wrote no readable {OUTPUT} in {out_dir}: {exc}"}
        name = Path(used["argv"][0]).name if used["argv"] else "bench"
        bench = KernelProfile(name, launches=1, total_us=used["wall_s"] * 1e6, metrics={
            "rusage.cpu_s": used["user_s"] + used["system_s"],
            "rusage.cpu_per_wall": (used["user_s"] + used["system_s"]) / max(used["wall_s"], 1e-9),
            "rusage.max_rss_kb": float(used["max_rss_kb"])})
        return {"tool": self.name, "kernels": [bench.to_json()], "columns": [
            {"header": "CPU s", "metric": "rusage.cpu_s", "fmt": "{:.3f}"},
            {"header": "CPU/wall", "metric": "rusage.cpu_per_wall", "fmt": "{:.2f}"},
            {"header": "peak RSS MiB", "metric": "rusage.max_rss_kb", "scale": 1 / 1024,
             "fmt": "{:.1f}"}]}


@hookimpl
def kernelopt_register_profilers() -> list[RusageProfiler]:
    return [RusageProfiler()]
