"""Depthwise convolutions as kernelopt's own kernel (depthwise.py, lowerings.py): the kernel
against torch's convolution in fp64, run by Triton's interpreter on the CPU, and a compile
under lowered() that calls the op instead of the library for the channels-last ones. The GPU
timing is bench/depthwise_probe.py's."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
F = torch.nn.functional

CASES = [  # kernel, stride, padding, dilation, bias, channels_last, block_h, block_w, block_c
    (7, 1, 3, 1, True, True, 4, 4, 8),  # ConvNeXt's; rows, columns, channels over their blocks
    (7, 1, 3, 1, False, True, 1, 8, 16),  # one output row a program
    (3, 2, 1, 1, False, True, 2, 8, 16),  # MobileNet's downsampling: input rows shared
    (3, 1, 2, 2, True, False, 4, 4, 16),  # dilated (taps on every other row), an NCHW input
    ((3, 5), (2, 1), (0, 2), (2, 1), True, True, 2, 2, 8),  # each dimension its own
]

_INTERPRETED = """
import json, sys
import torch
import torch.nn.functional as F
from kernelopt_triton.depthwise import Config, run_kernel

def pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)

out = []
for kernel, stride, padding, dilation, bias, channels_last, bh, bw, bc in json.loads(sys.argv[1]):
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(2, 12, 7, 6, generator=gen)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    w = torch.randn(12, 1, *pair(kernel), generator=gen)
    b = torch.randn(12, generator=gen) if bias else None
    args = (pair(stride), pair(padding), pair(dilation))
    y = run_kernel(x, w, b, *args, Config(block_w=bw, block_c=bc, num_warps=1, block_h=bh))
    ref = F.conv2d(x.double(), w.double(), None if b is None else b.double(), *args, groups=12)
    out.append({"shape": list(y.shape) == list(ref.shape), "dtype": str(y.dtype),
                "same_format": y.is_contiguous(memory_format=torch.channels_last)
                               == x.is_contiguous(memory_format=torch.channels_last),
                "err": (y.double() - ref).abs().max().item()})
print(json.dumps(out))
"""


@pytest.mark.slow
def test_the_kernel_is_the_convolution() -> None:
    """Triton's interpreter (numpy on the CPU, fp32: it rounds bf16 by truncation, not as
    the GPU does) runs the kernel on five cases with tiles smaller and larger than the output,
    so every mask and block boundary is crossed; each equals torch's convolution in fp64 within
    fp32's sums."""
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, "-c", _INTERPRETED, json.dumps(CASES)], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(results) == len(CASES)
    for case, got in zip(CASES, results, strict=True):
        assert got["shape"] and got["same_format"] and got["dtype"] == "torch.float32", case
        assert got["err"] < 1e-4, (case, got)


def test_only_depthwise_convolutions_are_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelopt_triton.lowerings import convolution, is_depthwise

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)

    x = torch.randn(1, 8, 5, 5)
    assert is_depthwise(x, torch.randn(8, 1, 3, 3), False, 8)
    assert not is_depthwise(x, torch.randn(16, 8, 3, 3), False, 1)  # a dense convolution
    assert not is_depthwise(x, torch.randn(16, 1, 3, 3), False, 8)  # two filters a channel
    assert not is_depthwise(x, torch.randn(8, 2, 3, 3), False, 4)  # groups of two channels
    assert not is_depthwise(x, torch.randn(8, 1, 3, 3), True, 8)  # transposed
    decompose = convolution({})
    assert decompose(x, torch.randn(16, 8, 1, 1), None, [1, 1], [0, 0], [1, 1], False,
                     [0, 0], 1) is NotImplemented
    # a channels-last depthwise convolution whose shape no launch names keeps the library
    assert decompose(x.contiguous(memory_format=torch.channels_last), torch.randn(8, 1, 3, 3),
                     None, [1, 1], [1, 1], [1, 1], False, [0, 0], 8) is NotImplemented
    # an NCHW depthwise convolution keeps the library (cuDNN was slow in channels-last), as
    # does an fp64 one (the kernel sums in fp32)
    assert decompose(x, torch.randn(8, 1, 3, 3), None, [1, 1], [1, 1], [1, 1], False,
                     [0, 0], 8) is NotImplemented
    wide = x.double().contiguous(memory_format=torch.channels_last)
    assert decompose(wide, torch.randn(8, 1, 3, 3).double(), None, [1, 1], [1, 1], [1, 1],
                     False, [0, 0], 8) is NotImplemented
    from kernelopt_triton.depthwise import takes

    assert takes(x.contiguous(memory_format=torch.channels_last))


def test_a_shape_gets_its_own_launch() -> None:
    from kernelopt_triton.depthwise import search_space, shape_key

    assert shape_key((64, 96, 56, 56), (96, 1, 7, 7), [1, 1], (3, 3), [1, 1]) \
        == "64x96x56x56/7x7/s1x1/p3x3/d1x1"
    space = search_space()
    assert len(space) == len(set(space)) == 19
    assert all(c.block_h * c.block_w * c.block_c // (32 * c.num_warps) == 16 for c in space)
    assert {c.block_h for c in space} == {1, 2, 4}


_COMPILED = """
import json
import torch
from kernelopt_triton.depthwise import Config, shape_key
from kernelopt_triton.lowerings import lowered
from torch._inductor import decomposition
from torch._inductor.utils import run_and_get_code

torch.manual_seed(0)
block = torch.nn.Sequential(torch.nn.Conv2d(8, 8, 7, padding=3, groups=8), torch.nn.GELU(),
                            torch.nn.Conv2d(8, 16, 1))
x = torch.randn(2, 8, 16, 16).contiguous(memory_format=torch.channels_last)
launch = Config(block_w=8, block_c=32, num_warps=2, block_h=4)
configs = {shape_key(x.shape, (8, 1, 7, 7), (1, 1), (3, 3), (1, 1)): launch}
before = (dict(decomposition.decompositions), dict(decomposition.fast_random_decomps()))

def compiled(inputs, **kw):
    torch._dynamo.reset()
    with lowered(**kw) as seen:
        out, code = run_and_get_code(torch.compile(block), inputs)
    ops.append(seen.ops)
    return out, "\\n".join(code)

ops = []
with torch.no_grad(), torch._inductor.config.patch({"fx_graph_cache": False}):
    out, code = compiled(x, configs=configs)
    _, nchw = compiled(x.contiguous(), configs=configs)
    after = (decomposition.decompositions, decomposition.fast_random_decomps())

    # swap_depthwise: the op called from the module's own forward is inlined into the graph
    # AOT hands the backend (a Triton kernel node with the shape's launch)
    import copy
    from torch._functorch.aot_autograd import aot_module_simplified
    from kernelopt_triton.lowerings import swap_depthwise

    graphs = []

    def backend(gm, example_inputs):
        def forward_compiler(g, inputs):
            graphs.append(str(g.graph))
            return g.forward
        return aot_module_simplified(gm, example_inputs, fw_compiler=forward_compiler)

    class Padded(torch.nn.Conv2d):  # pads in its forward, as timm's Conv2dSame
        def forward(self, x):
            return super().forward(torch.nn.functional.pad(x, (1, 1, 1, 1)))

    assert swap_depthwise(Padded(8, 8, 3, groups=8)) == 0
    swapped = copy.deepcopy(block)
    count = swap_depthwise(swapped, configs)
    eager_swapped = swapped(x)  # on the CPU: not a device the kernel runs on, the library's
    copied = copy.deepcopy(swapped)  # a copy computes with its own weights
    with torch.no_grad():
        copied[0].weight.zero_()
    copy_differs = (copied(x) - eager_swapped).abs().max().item() > 0
    # traced as if the CPU were a device the kernel runs on: one graph for the whole block
    # (fullgraph: no break at the convolution) holding the kernel itself
    launches = swapped[0].launches
    swap_depthwise(swapped, dict(configs), device_types=("cpu",))
    kept_launches = swapped[0].launches is launches  # equal launches: the object a guard saw
    torch._dynamo.reset()
    try:
        torch.compile(swapped, backend=backend, fullgraph=True)(x)
    except RuntimeError as exc:  # running the traced Triton kernel needs a driver here
        assert "active drivers" in str(exc), exc
    kept = copy.deepcopy(block)  # swapped with no launch for its shape: the library's
    swap_depthwise(kept, {}, device_types=("cpu",))
    torch._dynamo.reset()
    kept_err = (torch.compile(kept, backend=backend, fullgraph=True)(x) - block(x)).abs().max()
    print(json.dumps({"err": (out - block(x)).abs().max().item(), "code": code, "nchw": nchw,
                      "restored": after == before, "swapped": count,
                      "swapped_err": (eager_swapped - block(x)).abs().max().item(),
                      "copy_differs": copy_differs, "graphs": graphs,
                      "kept_err": kept_err.item(), "kept_launches": kept_launches,
                      "ops": ops}))
"""


@pytest.mark.slow
def test_a_compile_inside_lowered_calls_kernelopts_kernel() -> None:
    """A ConvNeXt-like block compiled under lowered() (a process without Triton's interpreter,
    which a compile cannot trace into): its channels-last depthwise convolution is the op with
    its shape's launch (on the CPU the op runs the library's convolution: no Triton driver),
    the dense 1×1 stays a library call, the output is eager's; an NCHW input keeps the
    library, and the table is as before afterwards. swap_depthwise on a copy: the op, called
    from the module's forward, is inlined into the graph the compile gets (a Triton kernel
    node with its launch), where the decomposition leaves an opaque call."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", _COMPILED], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["err"] < 1e-5
    assert "torch.ops.kernelopt.depthwise_conv2d.default(" in got["code"]
    assert "[1, 1], [3, 3], [1, 1], 8, 32, 2, 4)" in got["code"]  # the shape's launch
    assert got["code"].count("extern_kernels.convolution(") == 1
    assert "kernelopt.depthwise_conv2d" not in got["nchw"]
    assert got["ops"][0] >= 1 and got["ops"][1] == 0  # lowered() counted the op's calls
    assert got["nchw"].count("extern_kernels.convolution(") == 2
    assert got["restored"]
    assert got["swapped"] == 1 and got["swapped_err"] < 1e-5  # the 1×1 is not depthwise
    assert got["copy_differs"] and got["kept_launches"]
    graph, kept = got["graphs"]
    assert "triton_kernel_wrapper_functional" in graph
    assert "kernelopt.depthwise_conv2d" not in graph  # inlined, not an opaque call
    assert "BLOCK_H: 4, BLOCK_W: 8, BLOCK_C: 32" in graph
    # a shape without a launch keeps the library's convolution when swapped (lowered: below)
    assert "triton_kernel_wrapper" not in kept and "convolution" in kept
    assert got["kept_err"] < 1e-5


def test_the_interpreter_keeps_the_library(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelopt_triton.lowerings import convolution

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    x = torch.randn(1, 8, 5, 5).contiguous(memory_format=torch.channels_last)
    assert convolution({})(x, torch.randn(8, 1, 3, 3), None, [1, 1], [1, 1], [1, 1], False,
                           [0, 0], 8) is NotImplemented


_PTX = """
import json, re
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from kernelopt_triton.depthwise import Config, depthwise_conv2d_kernel as fn

# ConvNeXt-T's first stage, bf16 channels-last: C=96, 56x56, the taps copied [7, 7, 96]
ints = dict(C=96, H=56, W=56, HO=56, WO=56, sxn=301056, sxh=5376, sxw=96, swh=672, sww=96,
            syn=301056, syh=5376, syw=96)
out = []
for config in (Config(block_w=16, block_c=64, num_warps=2, block_h=1),
               Config(block_w=8, block_c=64, num_warps=4, block_h=4)):
    fixed = dict(KH=7, KW=7, SH=1, SW=1, PH=3, PW=3, DH=1, DW=1, HAS_BIAS=True, sxc=1, syc=1,
                 swc=1, BLOCK_H=config.block_h, BLOCK_W=config.block_w, BLOCK_C=config.block_c)
    names = fn.arg_names
    signature = {n: "*bf16" if n.endswith("_ptr") else "constexpr" if n in fixed else "i32"
                 for n in names}
    aligned = [n for n in names if n.endswith("_ptr") or (n in ints and ints[n] % 16 == 0)]
    src = ASTSource(fn=fn, signature=signature,
                    constexprs={(names.index(k),): v for k, v in fixed.items()},
                    attrs={(names.index(k),): [["tt.divisibility", 16]] for k in aligned})
    ptx = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                         options={"num_warps": config.num_warps}).asm["ptx"]
    out.append({"block_h": config.block_h,
                "vector_loads": len(re.findall(r"ld\\.global(?:\\.nc)?\\.v[24]\\.b32", ptx)),
                "stores": len(re.findall(r"st\\.global", ptx))})
print(json.dumps(out))
"""


@pytest.mark.slow
def test_the_kernel_compiles_for_an_h100() -> None:
    """No GPU here, but Triton's own compiler and ptxas are: the kernel compiles for sm_90
    at ConvNeXt's first shape with one and four output rows a program, and its input
    tiles are vector loads along the channels (the point of the tile)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", _PTX], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert [g["block_h"] for g in got] == [1, 4]
    for g in got:  # (block_h + 6) input rows × 7 taps: a vector load each at least
        assert g["vector_loads"] >= ((g["block_h"] - 1) + 7) * 7, g
        assert g["stores"] >= 1, g


def test_the_kernel_takes_a_shape_only_where_it_won_by_the_rounds() -> None:
    """depthwise_timing.decide over given readings (the measuring is the GPU's: the probe)."""
    from kernelopt_triton.depthwise import Config
    from kernelopt_triton.depthwise_timing import decide

    launch = Config(block_w=16, block_c=32, num_warps=4, block_h=4)
    tried = {launch: 0.15, Config(): 0.2}
    library = [0.2018, 0.2020, 0.2017, 0.2019, 0.2021, 0.2018, 0.2016, 0.2020]
    faster = decide("k", launch, library, [0.1526, 0.1530, 0.1524, 0.1527, 0.1529,
                                           0.1525, 0.1528, 0.1526], tried)
    assert faster.chosen and faster.why.startswith("the kernel: the kernel's fastest of 2 ")
    assert "1.32" in faster.why and "won 8 of 8" in faster.why
    # as fast within the noise: half the rounds each way, the library stays
    even = decide("k", launch, library, [0.2019, 0.2017, 0.2018, 0.2020, 0.2020, 0.2017,
                                         0.2017, 0.2021], tried)
    assert not even.chosen and even.why.startswith("the library:")
    slower = decide("k", launch, library, [v * 2.5 for v in library], tried)
    assert not slower.chosen and "0.400x" in slower.why


def test_the_timing_takes_turns_and_gives_every_side_its_rounds() -> None:
    """On the CPU (no CUDA graphs) each side gets ``rounds`` positive readings, and choose()
    returns the fastest launch it tried with both sides' readings."""
    from kernelopt_triton.depthwise import Config
    from kernelopt_triton.depthwise_timing import choose, gpu_times

    order: list[str] = []
    times = gpu_times({"a": lambda: order.append("a"), "b": lambda: order.append("b")}, 3,
                      cuda=False)
    assert [len(v) for v in times.values()] == [3, 3] and all(
        t > 0 for v in times.values() for t in v)
    per = len(order) // 6  # each reading is that many calls: a, b, then b, a, then a, b
    assert order[::per] == ["a", "b", "b", "a", "a", "b"]
    x = torch.randn(2, 8, 9, 9).contiguous(memory_format=torch.channels_last)
    w = torch.randn(8, 1, 3, 3)
    launches = [Config(), Config(block_w=8)]
    choice = choose("k", lambda: F.conv2d(x, w, None, 1, 1, 1, 8),
                    lambda c: F.conv2d(x, w, None, 1, 1, 1, 8), launches, 4, cuda=False)
    assert choice.launch in launches and set(choice.tried) == set(launches)
    assert len(choice.library_ms) == len(choice.kernel_ms) == 4


def _block() -> object:
    # a 7×7 depthwise convolution once, a 3×3 one twice on the same shape (the heavier), a dense 1×1
    return torch.nn.Sequential(torch.nn.Conv2d(8, 8, 7, padding=3, groups=8), torch.nn.GELU(),
                               torch.nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False),
                               torch.nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False),
                               torch.nn.Conv2d(8, 16, 1))


def test_the_capture_chooses_per_shape_and_the_record_says_how_to_compile(tmp_path) -> None:
    """choose_for_model on the CPU (the host's clock: the decisions are not the point, the
    record is): both depthwise shapes listed heaviest first with a decision and its words,
    launches only for the chosen; as_chosen compiles a record's shapes in its form (inlined:
    the modules swapped; opaque: the decomposition in place while inside, gone after; none
    chosen: nothing); the capture's step skips the choice off CUDA."""
    from kernelopt_triton.capture_depthwise import choose_depthwise
    from kernelopt_triton.depthwise_timing import choose_for_model
    from kernelopt_triton.lowerings import INLINED, OPAQUE, as_chosen
    from torch._inductor import decomposition

    x = torch.randn(2, 8, 12, 12).contiguous(memory_format=torch.channels_last)
    record = choose_for_model(_block(), (x,), "cpu", search_s=0.0, rounds=2)
    keys = [s["key"] for s in record["shapes"]]
    assert keys == ["2x8x12x12/3x3/s1x1/p1x1/d1x1", "2x8x12x12/7x7/s1x1/p3x3/d1x1"]
    assert [s["calls"] for s in record["shapes"]] == [2, 1]
    for shape in record["shapes"]:
        # the budget spent: Config() alone raced, then the decision and why
        assert shape["launches_tried"] == 1 and shape["why"].startswith(
            "the kernel:" if shape["chosen"] else "the library:")
        assert shape["library_ms"] > 0 and shape["kernel_ms"] > 0
    assert set(record["launches"]) == {s["key"] for s in record["shapes"] if s["chosen"]}
    nchw = choose_for_model(_block(), (x.contiguous(),), "cpu", search_s=0.0, rounds=2)
    assert not nchw["launches"] and all("does not take" in s["why"] for s in nchw["shapes"])

    path = tmp_path / "depthwise.json"
    launch = {"block_w": 8, "block_c": 32, "num_warps": 2, "block_h": 4}
    path.write_text(json.dumps({"launches": {keys[0]: launch}, "form": INLINED}))
    inlined = _block()
    with as_chosen(inlined, path) as how:
        assert str(how) == "1 shapes inlined (3 modules swapped)"  # the 7×7 keeps the library
        assert how.lowered is None  # inlined: no decomposition to count
    assert [type(m).__name__ for m in inlined][:4] == [
        "DepthwiseConv2d", "GELU", "DepthwiseConv2d", "DepthwiseConv2d"]
    assert inlined[2].launches[keys[0]].block_h == 4 and keys[1] not in inlined[0].launches
    path.write_text(json.dumps({"launches": {keys[0]: launch}, "form": OPAQUE}))
    op = torch.ops.aten.convolution.default
    opaque = _block()
    with as_chosen(opaque, path) as how:
        assert str(how) == "1 shapes as kernelopt's op (opaque)"
        assert decomposition.decompositions.get(op) is not None
        assert how.lowered is not None and how.lowered.ops == 0  # nothing compiled yet
    assert type(opaque[0]).__name__ == "Conv2d" and op not in decomposition.decompositions
    path.write_text(json.dumps({"launches": {}}))
    with as_chosen(opaque, path) as how, as_chosen(opaque, None) as unnamed:
        assert not how and not unnamed and str(how) == ""
    assert choose_depthwise(_block(), (x,), "cpu", tmp_path, OPAQUE) == {
        "skipped": "the kernel runs on CUDA GPUs (here the library's convolution)"}
    assert choose_depthwise(torch.nn.Conv2d(8, 16, 1), (x,), "cuda", tmp_path, OPAQUE) == {
        "shapes": 0}


def test_a_launch_that_fails_is_skipped_and_a_shape_with_none_keeps_the_library() -> None:
    from kernelopt_triton.depthwise import Config
    from kernelopt_triton.depthwise_timing import choose, per_call

    def kernel(config: Config) -> None:
        if config.block_w == 8:
            raise RuntimeError("out of resources")

    choice = choose("k", lambda: None, kernel, [Config(block_w=8), Config()], 2, cuda=False)
    assert set(choice.tried) == {Config()}
    with pytest.raises(ValueError, match="no launch ran.*out of resources"):
        choose("k", lambda: None, kernel, [Config(block_w=8)], 2, cuda=False)
    # a replay less the flushes' median replay, per call; never zero
    assert per_call({"a": [3.0, 2.2]}, [1.0, 5.0, 1.2])["a"] == pytest.approx([0.09, 0.05])
    assert per_call({"a": [0.5]}, [1.0])["a"][0] > 0


def test_under_autocast_the_library_keeps_the_convolution(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pre-hook sees the input before autocast casts it: a convolution under autocast is not
    chosen (its timing would be of another dtype), and a swapped one calls the library there."""
    from kernelopt_triton.depthwise import Config
    from kernelopt_triton.depthwise_timing import choose_for_model
    from kernelopt_triton.lowerings import swap_depthwise

    class Autocast(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.block = _block()

        def forward(self, x):  # type: ignore[no-untyped-def]
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return self.block(x)

    x = torch.randn(2, 8, 12, 12).contiguous(memory_format=torch.channels_last)
    record = choose_for_model(Autocast(), (x,), "cpu", search_s=0.0, rounds=2)
    assert not record["launches"] and all("autocast" in s["why"] for s in record["shapes"])
    model = Autocast()
    key = "2x8x12x12/3x3/s1x1/p1x1/d1x1"
    swap_depthwise(model, {key: Config()}, device_types=("cpu",))
    from kernelopt_triton import depthwise

    def no_kernel(*args: object) -> None:
        raise AssertionError("the kernel ran")

    monkeypatch.setattr(depthwise, "launch", no_kernel)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with torch.no_grad():
        assert model(x).dtype == torch.bfloat16  # the swapped 3×3s ran the library
        with pytest.raises(AssertionError, match="the kernel ran"):
            model.block(x)  # outside autocast the chosen shape takes the kernel
