"""The worker's leak probe (kernelopt_triton.leak): growth in both runs of calls is a leak;
a one-time allocation and an honest launch are not. A counting stand-in for torch.cuda makes
it deterministic on a CPU; tests/faults/triton/leak.py is the real one, on the H200."""

from __future__ import annotations

import pytest
from kernelopt_triton.leak import PROBE_CALLS, leaked_per_call, probe
from kernelopt_triton.loading import ConventionError


class FakeCuda:
    def __init__(self) -> None:
        self.allocated = 1000

    def is_available(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass

    def memory_allocated(self) -> int:
        return self.allocated


class FakeTorch:
    def __init__(self) -> None:
        self.cuda = FakeCuda()


def test_growth_in_both_runs_is_a_leak_and_says_how_much() -> None:
    assert leaked_per_call((0, 3 * 64, 6 * 64)) == 64
    assert leaked_per_call((0, 0, 0)) is None
    assert leaked_per_call((0, 4096, 4096)) is None  # a workspace made once
    assert leaked_per_call((0, 0, 4096)) is None


def test_a_launch_that_keeps_a_tensor_per_call_fails_the_probe() -> None:
    torch = FakeTorch()

    def keeps() -> None:
        torch.cuda.allocated += 1 << 20

    with pytest.raises(ConventionError, match=r"leaks 1048576 bytes of device memory per call"):
        probe(torch, keeps)


def test_an_honest_launch_and_a_one_time_workspace_pass() -> None:
    torch = FakeTorch()
    probe(torch, lambda: None)
    calls = []

    def once() -> None:
        calls.append(1)
        if len(calls) == PROBE_CALLS + 1:  # on whichever call, once
            torch.cuda.allocated += 1 << 30

    probe(torch, once)
    assert len(calls) == 2 * PROBE_CALLS
