"""A sweep's configurations compiled before the GPU lock (compile_ahead.py): the core asks
first without the lock, then sweeps under it. Under the interpreter there is nothing to
compile (the protocol is what is tested); on a GPU (the H200 runs: `python -m bench run search
gpu-tests`) the kernels are compiled without a launch and the sweep times the compiled modules."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from kernelopt_triton.backend import TritonBackend, gpu_device
from kernelopt_triton_testpaths import EXAMPLES

from kernelopt_core.journal import Journal
from kernelopt_core.runner import Runner
from kernelopt_core.settings import Settings
from kernelopt_core.target import Tree

pytestmark = pytest.mark.usefixtures("small")


@pytest.mark.slow
def test_the_compile_request_goes_first_and_outside_the_gpu_lock(tmp_path: Path) -> None:
    tree = Tree("baseline", tmp_path / "tree", tmp_path / "build")
    tree.src.mkdir()
    shutil.copy(EXAMPLES / "softmax.py", tree.src / "softmax.py")
    settings = Settings(state_root=tmp_path / "state", seeds=(1,))
    target = TritonBackend().discover(tree.src / "softmax.py", settings)[0]
    runner = Runner(TritonBackend(), target, settings, Journal(tmp_path / "journal.jsonl"))
    knob = next(k.name for k in target.knobs if k.name.startswith("BLOCK_SIZE"))
    try:
        results = runner.sweep(tree, [{knob: "64"}, {knob: "3"}], tmp_path / "log")
    finally:
        runner.close_workers()
    assert results is not None and results[0]["ok"] and not results[1]["ok"]
    requests = [e for e in map(json.loads, (tmp_path / "journal.jsonl").read_text().splitlines())
                if e["event"] == "worker_request"]
    ops = [(e["op"], e["gpu_lock"]) for e in requests]
    assert ops[-2:] == [("compile", False), ("sweep", True)]
    assert all(e["ok"] for e in requests)


@pytest.mark.skipif(gpu_device() is None, reason="compiling for a GPU needs one")
def test_kernels_are_compiled_without_a_launch_and_the_sweep_uses_them(tmp_path: Path) -> None:
    from kernelopt_triton.harness import Session

    path = tmp_path / "softmax.py"
    shutil.copy(EXAMPLES / "softmax.py", path)
    session = Session(path, None, (1,))
    source = path.read_text()
    configs = [{"files": {"softmax.py": source.replace("BLOCK_SIZE=128", f"BLOCK_SIZE={b}")}}
               for b in (256, 512)]
    assert all(c["files"]["softmax.py"] != source for c in configs)
    try:
        session._use(0)  # the outputs poisoned (NaN)
        output = session.args[session.spec["outputs"][0]]
        reply = session.compile(configs, deadline_s=120.0)
        session.torch.cuda.synchronize()
        assert reply == {"compiled": 2, "stuck": 0, "left": {}}  # none left to the sweep
        assert bool(session.torch.isnan(output).all())  # nothing ran: still all poison
        assert session.ahead is not None
        modules = list(session.ahead.modules.values())
        # each module's kernel is in its JIT cache: the sweep's launch compiles nothing
        assert all(any(cache[0] for cache in m.softmax_kernel.device_caches.values())
                   for m in modules)
        swept = session.sweep(configs)
    finally:
        session.close()
    assert [r["ok"] for r in swept["results"]] == [True, True]
    assert session.ahead is None  # the sweep took them; the files are gone


@pytest.mark.slow
def test_nothing_runs_on_the_device_while_compiling_ahead() -> None:
    """The guard, on torch's meta device (a device that is not the CPU, on any machine):
    allocation and views pass; a fill, a copy or an autotuner is refused, so that
    configuration is left to the sweep (under the lock)."""
    import torch
    from kernelopt_triton.compile_ahead import NotAhead, _compile_only
    from triton.runtime.autotuner import Autotuner

    with _compile_only():
        x = torch.empty(4, 8, device="meta")
        y = x.view(8, 4).t()
        assert y.shape == (4, 8)
        torch.zeros(3).add_(1)  # CPU work is not device work
        for device_work in (lambda: torch.zeros(3, device="meta"), lambda: x.fill_(1.0),
                            lambda: x.clone(), lambda: x + 1):
            with pytest.raises(NotAhead):
                device_work()
        with pytest.raises(NotAhead, match="autotuner"):
            Autotuner.run(object())
    torch.zeros(3, device="meta").fill_(1.0)  # the guard is gone after the block


def test_a_stuck_compile_fails_alone_and_what_waits_behind_it_is_left_to_the_sweep() -> None:
    import threading

    from kernelopt_triton.compile_ahead import CompileAhead, _Timed

    release = threading.Event()
    executor = _Timed(1)  # one thread: the second task queues behind the first
    stuck = executor.submit(release.wait, 60)
    queued = executor.submit(lambda: None)
    try:
        CompileAhead._wait(executor, [stuck, queued], deadline_s=0.2)
        assert stuck.running()  # past its deadline, still compiling: stuck
        assert queued.cancelled()  # never started: left to the sweep, not failed
    finally:
        release.set()
    executor = _Timed(2)
    done = executor.submit(lambda: 7)
    CompileAhead._wait(executor, [done], deadline_s=5.0)
    assert done.result() == 7
