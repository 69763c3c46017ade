"""Library calls a torch.compile'd model makes, written instead as a kernel of kernelopt's.

A depthwise convolution (one filter per channel: ``groups`` = channels) goes to cuDNN under
the default compile and reduce-overhead (max-autotune may also try its own convolution
template); on ConvNeXt-T (bf16, batch 64, channels_last, an H100 on 2026-12-07) that
call, ``conv2d_c1_k1_nhwc_specialized``, was 29.4 % of the step's device time: 1240.7 µs for 18
calls moving about 549 MB, about 0.44 TB/s, 15 % of the 3018 GB/s copy rate the roofline gate
measured there (bench/results/2026-12-07-h100-modes-convnext-llama, the runs' ranking).

Written first as the sum of its taps for Inductor to generate (each tap a shifted slice of the
padded input times its weight per channel, fused into one pointwise kernel), it ran 2.7-5.1x
slower than cuDNN alone and made the model 2.4x slower (bench/results/
2026-12-07-h100-depthwise-probe): each output element did its 49 masked loads with its own
index arithmetic. ``lowered()`` now puts a tiled Triton kernel of kernelopt's in its place
(kernelopt_triton/depthwise.py, the op ``kernelopt::depthwise_conv2d``), for channels-last
inputs only (the layout cuDNN was slow in; an NCHW one keeps the library, as does an fp64 one,
an image of 2³¹ elements or more, and every one under Triton's interpreter), each convolution's
launch from ``configs`` by its shape (``depthwise.shape_key``); a shape ``configs`` does not
name keeps the library's call (the kernel is chosen per shape: depthwise_timing.py).

``swap_depthwise(model)`` does the same from each depthwise ``nn.Conv2d``'s own forward, where
the compile inlines the op (its docstring); ``lowered()`` puts it in Inductor's decomposition
table for the compiles inside it, for any convolution call, as an opaque call (the AOT
cache off there: its key leaves the table out, so a graph cached by a compile without it would
come back; the FX graph cache, keyed after decomposition, too, as the reduction forms' second
compile does). The capture chooses per shape (depthwise_timing.py); ``as_chosen`` compiles a
model as that choice says.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs

from kernelopt_triton.compile_mode import caches_off


def is_depthwise(x: Any, weight: Any, transposed: bool, groups: int) -> bool:
    """A 2-d convolution with one filter of one input channel per channel."""
    return (not transposed and x.dim() == 4 and weight.dim() == 4 and groups > 1
            and x.shape[1] == groups and weight.shape[0] == groups and weight.shape[1] == 1)


@attrs.define
class Lowered:
    """What lowered() did to the compiles inside it: ``ops``, the op calls their traces made of
    convolutions (each time the decomposition ran: once a call site per graph traced, again on
    a recompile)."""

    ops: int = 0


class Chosen(str):
    """What as_chosen() yields: how the chosen shapes are compiled, a str ("" where none were
    chosen), with ``lowered``, in the opaque form, the op calls the compiles inside it traced
    so far (Lowered), and ``swapped``, in the inlined form, the modules swapped."""

    lowered: Lowered | None
    swapped: int | None

    def __new__(cls, how: str = "", lowered: Lowered | None = None,
                swapped: int | None = None) -> Chosen:
        chosen = super().__new__(cls, how)
        chosen.lowered, chosen.swapped = lowered, swapped
        return chosen


def convolution(configs: Mapping[str, Any], seen: Lowered | None = None) -> Any:
    """aten.convolution's decomposition: the channels-last depthwise ones whose shape has a
    launch in ``configs`` to kernelopt's kernel with it (counted in ``seen``), the rest as
    before."""
    def decompose(x: Any, weight: Any, bias: Any, stride: Any, padding: Any, dilation: Any,
                  transposed: bool, output_padding: Any, groups: int) -> Any:
        from kernelopt_triton.depthwise import interpreted, launch, shape_key, takes

        if (not is_depthwise(x, weight, transposed, groups) or len(stride) != 2
                or not takes(x) or interpreted()):
            return NotImplemented  # Inductor lowers it as it would have
        config = configs.get(shape_key(x.shape, weight.shape, stride, padding, dilation))
        if config is None:  # a shape the library keeps
            return NotImplemented
        if seen is not None:
            seen.ops += 1
        return launch(x, weight, bias, stride, padding, dilation, config)

    return decompose


def swappable(module: Any) -> bool:
    """A depthwise ``nn.Conv2d`` swap_depthwise takes (or took: again, new launches): its
    own forward only — a subclass that pads in its forward (timm's Conv2dSame) computes another
    convolution than its settings say — with zero padding given as numbers."""
    import torch

    from kernelopt_triton.depthwise import DepthwiseConv2d

    return (type(module) in (torch.nn.Conv2d, DepthwiseConv2d)
            and module.padding_mode == "zeros" and not isinstance(module.padding, str)
            and module.groups > 1 and module.groups == module.in_channels
            and module.out_channels == module.in_channels)


def swap_depthwise(model: Any, configs: Mapping[str, Any] | None = None,
                   device_types: tuple[str, ...] = ("cuda",)) -> int:
    """Each depthwise ``nn.Conv2d`` of ``model`` (nn.Conv2d's own forward, zero padding given
    as numbers) becomes a ``depthwise.DepthwiseConv2d`` with ``configs`` (a copy) as its
    launches — a shape it does not name keeps the library's call — in place, for good (one
    swapped before takes the new launches and device types): the number swapped. Called
    from the module's forward, the op is inlined by the compile — the kernel and the weights'
    copy in Inductor's own code, no Python dispatch a call — where through ``lowered()``'s
    decomposition it stays an opaque call. For good, not a context: Dynamo guards on the
    forward it traced, so a swap undone after the compile would compile the model again; swap
    a copy to keep the library's. Static shapes: a shape key of a symbolic size breaks the
    graph at each convolution. ``device_types``: where the kernel runs (Triton's GPUs; the
    tests trace on the CPU)."""
    from kernelopt_triton.depthwise import DepthwiseConv2d

    launches = dict(configs or {})
    count = 0
    for module in model.modules():
        if swappable(module):
            conv: Any = module  # a DepthwiseConv2d from here
            conv.__class__ = DepthwiseConv2d
            # the same launches again keep their object: Dynamo guards a compiled forward on
            # what it read, so a second compile of the copy leaves the first one valid
            if getattr(conv, "launches", None) != launches:
                conv.launches = launches
            conv.device_types = tuple(device_types)
            count += 1
    return count


OPAQUE, INLINED = "opaque", "inlined"  # depthwise.json's form: how every compile runs the shapes


def form_for(cuda_graphs: bool) -> str:
    """How the chosen shapes are compiled, by the compile the runs use: under CUDA graphs the
    op stays an opaque call (``lowered()``: on ConvNeXt-T under reduce-overhead 1.096× over
    the library where inlined gave 1.065×, and a compile of 12.6 s, not 122.9 s: bench/results/
    2026-12-07-h100-depthwise-kernel); without graphs it is inlined (``swap_depthwise``: an
    opaque call is then a Python dispatch each time, 0.69× there)."""
    return OPAQUE if cuda_graphs else INLINED


def read_chosen(record: Path | None) -> tuple[dict[str, Any], str]:
    """A depthwise.json's chosen launches (the capture's per-shape choice,
    depthwise_timing.choose_for_model) as ``depthwise.Config`` by shape key, and its form;
    none without one."""
    if record is None:
        return {}, OPAQUE
    from kernelopt_triton.depthwise import Config

    data = json.loads(record.read_text())
    chosen = data.get("launches") or {}
    return ({key: Config(**fields) for key, fields in chosen.items()},
            data.get("form", OPAQUE))


@contextmanager
def as_chosen(model: Any, record: Path | None) -> Iterator[Chosen]:
    """The model's compiles inside it (Dynamo compiles at the first call: make it inside; a
    recompile after it would get the library) run kernelopt's kernel for the shapes a
    depthwise.json chose, in the record's form (form_for): the capture, the engine and the
    model check all compile the same graph, so a kernel captured is found again. Yields how
    (Chosen: false where nothing was chosen)."""
    chosen, form = read_chosen(record)
    if not chosen:
        yield Chosen()
    elif form == OPAQUE:
        with lowered(chosen) as seen:
            yield Chosen(f"{len(chosen)} shapes as kernelopt's op (opaque)", seen)
    else:
        swapped = swap_depthwise(model, chosen)
        yield Chosen(f"{len(chosen)} shapes inlined ({swapped} modules swapped)", swapped=swapped)


@contextmanager
def lowered(configs: Mapping[str, Any] | None = None) -> Iterator[Lowered]:
    """Compiles inside it call kernelopt's kernel for the channels-last depthwise
    convolutions whose shape ``configs`` names, each with ``configs[shape_key(...)]`` (a
    ``depthwise.Config``; module doc); yields the count of those calls made (Lowered)."""
    import torch
    from torch._inductor import decomposition

    op = torch.ops.aten.convolution.default
    # Inductor reads `decompositions` itself (config.fallback_random) or a copy built once per
    # process (fast_random_decomps, functools.cache; select_decomp_table may filter it anew):
    # both get the entry, and lose it again. Built here first, the copy is built clean.
    tables = {id(t): t for t in (decomposition.decompositions,
                                 decomposition.fast_random_decomps())}.values()
    before = [(table, table.get(op)) for table in tables]
    seen = Lowered()
    for table, _ in before:
        table[op] = convolution(configs or {}, seen)
    try:
        with caches_off():
            yield seen
    finally:
        for table, entry in before:
            if entry is None:
                table.pop(op, None)
            else:
                table[op] = entry
