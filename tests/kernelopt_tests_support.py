"""Helpers the repository's tests share (a module of its own: `from conftest import` is
ambiguous when pytest collects the plugins' tests beside these)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def kernelopt(*args: str, cwd: Path, env: dict[str, str] | None = None,
              timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """The real CLI in a child process, as a user runs it."""
    full_env = {**os.environ, **(env or {})}
    full_env.pop("KERNELOPT_HOME", None)
    return subprocess.run([sys.executable, "-m", "kernelopt_core.cli", *args], cwd=cwd,
                          env=full_env, capture_output=True, text=True, timeout=timeout)


def last_run(state_root: Path) -> Path:
    runs = sorted((state_root / "runs").iterdir())
    return runs[-1]


def summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def events(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]


def records(*made: Any) -> list[dict]:
    """Journal records as ``Journal.record`` writes them: each event (a
    ``kernelopt_core.events`` class, so whole) with its kind and a time, one second apart; a
    dict (a plugin's kind, or a deliberately torn record) as given."""
    from kernelopt_core.events import Event

    return [{"event": e.EVENT, "t": float(i), **e.data()} if isinstance(e, Event) else e
            for i, e in enumerate(made)]


def run_header(target: dict[str, Any], settings: dict[str, Any] | None = None) -> Any:
    """A run's header event (``events.Run``) for ``target`` (its journal's ``target`` dict),
    the rest of it as a run on this machine writes it."""
    from kernelopt_core import events

    return events.Run(schema=1, run_id="r", kernelopt="test", argv=["run", "."],
                      cwd=str(REPO), host="test-host", platform=sys.platform, pid=os.getpid(),
                      target=target, settings=settings or {}, origins={})


# A bench wrapper for a copy of the CPU example: the real transpose_bench runs (its checksum,
# shape and bytes are kept) but its time_ms is replaced by a deterministic model of the knobs
# in the tree's kernel.cpp (TILE, UNROLL) times --work. For tests whose subject is the loop's
# logic (resume, revert, campaigns, plugins), not the timing: the build is real CMake, the
# verdict does not depend on the machine's load. README's main-job test and the gate
# self-tests keep the real clock.
# One timed call and no warmup (as test_tuner_ranges.py's MODEL_BENCH): the median they would
# time is replaced anyway, and the full-shape verification call after them (the checksum) runs
# as ever; 0.25 s a bench instead of 1.3 s on the 2-core machine, ~10 benches a run.
COUNTED_TRANSPOSE_BENCH = '''import json, math, re, subprocess, sys
from pathlib import Path
repo, build, work = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])
done = subprocess.run([str(build / "transpose_bench"), "--work", str(work), "--iters", "1",
                       "--warmup", "0"], capture_output=True, text=True)
sys.stderr.write(done.stderr)
if done.returncode != 0:
    sys.exit(done.returncode)
line = json.loads(done.stdout.strip().splitlines()[-1])
source = (repo / "kernel.cpp").read_text()
knob = {name: int(re.search(rf"^#define {name} (\\d+)", source, re.M).group(1))
        for name in ("TILE", "UNROLL")}
line["time_ms"] = (80.0 / math.sqrt(min(knob["TILE"], 16))
                   * (1.0 - 0.02 * math.log2(max(knob["UNROLL"], 1))) * work)
print(json.dumps(line))
'''


def counted_cpu_example(dest: Path) -> Path:
    """A copy of examples/cmake-cpu at ``dest`` whose bench is COUNTED_TRANSPOSE_BENCH."""
    import shutil

    shutil.copytree(REPO / "examples" / "cmake-cpu", dest)
    (dest / "counted_bench.py").write_text(COUNTED_TRANSPOSE_BENCH)
    toml = dest / "kernelopt.toml"
    text = toml.read_text()
    real = 'bench = "{build}/transpose_bench --work {work}"'
    assert real in text, "examples/cmake-cpu/kernelopt.toml's bench line changed"
    toml.write_text(text.replace(
        real, f'bench = "{sys.executable} -S {{repo}}/counted_bench.py {{repo}} {{build}} {{work}}"'))
    return dest


def install_plugin(site: Path, dist: str, module: str, body: str) -> None:
    """An installed distribution as importlib.metadata reads one (dist-info and module) in
    ``site``, its module registered under the ``kernelopt`` entry-point group."""
    info = site / f"{dist.replace('-', '_')}-0.3.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.3\n")
    (info / "entry_points.txt").write_text(f"[kernelopt]\n{module} = {module}\n")
    (site / f"{module}.py").write_text(body)
