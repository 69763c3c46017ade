"""The sweep's compile pool for real: spawned processes that import each configuration's file
and launch it once (here under Triton's interpreter, where there is nothing to compile, so what
is tested is the pool: its start, its deadline and what it reports)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from kernelopt_triton.precompile import Precompiler, pool_size
from kernelopt_triton_testpaths import EXAMPLES

pytestmark = pytest.mark.usefixtures("small")


def test_pool_launches_each_configuration_and_fails_only_the_stuck_one(tmp_path: Path) -> None:
    original = tmp_path / "vecadd.py"
    shutil.copy(EXAMPLES / "vecadd.py", original)
    text = original.read_text()
    variants = []
    for n, tail in enumerate((
        "",  # compiles and runs
        "\ndef launch(*args):\n    raise RuntimeError('no launch')\n",  # the worker meets it
        "\nimport time as _t\n_t.sleep(120)\n",  # stuck past the deadline
    )):
        path = tmp_path / f"vecadd_v{n}.py"
        path.write_text(text + tail)
        variants.append((path, f"sweep{n}"))
    pool = Precompiler(original, seed=0, processes=3)
    try:
        # a fresh pool: its start (torch imported in each process) is not held to the deadline
        first = pool.run(variants[:2] + variants[:1], deadline_s=None)
        verdicts = pool.run([variants[2], variants[0]], deadline_s=10.0)
        stopped = pool._pool is None  # the stuck process was killed with its pool
        again = pool.run([variants[0]], deadline_s=None)  # and a new one starts
    finally:
        pool.close()
    # a launch that raises is left for the worker to meet and report (advisory)
    assert first == [None, None, None]
    assert verdicts[0] is not None and "more than 10 s" in verdicts[0]
    assert verdicts[1] is None
    # no word of the worker's deadline: a stuck pool compile does not retire the worker
    from kernelopt_core.sweep_protocol import POISONING

    assert not POISONING.search(verdicts[0])
    assert stopped and again == [None]


def test_a_configuration_queued_behind_a_stuck_one_is_left_to_the_worker(tmp_path: Path) -> None:
    original = tmp_path / "vecadd.py"
    shutil.copy(EXAMPLES / "vecadd.py", original)
    stuck, queued, fine = (tmp_path / f"vecadd_v{n}.py" for n in range(3))
    stuck.write_text(original.read_text() + "\nimport time as _t\n_t.sleep(120)\n")
    queued.write_text(original.read_text())
    fine.write_text(original.read_text())
    pool = Precompiler(original, seed=0, processes=2)
    try:
        assert pool.run([(fine, "sweep9"), (fine, "sweep9")], deadline_s=None) == [None, None]
        # two processes, both stuck: the third configuration never starts in the pool
        verdicts = pool.run([(stuck, "sweep0"), (stuck, "sweep1"), (queued, "sweep2")],
                            deadline_s=5.0)
    finally:
        pool.close()
    assert verdicts[0] and verdicts[1] and "more than 5 s" in verdicts[0]
    assert verdicts[2] is None  # not failed untried


def test_pool_size_leaves_two_cores_and_never_exceeds_eight() -> None:
    assert 1 <= pool_size() <= 8


def test_a_pool_started_in_the_background_reports_its_ready_processes(tmp_path: Path) -> None:
    original = tmp_path / "vecadd.py"
    shutil.copy(EXAMPLES / "vecadd.py", original)
    pool = Precompiler(original, seed=0, processes=2)
    try:
        assert pool.ready() == 0  # no pool yet
        pool.start()  # returns at once: the processes import torch on their own
        ready_dir = pool._ready_dir
        deadline = time.monotonic() + 300
        while pool.ready() < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert pool.ready() == 2
        assert pool.run([(original, "sweep0")], deadline_s=None) == [None]
    finally:
        pool.close()
    assert pool.ready() == 0 and ready_dir is not None and not ready_dir.exists()
    one = Precompiler(original, seed=0, processes=1)
    one.start()  # one process compiles no faster than the worker: no pool
    assert one._pool is None and one.run([(original, "sweep0")], None) == [None]
