"""The process module: timeouts kill the group, output is capped, and no child outlives an
interrupted or killed kernelopt."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelopt_core import process
from kernelopt_core.target import Command


def _alive(marker: str) -> bool:
    return bool(subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout)


def test_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    marker = f"grandchild-{os.getpid()}-{time.time()}"
    script = f"import subprocess, time; subprocess.Popen(['sleep', '30', '{marker}'][:2]); " \
             f"time.sleep(30)  # {marker}"
    result = process.run(Command((sys.executable, "-c", script), tmp_path, timeout_s=0.5))
    assert result.timed_out and result.returncode == 124 and not result.ok
    time.sleep(0.2)
    assert not _alive(marker)


def test_output_is_capped_from_the_middle(tmp_path: Path) -> None:
    script = "import sys; sys.stdout.write('a' * 600000 + 'END')"
    result = process.run(Command((sys.executable, "-c", script), tmp_path))
    assert result.ok and result.stdout.endswith("END") and "bytes cut" in result.stdout
    assert len(result.stdout) < process.OUTPUT_CAP + 100


def test_missing_program_is_reported_not_raised(tmp_path: Path) -> None:
    result = process.run(Command(("no-such-program-xyz",), tmp_path))
    assert result.missing and "not found" in result.describe()


DRIVER = """
import signal, sys, time
from pathlib import Path
signal.signal(signal.SIGINT, signal.default_int_handler)  # even if our parent ignored it
from kernelopt_core import process
from kernelopt_core.target import Command
marker = sys.argv[1]
print("ready", flush=True)
try:
    process.run(Command((sys.executable, "-c", "import time; time.sleep(20)", marker), Path("."),
                        timeout_s=30))
except KeyboardInterrupt:
    sys.exit(130)
"""


@pytest.mark.slow
def test_no_child_survives_sigint_or_sigkill_at_any_moment(tmp_path: Path) -> None:
    """Signals land at random moments around the spawn; the child must never outlive us."""
    rng = random.Random(7)
    for i in range(16):
        marker = f"victim-{os.getpid()}-{i}"
        driver = subprocess.Popen([sys.executable, "-c", DRIVER, marker], stdout=subprocess.PIPE,
                                  text=True, cwd=tmp_path)
        assert driver.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.03))
        driver.send_signal(signal.SIGINT if i % 2 == 0 else signal.SIGKILL)
        driver.wait(timeout=20)
        # the victim sleeps 20 s: still alive after 10 means it outlived its kernelopt; a
        # loaded 2-core machine may take a moment to reap a killed one
        deadline = time.time() + 10
        while _alive(marker) and time.time() < deadline:
            time.sleep(0.05)
        assert not _alive(marker), f"child outlived its kernelopt (case {i})"


def test_a_plugin_wrapper_running_code_under_test_sees_what_it_left_running(tmp_path: Path) -> None:
    """``api.run_process(..., under_test=True)``: what a wrapper's test program (llama.cpp's
    test-backend-ops, NInfer's ctest) leaves running in its session is killed and fails it,
    as the core's own check and bench commands do; a tool run without it is left alone."""
    from kernelopt_core.api import run_process

    marker = f"kernelopt-left-{tmp_path.name}"
    child = f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', 'import time; " \
            f"time.sleep(600)', '{marker}']); print('started')"
    argv = (sys.executable, "-c", child)
    result = run_process(Command(argv, tmp_path, timeout_s=30), under_test=True)
    assert result.returncode == 0 and result.left_running and not result.ok
    assert "left processes running" in result.describe()
    assert not _alive(marker), "the process it left is still running"
