"""Device time of one launch, converging to the kernel's own time (docs/gates.md, "Timing").

Each timed window, on a GPU:

1. outside it: the inputs' values copied in, outputs poisoned, the L2 cache flushed (a buffer
   twice the L2 size zeroed), then a *cushion*: a GPU spin (``torch.cuda._sleep``) longer than
   the host needs to enqueue the launch, so the GPU never idles between the start event and
   the first kernel (the launch's Python cost stays out of the window);
2. start event, ``launch(*args)``, an end event on the current stream, a device-wide
   synchronize, a second end event;
3. after one window in four (the 1st, 5th, 9th...), an empty one (cushion, start event,
   synchronize, end event) measures the fixed cost the synchronize adds.

The current-stream time is the kernel's device time when all work stays on that stream. The
synchronized time less the fixed cost includes every stream's work; when it exceeds the
current-stream time by more than 3 % + 3 µs (work the caller's stream does not see: a side
stream), the synchronized times are reported and the reading says so.

Captured at construction — before any kernel file is imported — as C-level functions and the
stream itself, so a kernel file that patches torch's Python-level events, streams, clock or
synchronize patches copies this module never reads.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

SIDE_REL, SIDE_ABS_MS = 1.03, 0.003  # current-stream vs synchronized: beyond this, a side stream
EMPTY_EVERY = 4  # an empty window (the synchronize's fixed cost) after one timed window in 4
SETTLE_K, SETTLE_REL = 5, 0.01  # warm-up: medians of 5 launches against the 5 before, 1 %
_median, _perf_counter = statistics.median, time.perf_counter


def settled(times: list[float], k: int = SETTLE_K, rel: float = SETTLE_REL) -> bool:
    """The last ``k`` launches are no faster than the ``k`` before them, by medians within
    ``rel``: the clocks have stopped ramping (seen after idle: 0.39, 0.29, 0.27, 0.258, then
    0.257 ms steady)."""
    if len(times) < 2 * k:
        return False
    return _median(times[-k:]) >= _median(times[-2 * k:-k]) * (1.0 - rel)


class Timer:
    def __init__(self, torch: Any, device: str, interpreted: bool) -> None:
        self.device, self.interpreted = device, interpreted
        self.warmed = False
        self.last_used = 0.0  # perf_counter at the end of the last timing
        if interpreted:
            return
        cuda, C = torch.cuda, torch._C
        # the C-level functions and the stream themselves, not Python lookups at call time: a
        # kernel file that rebinds Event.elapsed_time, Event.record, current_stream,
        # synchronize or Tensor.zero_ changes nothing read here (policy bans torch._C)
        stream = cuda.current_stream()
        record = C._CudaEventBase.record
        self._event = cuda.Event
        self._record = lambda event: record(event, stream)
        self._elapsed, self._event_sync = C._CudaEventBase.elapsed_time, C._CudaEventBase.synchronize
        # (the Python wrappers only if a torch lacks these names: the timing stays right, the
        # binding is then as strong as the policy gate)
        self._sync = getattr(C, "_cuda_synchronize", None) or cuda.synchronize
        self._sleep = getattr(C, "_cuda_sleep", None) or cuda._sleep
        self._zero = torch.Tensor.zero_
        props = cuda.get_device_properties(cuda.current_device())
        l2 = int(getattr(props, "L2_cache_size", 0) or (50 << 20))
        self.flush_bytes = max(2 * l2, 64 << 20)
        self._flush = torch.empty(self.flush_bytes, dtype=torch.int8, device="cuda")
        self.cushion_ms = 0.05
        self._calibrate_spin()

    def _calibrate_spin(self) -> None:
        """Cycles of the spin per millisecond, measured: the spin counts SM cycles, so this is
        measured again after the first warm-up, once the clocks have ramped."""
        spins = []
        for _ in range(3):
            start, end = self._event(enable_timing=True), self._event(enable_timing=True)
            self._record(start)
            self._sleep(2_000_000)
            self._record(end)
            self._event_sync(end)
            spins.append(self._elapsed(start, end))
        self.cycles_per_ms = 2_000_000 / max(_median(spins), 1e-6)

    def warm_up(self, prepare: Callable[[], None], launch: Callable[[], None],
                min_ms: float, min_launches: int, max_ms: float | None = None) -> float:
        """Launch until ``min_ms`` of wall time and ``min_launches`` have passed and then, up
        to ``max_ms``, until the launches stop getting faster (``settled``: clocks ramp after
        idle); sets the cushion from the host's enqueue time; returns the median device time
        of the warm-up launches (ms)."""
        host: list[float] = []
        device: list[float] = []
        started = _perf_counter()
        count = 0
        limit_ms = min_ms if max_ms is None else max(max_ms, min_ms)

        def more() -> bool:
            elapsed = (_perf_counter() - started) * 1e3
            if count < min_launches or elapsed < min_ms:
                return True
            return elapsed < limit_ms and not settled(device)

        while more():
            prepare()
            if self.interpreted:
                t0 = _perf_counter()
                launch()
                device.append((_perf_counter() - t0) * 1e3)
            else:
                start, end = self._event(enable_timing=True), self._event(enable_timing=True)
                t0 = _perf_counter()
                self._record(start)
                launch()
                self._record(end)
                host.append((_perf_counter() - t0) * 1e3)
                self._sync()
                device.append(self._elapsed(start, end))
            count += 1
        if host:
            # twice the enqueue time (and at least 30 µs) keeps the GPU busy until the launch
            self.cushion_ms = min(max(2 * _median(host) + 0.02, 0.03), 5.0)
            if not self.warmed:
                self._calibrate_spin()  # at the clocks the timed windows will run at
        self.warmed = True
        return float(_median(device))

    def time(self, prepare: Callable[[], None], launch: Callable[[], None],
             iters: int) -> tuple[list[float], dict[str, Any]]:
        """``iters`` timed windows; per-window times (ms) and how they were taken."""
        if self.interpreted:
            times = []
            for _ in range(iters):
                prepare()
                t0 = _perf_counter()
                launch()
                times.append((_perf_counter() - t0) * 1e3)
            return times, {"timer": "interpreter", "cache_flushed": False}
        cycles = int(self.cushion_ms * self.cycles_per_ms)
        windows, empties = [], []
        for n in range(iters):
            prepare()
            self._zero(self._flush)
            self._sleep(cycles)
            start, current, synced = (self._event(enable_timing=True) for _ in range(3))
            self._record(start)
            launch()
            self._record(current)
            self._sync()  # every stream's work, not only the current stream's
            self._record(synced)
            windows.append((start, current, synced))
            if n % EMPTY_EVERY:
                continue
            self._sleep(cycles)
            e_start, e_end = self._event(enable_timing=True), self._event(enable_timing=True)
            self._record(e_start)
            self._sync()
            self._record(e_end)
            empties.append((e_start, e_end))
        self._sync()
        self.last_used = _perf_counter()
        elapsed = self._elapsed
        on_stream = [elapsed(s, c) for s, c, _ in windows]
        fixed = float(_median([elapsed(s, e) for s, e in empties]))
        synced_times = [elapsed(s, y) - fixed for s, _, y in windows]
        side = _median(synced_times) > _median(on_stream) * SIDE_REL + SIDE_ABS_MS
        info = {"timer": "cuda_event+device_sync" if side else "cuda_event",
                "cache_flushed": True, "sync_fixed_ms": round(fixed, 5),
                "on_stream_ms": round(float(_median(on_stream)), 5),
                "synced_ms": round(float(_median(synced_times)), 5),
                "cushion_ms": round(self.cushion_ms, 4)}
        if side:
            info["side_stream"] = True
        return (synced_times if side else on_stream), info
