"""Depthwise convolutions as code Inductor generates (lowerings.py): the taps form against
torch's own convolution, and a compile under lowered() that no longer calls the library for
them. On the CPU (Inductor's C++); the GPU timing is bench/depthwise_probe.py's."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional


@pytest.mark.parametrize(("kernel", "stride", "padding", "dilation", "bias"), [
    (7, 1, 3, 1, True),   # ConvNeXt's
    (3, 2, 1, 1, False),  # MobileNet's downsampling
    (3, 1, 2, 2, True),   # dilated
    (5, 2, 0, 1, True),   # no padding, an odd size left over
    ((3, 5), (1, 2), (0, 2), (2, 1), True),  # each dimension its own
])
def test_the_taps_are_the_convolution(kernel: Any, stride: Any, padding: Any, dilation: Any,
                                      bias: bool) -> None:
    from kernelopt_triton.lowerings import depthwise_taps

    def pair(v: Any) -> tuple[int, int]:
        return (v, v) if isinstance(v, int) else v

    gen = torch.Generator().manual_seed(7)
    x = torch.randn(2, 8, 13, 11, generator=gen, dtype=torch.float64).contiguous(
        memory_format=torch.channels_last)
    w = torch.randn(8, 1, *pair(kernel), generator=gen, dtype=torch.float64)
    b = torch.randn(8, generator=gen, dtype=torch.float64) if bias else None
    expected = F.conv2d(x, w, b, pair(stride), pair(padding), pair(dilation), groups=8)
    got = depthwise_taps(x, w, b, pair(stride), pair(padding), pair(dilation))
    assert got.shape == expected.shape and got.dtype == torch.float64
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)
    # bf16 in, fp32 sums, bf16 out: within bf16's rounding of the fp64 result
    low = depthwise_taps(x.bfloat16(), w.bfloat16(), b.bfloat16() if bias else None,
                         pair(stride), pair(padding), pair(dilation))
    assert low.dtype == torch.bfloat16
    torch.testing.assert_close(low.double(), expected, rtol=2e-2, atol=5e-2)


def test_only_depthwise_convolutions_are_taken() -> None:
    from kernelopt_triton.lowerings import _convolution, is_depthwise

    x = torch.randn(1, 8, 5, 5)
    assert is_depthwise(x, torch.randn(8, 1, 3, 3), False, 8)
    assert not is_depthwise(x, torch.randn(16, 8, 3, 3), False, 1)  # a dense convolution
    assert not is_depthwise(x, torch.randn(16, 1, 3, 3), False, 8)  # two filters a channel
    assert not is_depthwise(x, torch.randn(8, 2, 3, 3), False, 4)  # groups of two channels
    assert not is_depthwise(x, torch.randn(8, 1, 3, 3), True, 8)  # transposed
    assert _convolution(x, torch.randn(16, 8, 1, 1), None, [1, 1], [0, 0], [1, 1], False,
                        [0, 0], 1) is NotImplemented


@pytest.mark.slow
def test_a_compile_inside_lowered_writes_the_depthwise_convolution_itself() -> None:
    """A ConvNeXt-like block compiled under lowered(): its depthwise convolution is generated
    code (one library convolution left: the dense 1×1), the output is eager's, and the table
    is as before afterwards (a compile outside it calls the library twice)."""
    from kernelopt_triton.lowerings import lowered
    from torch._inductor import decomposition
    from torch._inductor.utils import run_and_get_code

    torch.manual_seed(0)
    block = torch.nn.Sequential(torch.nn.Conv2d(8, 8, 7, padding=3, groups=8), torch.nn.GELU(),
                                torch.nn.Conv2d(8, 16, 1))
    x = torch.randn(2, 8, 16, 16).contiguous(memory_format=torch.channels_last)
    before = (dict(decomposition.decompositions), dict(decomposition.fast_random_decomps()))
    with torch.no_grad(), torch._inductor.config.patch({"fx_graph_cache": False}):
        torch._dynamo.reset()
        _, plain = run_and_get_code(torch.compile(block), x)  # builds Inductor's cached table
        with lowered():
            torch._dynamo.reset()
            out, code = run_and_get_code(torch.compile(block), x)
        assert (decomposition.decompositions, decomposition.fast_random_decomps()) == before
        torch._dynamo.reset()
        _, again = run_and_get_code(torch.compile(block), x)
    torch.testing.assert_close(out, block(x), rtol=1e-4, atol=1e-5)
    calls = [src.count("extern_kernels.convolution(") for src in ("\n".join(c) for c in (plain, code, again))]
    assert calls == [2, 1, 2]
