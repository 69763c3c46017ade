"""The tuner's joint search on cost surfaces with known answers (no GPU: the surface is the
screen)."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import pytest

from kernelopt_core.planners import joint
from kernelopt_core.planners.joint import JointSearch, evaluation_budget
from kernelopt_core.target import Knob

BLOCK = tuple(str(2 ** i) for i in range(4, 14))  # 16 .. 8192
WARPS = ("1", "2", "4", "8", "16", "32")
STAGES = ("1", "2", "3", "4", "5")
KNOBS = [("BLOCK", BLOCK), ("num_warps", WARPS), ("num_stages", STAGES)]


def index(config: dict[str, str]) -> tuple[int, ...]:
    return tuple(values.index(config[name]) for name, values in KNOBS)


def valley(point: tuple[int, ...]) -> float:
    """Non-separable: the cost's valley runs diagonally (the best warp count grows with the
    block), and stages interact with the block. Unique optimum at (7, 4, 1)."""
    b, w, s = point
    u, v = (b - 7) + (w - 4), (b - 7) - (w - 4)
    return 1.0 + 0.05 * u * u + 0.8 * v * v + 0.3 * (s - 1) ** 2 + 0.1 * (b - 7) * (s - 1)


def test_finds_the_optimum_of_a_non_separable_surface_in_a_quarter_of_the_grid() -> None:
    screened: list[dict[str, str]] = []

    def evaluate(configs: list[dict[str, str]]) -> list[float | None]:
        screened.extend(configs)
        return [valley(index(c)) for c in configs]

    grid = list(itertools.product(range(10), range(6), range(5)))
    optimum = min(grid, key=valley)
    assert optimum == (7, 4, 1)
    ranked = JointSearch(KNOBS, {"BLOCK": "128", "num_warps": "1", "num_stages": "4"},
                         evaluate).run()
    assert index(ranked[0][0]) == optimum
    assert len(screened) <= len(grid) // 4
    assert len({tuple(sorted(c.items())) for c in screened}) == len(screened)  # never twice
    costs = [cost for _config, cost in ranked]
    assert costs == sorted(costs)


def test_a_small_grid_is_screened_whole_and_failures_are_left_out() -> None:
    knobs = [("BLOCK", ("64", "128", "256", "512")), ("num_warps", ("1", "2", "4", "8"))]

    def evaluate(configs: list[dict[str, str]]) -> list[float | None]:
        # a block of 512 with one warp does not compile: a cheap failure, not a candidate
        return [None if (c["BLOCK"], c["num_warps"]) == ("512", "1")
                else abs(int(c["BLOCK"]) - 256) + abs(int(c["num_warps"]) - 4) + 1.0
                for c in configs]

    ranked = JointSearch(knobs, {"BLOCK": "64", "num_warps": "1"}, evaluate).run()
    assert len(ranked) == 15
    assert ranked[0] == ({"BLOCK": "256", "num_warps": "4"}, 1.0)
    assert {"BLOCK": "512", "num_warps": "1"} not in [c for c, _ in ranked]


def test_budgets_stop_the_search() -> None:
    calls: list[int] = []

    def evaluate(configs: list[dict[str, str]]) -> list[float | None]:
        calls.append(len(configs))
        return [valley(index(c)) for c in configs]

    start = {"BLOCK": "16", "num_warps": "1", "num_stages": "1"}
    JointSearch(KNOBS, start, evaluate, max_evaluations=10).run()
    assert sum(calls) == 10
    calls.clear()
    JointSearch(KNOBS, start, evaluate, within_budget=lambda: not calls).run()
    assert len(calls) == 1  # GPU budget spent after the first batch: nothing more screened


def test_evaluation_budget_rule() -> None:
    assert evaluation_budget(24) == 24
    assert evaluation_budget(60) == 15
    assert evaluation_budget(300) == 75
    assert evaluation_budget(30) == 12
    assert evaluation_budget(10 ** 5) == 256
    assert math.isfinite(evaluation_budget(1))


def test_a_large_grid_is_sampled_near_the_current_assignment() -> None:
    """Far corners of a large grid (the largest tiles) can take minutes to compile: the sample
    stays within two steps of the start; descent alone may leave that box."""
    knobs = [("XBLOCK", ("1", "2", "4", "8", "16")), ("R0_BLOCK", BLOCK), ("num_warps", WARPS),
             ("num_stages", STAGES)]
    start = {"XBLOCK": "1", "R0_BLOCK": "1024", "num_warps": "8", "num_stages": "1"}
    batches: list[list[dict[str, str]]] = []

    def evaluate(configs: list[dict[str, str]]) -> list[float | None]:
        batches.append(configs)
        return [1.0 + sum(abs(values.index(c[name]) - values.index(start[name]))
                          for name, values in knobs) for c in configs]

    search = JointSearch(knobs, start, evaluate)
    assert search.grid == 1500
    search.run()
    sample = batches[0] + batches[1]  # the sample: two chunks of 8
    assert len(sample) == 16 and sample[0] == start
    for config in sample:
        for name, values in knobs:
            assert abs(values.index(config[name]) - values.index(start[name])) <= 2


def test_a_known_start_cost_is_not_screened_and_is_not_an_evaluation() -> None:
    screened: list[dict[str, str]] = []

    def evaluate(configs: list[dict[str, str]]) -> list[float | None]:
        screened.extend(configs)
        return [valley(index(c)) for c in configs]

    start = {"BLOCK": "128", "num_warps": "1", "num_stages": "4"}
    search = JointSearch(KNOBS, start, evaluate, start_cost=valley(index(start)))
    ranked = search.run()
    assert start not in screened
    assert search.evaluations == len(screened) <= 300 // 4
    assert index(ranked[0][0]) == (7, 4, 1)
    # a start off the grid is no point of it: nothing is assumed about it
    off = JointSearch(KNOBS, {**start, "BLOCK": "100"}, evaluate, start_cost=1.0)
    assert off.start_cost is None and not off.costs


def test_a_far_worse_basin_gets_no_descent(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two basins: a deep one, and a shallow one 60 % slower at its bottom where the search
    starts. Once the deep basin's minimum is surrounded, the search stops instead of
    descending the shallow one (which it does when every basin counts)."""
    knobs = [("BLOCK", BLOCK), ("num_warps", WARPS)]

    def deep(b: int, w: int) -> float:
        return 1.0 + 0.2 * ((b - 8) ** 2 + (w - 4) ** 2)

    def shallow(b: int, w: int) -> float:
        return 1.6 + 0.2 * ((b - 2) ** 2 + w ** 2)

    def search() -> tuple[tuple[int, int], list[tuple[int, int]]]:
        screened: list[tuple[int, int]] = []

        def evaluate(configs: list[dict[str, str]]) -> list[float | None]:
            points = [(BLOCK.index(c["BLOCK"]), WARPS.index(c["num_warps"])) for c in configs]
            screened.extend(points)
            return [min(deep(*p), shallow(*p)) for p in points]

        ranked = JointSearch(knobs, {"BLOCK": "32", "num_warps": "2"}, evaluate,
                             max_evaluations=40).run()
        best = (BLOCK.index(ranked[0][0]["BLOCK"]), WARPS.index(ranked[0][0]["num_warps"]))
        return best, [p for p in screened if shallow(*p) < deep(*p)]

    best, shallow_screened = search()
    monkeypatch.setattr(joint, "BASIN_WITHIN", math.inf)
    best_every_basin, shallow_every_basin = search()
    assert best == best_every_basin == (8, 4)
    assert len(shallow_screened) < len(shallow_every_basin)
    assert (2, 0) in shallow_every_basin and (2, 0) not in shallow_screened


def test_the_sample_leaves_out_more_threads_than_elements_but_a_descent_may_go_there() -> None:
    from kernelopt_core.target import Knob

    knobs = (Knob("BLOCK@k", "k.py", BLOCK, r"B=(\d+)", "elements", "k"),
             Knob("num_warps@k", "k.py", WARPS, r"W=(\d+)", "warps", "k"),
             Knob("num_stages@k", "k.py", STAGES, r"S=(\d+)"))
    fits = joint.threads_fit(knobs)
    assert fits({"BLOCK@k": "1024", "num_warps@k": "32", "num_stages@k": "1"})
    assert not fits({"BLOCK@k": "16", "num_warps@k": "32", "num_stages@k": "1"})
    assert joint.threads_fit(knobs[1:])({"num_warps@k": "32"})  # no elements knob: no rule
    names = ("BLOCK", "num_warps", "num_stages")

    def oversubscribed(config: dict[str, str]) -> bool:
        return 32 * int(config["num_warps"]) > int(config["BLOCK"])

    def as_k(config: dict[str, str]) -> dict[str, str]:
        return {f"{n}@k": config[n] for n in names}

    # the optimum sits where threads outnumber elements: the descent still reaches it
    target = (1, 5, 0)  # BLOCK 32, 32 warps
    screened: list[dict[str, str]] = []

    def evaluate(configs: list[dict[str, str]]) -> list[float | None]:
        screened.extend(configs)
        return [1.0 + sum((a - b) ** 2 for a, b in zip(index(c), target, strict=True))
                for c in configs]

    start = {"BLOCK": "128", "num_warps": "4", "num_stages": "2"}
    search = JointSearch(KNOBS, start, evaluate, plausible=lambda c: fits(as_k(c)))
    sample = search._sample(7)
    assert not any(oversubscribed(search._config(p)) for p in sample[1:])
    best, _cost = search.run()[0]
    assert index(best) == target and oversubscribed(best)


def test_recorded_h200_layernorm_grid_is_searched_in_under_a_quarter_of_its_gpu_time() -> None:
    """The exhaustive layernorm grid recorded on the H200 (session 6, call 2: every
    configuration's ratio to the baseline and its worker seconds). Its surface is flat at the
    bottom (4096/16, 4096/4 and 2048/8 within 1.1 %), so the descent keeps two minima going; the
    second minimum's moves share a batch with the first's, so fewer batches pay the tree's own
    reading (0.03 s each, as on the H200)."""
    data = json.loads((Path(__file__).parent / "fixtures" / "h200" / "layernorm-grid.json")
                      .read_text())
    table = {tuple(sorted(r["config"].items())): r for r in data["grid_results"]}
    block, warps = "BLOCK_SIZE@layernorm_kernel", "num_warps@layernorm_kernel"
    values = {n: tuple(sorted({r["config"][n] for r in data["grid_results"]}, key=int))
              for n in (block, warps)}
    spent, batches = [0.0], []

    def evaluate(configs: list[dict[str, str]]) -> list[float | None]:
        batches.append(len(configs))
        rows = [table[tuple(sorted(c.items()))] for c in configs]
        spent[0] += 0.03 + sum(r["seconds"] for r in rows)
        return [r["ratio"] for r in rows]

    knobs = (Knob(block, "k.py", values[block], "x", "elements", "k"),
             Knob(warps, "k.py", values[warps], "x", "warps", "k"))
    search = JointSearch([(block, values[block]), (warps, values[warps])],
                         {block: "256", warps: "1"}, evaluate, start_cost=1.0,
                         plausible=joint.threads_fit(knobs))
    ranked = search.run()
    assert ranked[0][0] == data["grid"]["best"]["knobs"]
    assert 1 not in batches[:-1]  # only the last batch may hold a single configuration
    assert spent[0] / data["grid"]["sweep_gpu_seconds"] <= 0.24  # 24.8 % one point a batch


def test_a_conditional_knob_is_held_where_its_branch_is_not_taken() -> None:
    """A switch between two forms of a kernel, each with its own launch keywords (Knob.when):
    no configuration is screened twice as the same code, and the best of either branch wins."""
    knobs = [("FORM", ("0", "1")),
             ("warps_a", ("1", "2", "4", "8")), ("block_b", ("256", "512", "1024", "2048")),
             ("warps_b", ("1", "2", "4", "8"))]
    conditions = {"warps_a": ("FORM", "0"), "block_b": ("FORM", "1"), "warps_b": ("FORM", "1")}
    start = {"FORM": "0", "warps_a": "4", "block_b": "1024", "warps_b": "4"}
    screened: list[dict[str, str]] = []

    def cost(c: dict[str, str]) -> float:
        if c["FORM"] == "0":
            return 1.0 + abs(int(c["warps_a"]) - 2) * 0.1
        return 0.7 + abs(int(c["block_b"]) - 512) / 4096 + abs(int(c["warps_b"]) - 8) * 0.05

    def evaluate(configs: list[dict[str, str]]) -> list[float | None]:
        screened.extend(configs)
        return [cost(c) for c in configs]

    search = JointSearch(knobs, start, evaluate, conditions=conditions)
    assert search.grid == 4 + 16  # form 0: warps_a's 4; form 1: 4 x 4 (not 2 x 4 x 4 x 4)
    ranked = search.run()
    assert ranked[0][0] == {"FORM": "1", "warps_a": "4", "block_b": "512", "warps_b": "8"}
    for c in screened:  # the other branch's keywords stay at the start's values
        held = ("block_b", "warps_b") if c["FORM"] == "0" else ("warps_a",)
        assert all(c[k] == start[k] for k in held)
    assert len({tuple(sorted(c.items())) for c in screened}) == len(screened) == 20


def test_a_large_grid_with_branches_is_sampled_and_descended_as_code_configurations() -> None:
    """Two forms, each with its own block, warps and stages (a reduction's persistent and looped
    launches): the grid counts configurations of code, the sample and the descent never screen
    one twice, and the other form's keywords stay at the start's values."""
    block = tuple(str(1 << k) for k in range(4, 12))  # 8 values
    warps = ("1", "2", "4", "8", "16", "32")
    stages = ("1", "2", "3", "4", "5")
    knobs = [("FORM", ("0", "1")), ("XBLOCK@a", ("1", "2", "4", "8")), ("num_warps@a", warps),
             ("R0_BLOCK@b", block), ("num_warps@b", warps), ("num_stages@b", stages)]
    conditions = {"XBLOCK@a": ("FORM", "0"), "num_warps@a": ("FORM", "0"),
                  "R0_BLOCK@b": ("FORM", "1"), "num_warps@b": ("FORM", "1"),
                  "num_stages@b": ("FORM", "1")}
    start = {"FORM": "0", "XBLOCK@a": "1", "num_warps@a": "8", "R0_BLOCK@b": "1024",
             "num_warps@b": "8", "num_stages@b": "1"}
    screened: list[dict[str, str]] = []

    def cost(c: dict[str, str]) -> float:
        if c["FORM"] == "0":
            return 1.0 + 0.1 * abs(math.log2(int(c["num_warps@a"])) - 2)
        return (0.8 + 0.05 * abs(math.log2(int(c["R0_BLOCK@b"])) - 9)
                + 0.05 * abs(math.log2(int(c["num_warps@b"])) - 3) + 0.02 * int(c["num_stages@b"]))

    def evaluate(configs: list[dict[str, str]]) -> list[float | None]:
        screened.extend(configs)
        return [cost(c) for c in configs]

    search = JointSearch(knobs, start, evaluate, conditions=conditions, start_cost=1.1)
    assert search.grid == 4 * 6 + 8 * 6 * 5  # 264, not 2 * 4 * 6 * 8 * 6 * 5
    ranked = search.run()
    assert ranked[0][0]["FORM"] == "1" and ranked[0][0]["R0_BLOCK@b"] == "512"
    assert len({tuple(sorted(c.items())) for c in screened}) == len(screened)
    assert start not in screened  # its cost was given
    for c in screened:
        held = ("R0_BLOCK@b", "num_warps@b", "num_stages@b") if c["FORM"] == "0" \
            else ("XBLOCK@a", "num_warps@a")
        assert all(c[k] == start[k] for k in held), c


def test_a_conditional_knob_must_name_another_unconditional_knob_and_one_of_its_values() -> None:
    from kernelopt_core.target import Target

    form = Knob("FORM", "k.py", ("0", "1"), r"FORM = (\d)")
    warps = Knob("num_warps@k_looped", "k.py", ("4", "8"), r"num_warps=(\d+)", when=("FORM", "1"))
    Target("triton", "k", ".", ("k.py",), knobs=(form, warps))
    with pytest.raises(ValueError, match="not another knob"):
        Target("triton", "k", ".", ("k.py",), knobs=(warps,))
    with pytest.raises(ValueError, match="not one of its values"):
        Target("triton", "k", ".", ("k.py",),
               knobs=(form, Knob("x", "k.py", ("1",), r"x=(\d)", when=("FORM", "2"))))
    chained = Knob("y", "k.py", ("1",), r"y=(\d)", when=("num_warps@k_looped", "4"))
    with pytest.raises(ValueError, match="conditional itself"):
        Target("triton", "k", ".", ("k.py",), knobs=(form, warps, chained))
    with pytest.raises(TypeError, match="knob, value"):
        Knob("x", "k.py", ("1",), r"(\d)", when=("FORM",))


def test_the_neighbour_search_holds_a_conditional_knob_off_its_branch() -> None:
    """The tuner's proposals without screening (planners/tuner.py's held): a move of a knob
    whose branch does not run is the same code, so it is held at the baseline's value."""
    from kernelopt_core.planners.tuner import held

    form = Knob("FORM", "k.py", ("0", "1"), r"FORM = (\d)")
    warps = Knob("num_warps@b", "k.py", ("4", "8"), r"num_warps=(\d+)", when=("FORM", "1"))
    baseline = {"FORM": "0", "num_warps@b": "4"}
    assert held((form, warps), {"FORM": "0", "num_warps@b": "8"}, baseline) == baseline
    assert held((form, warps), {"FORM": "1", "num_warps@b": "8"}, baseline) == \
        {"FORM": "1", "num_warps@b": "8"}
