"""ConvNeXt-T's depthwise convolutions timed on the GPU alone, without the host: each side
(cuDNN through F.conv2d; kernelopt's kernel through depthwise.run_kernel with a launch) as a CUDA
graph of ROUNDS×(L2 flush, call), minus a graph of the flushes alone, median of 15 replays,
sides interleaved. bench/depthwise_probe.py's do_bench times went through the op's Python
dispatch (a host-bound floor near 0.13 ms); this says what the GPU spends.
  python3 bench/depthwise_graphs.py OUT.json"""
import json
import sys

import torch
import torch.nn.functional as F

from kernelopt_triton import depthwise as dw

SHAPES = [(96, 56), (192, 28), (384, 14), (768, 7)]  # batch 64, 7x7, pad 3, bf16 channels-last
LAUNCHES = [(16, 32, 4, 4), (32, 32, 8, 4), (8, 32, 2, 4), (8, 64, 4, 4), (16, 64, 4, 2),
            (16, 64, 8, 4), (8, 128, 8, 4), (32, 64, 4, 1), (32, 32, 2, 1)]
ROUNDS = 20
flush = torch.empty(256 * 2**20, dtype=torch.int8, device="cuda")


def graph(call):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            flush.zero_()
            call()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(ROUNDS):
            flush.zero_()
            if call is not None:
                call()
    return g


def replay_ms(g):
    a, b = torch.cuda.Event(True), torch.cuda.Event(True)
    a.record()
    g.replay()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) / ROUNDS


def main():
    out = []
    base = graph(lambda: None)
    for c, hw in SHAPES:
        x = torch.randn(64, c, hw, hw, device="cuda", dtype=torch.bfloat16).to(
            memory_format=torch.channels_last)
        w = torch.randn(c, 1, 7, 7, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(c, device="cuda", dtype=torch.bfloat16)
        ref = F.conv2d(x.double(), w.double(), b.double(), 1, 3, 1, c)
        sides = {"library": lambda: F.conv2d(x, w, b, 1, 3, 1, c)}
        for bw, bc, nw, bh in LAUNCHES:
            cfg = dw.Config(bw, bc, nw, bh)
            y = dw.run_kernel(x, w, b, [1, 1], [3, 3], [1, 1], cfg)
            err = (y.double() - ref).abs().max().item()
            sides[f"kernel{bw},{bc},{nw},{bh}"] = (
                lambda cfg=cfg: dw.run_kernel(x, w, b, [1, 1], [3, 3], [1, 1], cfg))
            assert err < 0.05, (c, hw, cfg, err)
        graphs = {k: graph(f) for k, f in sides.items()}
        times = {k: [] for k in graphs}
        for _ in range(15):
            floor = replay_ms(base)
            for k, g in graphs.items():
                times[k].append(replay_ms(g) - floor)
        med = {k: sorted(v)[7] for k, v in times.items()}
        best = min((k for k in med if k != "library"), key=med.get)
        nbytes = 2 * x.numel() * x.element_size()
        row = {"shape": [64, c, hw, hw], "ms": med, "best": best,
               "ratio_best": round(med["library"] / med[best], 4),
               "gbps": {"library": round(nbytes / med["library"] / 1e6, 1),
                        "best": round(nbytes / med[best] / 1e6, 1)},
               "spread_pct": {k: round(100 * (sorted(v)[11] - sorted(v)[3]) / sorted(v)[7], 2)
                              for k, v in times.items()}}
        print(json.dumps(row), flush=True)
        out.append(row)
    json.dump({"device": torch.cuda.get_device_name(), "rounds_per_graph": ROUNDS,
               "replays": 15, "shapes": out}, open(sys.argv[1], "w"), indent=1)


main()
