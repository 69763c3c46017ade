"""Device facts for the roofline: peak bandwidth measured once per device, and cache size.

The peak is measured in a child process (the process module is the only spawner) and cached
under ``<state root>/device/<key>.json``; ``--peak-gbps`` or ``peak_gbps`` in the descriptor
override it. GPU: a large device-to-device copy through torch (bytes read + written). CPU: a
large memory copy with numpy on every core at once.
"""

from __future__ import annotations

import json
import os
import platform
import re
import sys
from pathlib import Path
from typing import Any

import attrs

from kernelopt_core import process
from kernelopt_core.target import Command

CPU_SCRIPT = r"""
import json, os, time, threading
import numpy as np
threads = os.cpu_count() or 1
n = (256 << 20) // 4 // threads  # 256 MiB per direction in all
src = [np.ones(n, dtype=np.float32) for _ in range(threads)]
dst = [np.empty(n, dtype=np.float32) for _ in range(threads)]
def copy(i):
    np.copyto(dst[i], src[i])
best = float("inf")
for _ in range(12):
    workers = [threading.Thread(target=copy, args=(i,)) for i in range(threads)]
    t0 = time.perf_counter()
    for w in workers: w.start()
    for w in workers: w.join()
    best = min(best, time.perf_counter() - t0)
cache = 0
for index in range(4, -1, -1):
    path = f"/sys/devices/system/cpu/cpu0/cache/index{index}/size"
    if os.path.exists(path):
        text = open(path).read().strip()
        scale = {"K": 1 << 10, "M": 1 << 20}
        cache = int(text[:-1]) * scale[text[-1]] if text[-1] in scale else int(text)
        break
print(json.dumps({"peak_gbps": 2 * n * 4 * threads / best / 1e9, "cache_bytes": cache,
                  "name": "cpu", "method": f"numpy copy, {threads} threads, 2x256 MiB, best of 12"}))
"""

CUDA_SCRIPT = r"""
import json, torch
assert torch.cuda.is_available(), "torch sees no CUDA device"
n = 1 << 30
src = torch.empty(n, dtype=torch.uint8, device="cuda")
dst = torch.empty_like(src)
dst.copy_(src); torch.cuda.synchronize()
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
best = float("inf")
for _ in range(20):
    start.record(); dst.copy_(src); end.record(); end.synchronize()
    best = min(best, start.elapsed_time(end))
props = torch.cuda.get_device_properties(0)
print(json.dumps({"peak_gbps": 2 * n / (best / 1e3) / 1e9, "cache_bytes": props.L2_cache_size,
                  "name": props.name, "method": "torch device-to-device copy, 1 GiB, best of 20"}))
"""


@attrs.frozen
class DeviceInfo:
    name: str
    peak_gbps: float | None
    cache_bytes: int
    method: str
    key: str


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"


def device_key(kind: str) -> str:
    if kind == "cpu":
        raw = f"cpu-{platform.node()}-{_cpu_model()}"
    else:
        raw = f"{kind}-{platform.node()}-{os.environ.get('CUDA_VISIBLE_DEVICES', '0')}"
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", raw)[:100]


def measure(kind: str, cwd: Path) -> dict[str, Any]:
    script = CPU_SCRIPT if kind == "cpu" else CUDA_SCRIPT
    result = process.run(Command((sys.executable, "-c", script), cwd, timeout_s=300,
                                 label="peak bandwidth"))
    if not result.ok:
        return {"error": f"{result.describe()}: {result.tail(400)}"}
    return json.loads(result.stdout.strip().splitlines()[-1])


def device_info(state_root: Path, kind: str, override_gbps: float | None = None) -> DeviceInfo:
    key = device_key(kind)
    cache = state_root / "device" / f"{key}.json"
    from kernelopt_core.lock import gpu_lock

    if cache.exists():
        data = json.loads(cache.read_text())
    else:
        with gpu_lock(state_root):  # a timed measurement: never beside another run's bench
            if cache.exists():  # measured by a concurrent run while we waited
                data = json.loads(cache.read_text())
            else:
                data = measure(kind, state_root)
                if "error" not in data:
                    cache.parent.mkdir(parents=True, exist_ok=True)
                    partial = cache.with_suffix(".tmp")
                    partial.write_text(json.dumps(data, indent=2))
                    os.replace(partial, cache)  # readers never see half a file
    peak = override_gbps if override_gbps else data.get("peak_gbps")
    method = "given by the user" if override_gbps else data.get("method", data.get("error", "?"))
    return DeviceInfo(data.get("name", kind), peak, int(data.get("cache_bytes", 0) or 0), method,
                      key)
