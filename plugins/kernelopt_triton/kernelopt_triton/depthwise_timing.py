"""A depthwise convolution's GPU time, the library's call against kernelopt's kernel
(depthwise.py), without the host, and the choice between them per shape.

Why not do_bench: the op's call goes through the dispatcher, the triton_op's Python body, the
weights' copy and Triton's Python launcher. On an H100 (2026-12-07) ConvNeXt-T's 14×14 shape
read 0.131–0.164 ms for every one of 19 launches (spreads to 9 %, cuDNN's 0.15 %), "0.40× of
cuDNN" alone, while the whole model, replayed as CUDA graphs, ran 1.096× faster with every
such call swapped (bench/results/2026-12-07-h100-depthwise-kernel): the host's time, we
think, not the GPU's — this module measures the GPU's. Here each side is a CUDA graph of ``PER_GRAPH`` × (L2
flush, call) and a third graph holds the flushes alone; a round replays the flushes' graph,
then the sides in turn (their order reversed every round), and a side's time is (its replay −
the flushes' median replay) / ``PER_GRAPH``: the GPU's time per call, the L2 cold, no host in
it. On a device without CUDA
graphs (the CPU: the tests) a round is the median of ``PER_GRAPH`` calls on the host's clock.

A shape takes the kernel only where its fastest launch beat the library by the rounds
(rounds.faster_by_rounds, as the model check reads a rival compile: past its band, or a sign
test over rounds won); else the library stays — on MobileNetV3's 3×3/5×5 shapes cuDNN ran at
0.7–2.2 TB/s and swapping every call made the model 0.83× (same results folder).

The module imports torch: only the processes that run a model load it.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import attrs
import torch

from kernelopt_triton.depthwise import Config
from kernelopt_triton.rounds import faster_by_rounds, paired

PER_GRAPH = 20  # calls (each after an L2 flush) in one graph: one replay is one reading
FLUSH_MIN_BYTES = 64 * 2**20  # the flush: twice the device's L2, at least this (H100: 50 MiB)


@attrs.frozen
class Choice:
    """One shape's decision: the fastest launch, both sides' times per round (ms), whether
    the kernel takes the shape and why, and every launch tried with its time (ms)."""

    key: str
    launch: Config
    library_ms: list[float]
    kernel_ms: list[float]
    chosen: bool
    why: str
    tried: dict[Config, float]


def _warm(call: Callable[[], Any], flush: Any) -> None:
    """The first calls on a side stream (Triton compiles there, the caching allocator fills)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            flush.zero_()
            call()
    torch.cuda.current_stream().wait_stream(stream)


def _graph(call: Callable[[], Any] | None, flush: Any) -> Any:
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(PER_GRAPH):
            flush.zero_()
            if call is not None:
                call()
    return graph


def _replay_ms(graph: Any) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    graph.replay()
    end.record()
    end.synchronize()
    return float(start.elapsed_time(end))


def middle(values: list[float]) -> float:
    """The middle reading (the upper one of an even count): a median that is a reading."""
    return sorted(values)[len(values) // 2]


def _host_ms(call: Callable[[], Any]) -> float:
    laps = []
    for _ in range(PER_GRAPH):
        t0 = time.perf_counter()
        call()
        laps.append((time.perf_counter() - t0) * 1e3)
    return middle(laps)


def gpu_times(calls: dict[str, Callable[[], Any]], rounds: int, cuda: bool) -> dict[str, list[float]]:
    """Per label, ``rounds`` readings in ms a call (module doc); the labels in turn within a
    round, the order reversed every round."""
    labels = list(calls)
    times: dict[str, list[float]] = {label: [] for label in labels}
    if not cuda:
        for r in range(rounds):
            for label in (labels if r % 2 == 0 else labels[::-1]):
                times[label].append(_host_ms(calls[label]))
        return times
    l2 = int(getattr(torch.cuda.get_device_properties(torch.cuda.current_device()),
                     "L2_cache_size", 0) or 0)
    flush = torch.empty(max(2 * l2, FLUSH_MIN_BYTES), dtype=torch.int8, device="cuda")
    for call in calls.values():
        _warm(call, flush)
    graphs = {label: _graph(call, flush) for label, call in calls.items()}
    flushes = _graph(None, flush)
    for graph in (*graphs.values(), flushes):  # a first replay uploads the graph
        graph.replay()
    torch.cuda.synchronize()
    floors: list[float] = []
    raw: dict[str, list[float]] = {label: [] for label in labels}
    for r in range(rounds):
        floors.append(_replay_ms(flushes))
        for label in (labels if r % 2 == 0 else labels[::-1]):
            raw[label].append(_replay_ms(graphs[label]))
    return per_call(raw, floors)


def per_call(raw: dict[str, list[float]], floors: list[float]) -> dict[str, list[float]]:
    """Each replay's ms less the flushes' (their median over the rounds: the floor is one
    quantity, its noise not each reading's), per call; never zero (a ratio divides by it)."""
    floor = middle(floors)
    return {label: [max(ms - floor, 1e-6) / PER_GRAPH for ms in readings]
            for label, readings in raw.items()}


def choose(key: str, library: Callable[[], Any], kernel: Callable[[Config], Any],
           launches: Iterable[Config], rounds: int, cuda: bool,
           search_rounds: int = 3) -> Choice:
    """Each launch timed against nothing but itself (``search_rounds`` readings, the median),
    then the fastest raced against the library for ``rounds`` rounds; the kernel takes the
    shape only where it was faster by those rounds (decide())."""
    tried: dict[Config, float] = {}
    failed: list[str] = []
    for config in launches:
        try:
            readings = gpu_times({"k": functools.partial(kernel, config)}, search_rounds,
                                 cuda)["k"]
        except Exception as exc:  # a launch Triton cannot build or run: the next one
            failed.append(f"{attrs.astuple(config)}: {type(exc).__name__}: {exc}"[:200])
            continue
        tried[config] = middle(readings)
    if not tried:
        raise ValueError(f"{key}: no launch ran ({'; '.join(failed[:2]) or 'none to try'})")
    best = min(tried, key=tried.__getitem__)
    times = gpu_times({"library": library, "kernel": lambda: kernel(best)}, rounds, cuda)
    return decide(key, best, times["library"], times["kernel"], tried)


def decide(key: str, best: Config, library_ms: list[float], kernel_ms: list[float],
           tried: dict[Config, float]) -> Choice:
    """The kernel takes the shape where its readings beat the library's by the rounds
    (rounds.faster_by_rounds over the paired readings); the words say which and why."""
    ratio = paired(library_ms, kernel_ms, 1)
    chosen = faster_by_rounds(ratio)
    why = (f"{'the kernel' if chosen else 'the library'}: the kernel's fastest of {len(tried)} "
           f"launches ran {ratio['vs_baseline']:.3f}x the library's speed "
           f"(±{ratio['vs_baseline_band_pct']} %, won {ratio['won']} of {ratio['pairs']} rounds)")
    return Choice(key, best, library_ms, kernel_ms, chosen, why, tried)


def convolutions(model: Any, args: tuple[Any, ...]) -> list[dict[str, Any]]:
    """Each depthwise convolution of ``model`` that swap_depthwise takes, once per shape: its
    module, input shape and layout, and its calls in one step (a hook on each, one step run)."""
    from kernelopt_triton.lowerings import swappable

    seen: dict[tuple[Any, ...], dict[str, Any]] = {}

    def hook(conv: Any, inputs: tuple[Any, ...]) -> None:
        x = inputs[0]
        key = (tuple(x.shape), tuple(conv.weight.shape), conv.stride, conv.padding, conv.dilation)
        entry = seen.setdefault(key, {"x_shape": list(x.shape), "dtype": x.dtype, "conv": conv,
                                      "calls": 0, "channels_last": x.is_contiguous(
                                          memory_format=torch.channels_last),
                                      # a pre-hook sees the input before autocast casts it
                                      "autocast": torch.is_autocast_enabled(x.device.type)})
        entry["calls"] += 1

    handles = [m.register_forward_pre_hook(hook) for m in model.modules() if swappable(m)]
    try:
        with torch.no_grad():
            model(*args)
    finally:
        for handle in handles:
            handle.remove()
    return list(seen.values())


@attrs.define
class Timed:
    """A shape the search times: its row of the record, its module, an input of its shape,
    dtype and layout, the weights in that dtype, and once searched its Choice (None where no
    launch ran)."""

    row: dict[str, Any]
    conv: Any
    x: Any
    weight: Any
    bias: Any
    choice: Choice | None = None


def choose_for_model(model: Any, args: tuple[Any, ...], device: str, search_s: float = 120.0,
                     rounds: int = 8) -> dict[str, Any]:
    """The record depthwise.json holds (search_shapes()): per shape its decision and times,
    ``precompile``'s counts, and ``launches`` (the chosen shapes' launches, by shape key) —
    what swap_depthwise then takes."""
    begun = time.monotonic()
    shapes, _, compiled = search_shapes(model, args, device, search_s, rounds)
    return {"device": device, "search_s": round(time.monotonic() - begun, 1), "rounds": rounds,
            **({"precompile": compiled} if compiled else {}), "shapes": shapes,
            "launches": {s["key"]: s["launch"] for s in shapes if s["chosen"]}}


def search_shapes(model: Any, args: tuple[Any, ...], device: str, search_s: float = 120.0,
                  rounds: int = 8) -> tuple[list[dict[str, Any]], list[Timed], dict[str, Any] | None]:
    """The kernel or the library for each depthwise convolution of ``model`` (choose(), the
    heaviest shape first; the launches while ``search_s`` lasts, one budget for all shapes),
    inputs of the model's own shape, dtype and layout; a shape the kernel does not take
    (``depthwise.takes``: NCHW, fp64) keeps the library untimed. On a GPU every launch of
    every shape is first compiled on the host's cores (precompile_launches, until half the
    budget is spent, and the compiles then running; a launch's first use would compile it).
    Every shape's row with its decision, the timed shapes with their choices, and the
    precompile's counts (None off a GPU)."""
    from kernelopt_triton.depthwise import shape_key, takes

    cuda = device.startswith("cuda")
    begun = time.monotonic()
    shapes: list[dict[str, Any]] = []
    timed: list[Timed] = []
    for entry in heaviest_first(convolutions(model, args)):
        conv = entry["conv"]
        gen = torch.Generator(device="cpu").manual_seed(7)
        # the input's own dtype, the weights cast to it
        x = torch.randn(entry["x_shape"], generator=gen).to(device, entry["dtype"])
        if entry["channels_last"]:
            x = x.contiguous(memory_format=torch.channels_last)
        key = shape_key(x.shape, conv.weight.shape, conv.stride, conv.padding, conv.dilation)
        row: dict[str, Any] = {"key": key, "calls": entry["calls"]}
        shapes.append(row)
        if not takes(x) or entry["autocast"]:
            row.update(chosen=False, why="the library: an input the kernel does not take "
                       "(channels-last fp16/bf16/fp32 only, not under autocast)")
            continue
        timed.append(Timed(row, conv, x, conv.weight.detach().to(x.dtype),
                           None if conv.bias is None else conv.bias.detach().to(x.dtype)))
    # the launches compile and run on the model's device (Triton's is the current one)
    with torch.cuda.device(device) if cuda else contextlib.nullcontext():
        compiled = precompile_launches(timed, begun + search_s / 2) if cuda and timed else None
        for shape in timed:
            _search(shape, begun, search_s, rounds, cuda)
    return shapes, timed, compiled


def _search(shape: Timed, begun: float, search_s: float, rounds: int, cuda: bool) -> None:
    """choose() for one timed shape: its choice kept, its row filled with the decision."""
    import torch.nn.functional as F

    from kernelopt_triton.depthwise import launch

    conv, settings = shape.conv, (shape.conv.stride, shape.conv.padding, shape.conv.dilation)
    library = functools.partial(F.conv2d, shape.x, shape.weight, shape.bias, *settings,
                                conv.groups)
    kernel = functools.partial(launch, shape.x, shape.weight, shape.bias, *settings)
    try:
        with torch.no_grad():
            choice = choose(shape.row["key"], library, kernel,
                            budgeted_launches(begun, search_s), rounds, cuda)
    except ValueError as exc:  # no launch ran: this shape keeps the library
        shape.row.update(chosen=False, why=f"the library: {exc}")
        return
    shape.choice = choice
    shape.row.update(chosen=choice.chosen, why=choice.why, launch=attrs.asdict(choice.launch),
                     launches_tried=len(choice.tried),
                     library_ms=round(middle(choice.library_ms), 5),
                     kernel_ms=round(middle(choice.kernel_ms), 5))


def precompile_launches(timed: list[Timed], deadline: float) -> dict[str, Any]:
    """Every launch the search would give each timed shape (launch_order()), compiled before it
    (depthwise_compile.precompile), the heaviest shape's first. Only a speed-up: its failure
    is said in the record and the search goes on, each launch compiling at its first use."""
    from kernelopt_triton.depthwise_compile import Job, precompile

    try:
        return precompile([Job(tuple(t.x.shape), t.x.dtype, tuple(t.weight.shape),
                               t.bias is not None, tuple(t.conv.stride), tuple(t.conv.padding),
                               tuple(t.conv.dilation), config)
                           for t in timed for config in launch_order()], deadline)
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"[:300]}


def heaviest_first(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """convolutions()' entries by calls × input size, the heaviest first: the search's one
    budget goes to the shapes that weigh most."""
    import math

    return sorted(entries, key=lambda e: -e["calls"] * math.prod(e["x_shape"]))


def launch_order() -> list[Config]:
    """The search space's launches in the order the search tries them, Config() first."""
    from kernelopt_triton.depthwise import search_space

    return [Config(), *(c for c in search_space() if c != Config())]


def budgeted_launches(begun: float, seconds: float) -> Iterator[Config]:
    """launch_order()'s launches in turn while the budget (from ``begun``) lasts, Config()
    first and always: past the budget, the one launch a shape still races."""
    for i, config in enumerate(launch_order()):
        if i and time.monotonic() - begun > seconds:
            return
        yield config
