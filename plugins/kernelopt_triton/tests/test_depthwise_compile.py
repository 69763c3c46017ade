"""The depthwise choice's launches compiled before the search (depthwise_compile.py), for real:
no GPU here, but Triton's compiler and ptxas are, so the launches compile for an H100 (sm_90)
behind a driver that names that target and runs nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

_PRECOMPILED = """
import json, time
import torch, triton
from triton.backends.compiler import GPUTarget

class H100Target:  # Triton's driver, as far as a compile asks it: the target, no device
    def get_current_target(self):
        return GPUTarget("cuda", 90, 32)
    def get_current_device(self):
        return 0
    def get_current_stream(self, device=None):
        return 0
    def get_active_torch_device(self):
        return torch.device("cpu")

triton.runtime.driver.set_active(H100Target())
from kernelopt_triton.depthwise import Config, depthwise_conv2d_kernel, kernel_call
from kernelopt_triton.depthwise_compile import Job, precompile

def job(n, c, size, k, stride, launch):
    return Job((n, c, size, size), torch.bfloat16, (c, 1, k, k), True, (stride, stride),
               (k // 2, k // 2), (1, 1), launch)

small, wide = Config(block_w=8, block_c=32, num_warps=1), Config(block_w=16, block_c=32, num_warps=2)
jobs = [job(8, 32, 14, 3, 1, small), job(8, 32, 14, 3, 1, wide),
        job(4, 32, 14, 3, 1, small),  # another batch: the same compile
        job(8, 64, 28, 3, 2, small)]  # stride 2: its own
cache = lambda: len(depthwise_conv2d_kernel.device_caches[0][0])
done = precompile(jobs, time.monotonic() + 600, workers=2)
after = cache()
# the call itself, with real tensors (their own addresses): a cache hit, no compile
x = torch.randn(8, 32, 14, 14).to(torch.bfloat16).contiguous(memory_format=torch.channels_last)
w, b = torch.randn(32, 1, 3, 3).to(torch.bfloat16), torch.randn(32).to(torch.bfloat16)
args, constants, grid = kernel_call(x, w, b, (1, 1), (1, 1), (1, 1), wide)
depthwise_conv2d_kernel.run(*args, grid=grid, warmup=True, **constants)
hit = cache() == after
late = precompile([job(8, 32, 14, 5, 1, Config(block_w=w_, block_c=32, num_warps=1))
                   for w_ in (8, 16, 32)], time.monotonic() - 1, workers=1)
# a launch that cannot even be bound (a 3-d input): counted failed, the others go on
unbound = precompile([Job((8, 32, 14), torch.bfloat16, (32, 1, 3, 3), True, (1, 1), (1, 1),
                          (1, 1), small), jobs[0]], time.monotonic() + 600, workers=1)
# the choice's own call: every launch of its search, for a model's two shapes (one compile each)
from kernelopt_triton.depthwise import search_space
from kernelopt_triton.depthwise_timing import Timed, precompile_launches
conv = torch.nn.Conv2d(16, 16, 3, padding=1, groups=16)
timed = [Timed({}, conv, torch.randn(n, 16, 9, 9).to(torch.bfloat16).contiguous(
    memory_format=torch.channels_last), conv.weight.to(torch.bfloat16), None) for n in (2, 3)]
model = precompile_launches(timed, time.monotonic() + 600)
print(json.dumps({"done": done, "cached": after, "hit": hit, "late": late, "model": model,
                  "unbound": unbound,
                  "space": len(search_space())}))
"""


@pytest.mark.slow
def test_every_launch_is_compiled_before_the_search_once_per_compile() -> None:
    """Four jobs, three compiles (a batch size is no compile of its own: Triton's cache key
    decides), compiled on two threads into the kernel's own cache, where the call with real
    tensors finds its launch; with the budget spent before it begins, every launch is left to
    its first use."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", _PRECOMPILED], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["done"]["launches"] == 4 and got["done"]["compiles"] == 3, got
    assert got["done"]["compiled"] == 3 and got["done"]["failed"] == 0
    assert got["done"]["left"] == 0
    assert got["cached"] == 3 and got["hit"]
    assert got["late"] == {"launches": 3,
                           "skipped": "the search's budget was spent before it"}
    unbound = got["unbound"]  # the bound one was compiled above: no new compile
    assert unbound["failed"] == 1 and unbound["compiles"] == 0 and unbound["compiled"] == 0
    assert unbound["first_error"].startswith("RuntimeError: required rank 4")
    # choose_for_model's step: the search's launches (Config() among them) at both shapes
    assert got["model"]["launches"] == 2 * got["space"]
    assert got["model"]["compiles"] == got["space"] == got["model"]["compiled"]
