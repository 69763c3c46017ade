"""A numeric knob's range grows while the tuner's best holds one of its ends (planners/
tuner_ranges.py, joint.py's extension, knobs.step_beyond/max_value/takes): scripted speedups
and cost surfaces, no clock; and once end to end on a copy of the CPU CMake example whose
bench reads a model of TILE instead of a clock."""

from __future__ import annotations

import math
import shutil
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
from kernelopt_tests_support import REPO, events, kernelopt, last_run, summary

from kernelopt_core import knobs as knob_edit
from kernelopt_core.planners.base import Outcome, PlanContext, Screened
from kernelopt_core.planners.joint import JointSearch
from kernelopt_core.planners.tuner import Tuner, screened_frontier
from kernelopt_core.planners.tuner_options import TunerOptions
from kernelopt_core.planners.tuner_ranges import KnobRange, RangeWatch, edge_note, key
from kernelopt_core.search import Node
from kernelopt_core.settings import Settings
from kernelopt_core.target import Knob, Target

SOURCE = b"#define TILE 8\n#define WARPS 4\nint main() { return 0; }\n"
TILE = knob_edit.detect({"stencil.cpp": SOURCE})[0]  # detected: powers of two 1..128 around 8


class Journal:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def write(self, event: str, **data: Any) -> None:
        self.events.append({"event": event, **data})

    def record(self, event: Any) -> None:
        self.events.append({"event": event.EVENT, **event.data()})


def notes(ctx: PlanContext) -> list[str]:
    return [e["message"] for e in ctx.journal.events  # type: ignore[attr-defined]
            if e["event"] == "warning" and e["gate"] == "tuner"]


def context(knobs: tuple[Knob, ...] = (TILE,), screen: Any = None, baseline: dict | None = None,
            tuner: dict | None = None, **search: Any) -> PlanContext:
    """``tuner``: [tuner] options; ``search``: the run's (iterations...)."""
    target = Target("cmake", "stencil", Path("."), ("stencil.cpp",), knobs=knobs)
    settings = Settings.make(tables={"tuner": TunerOptions(**(tuner or {}))}, **search)
    return PlanContext(target, settings, {"stencil.cpp": SOURCE}, knobs,
                       baseline or {"TILE": "8"}, Journal(), "run-1", screen=screen)


def fastest_at(best: int) -> Any:
    """A speedup over the baseline (TILE 8) that grows with TILE up to ``best``, then falls."""
    return lambda c: 1 + 4 * (1 - abs(math.log2(int(c["TILE"])) - math.log2(best)) / 12)


def drive(ctx: PlanContext, speedup: Any, rounds: int, failing: str = "") -> list[str]:
    """The loop's part, scripted: propose one from the best node, time it (``failing``: a TILE
    whose build fails), tell the tuner; the descriptions proposed, in order."""
    tuner, parent, described = Tuner(), Node("baseline", {}), []
    for i in range(rounds):
        proposals = tuner.propose(ctx, parent, 1)
        if not proposals:
            break
        [proposal] = proposals
        described.append(proposal.description)
        if proposal.knobs["TILE"] == failing:
            outcome = Outcome(f"c{i + 1}", False, None, "build")
        else:
            outcome = Outcome(f"c{i + 1}", True, speedup(proposal.knobs))
        tuner.observe(ctx, proposal, outcome)
        if outcome.speedup and outcome.speedup > parent.speedup:
            parent = Node(f"c{i + 1}", {}, dict(proposal.knobs), speedup=outcome.speedup)
    return described


# ---------------------------------------------------------------------- the next value


@pytest.mark.parametrize(("values", "upward", "beyond"), [
    (("1", "2", "4", "8", "16", "32", "64", "128"), True, 256),  # powers of two: double
    (("16", "32", "64"), False, 8),  # ... or halve
    (("1", "2", "4"), False, None),  # not below 1
    (("2", "4", "8", "16", "24", "32", "64"), True, 128),  # powers_around(24): its ends' own rule
    (("2", "4", "8", "16", "24", "32", "64"), False, 1),
    (("64", "128"), True, 256),  # two powers of two
    (("1", "4", "16"), True, 32),  # the next power of two, not the list's ratio
    (("1", "3", "9"), True, 27),  # a constant ratio
    (("3", "9", "27"), False, 1),
    (("1", "2", "3", "4", "5"), True, 6),  # num_stages: a constant step
    (("1", "2", "3", "4", "5"), False, None),  # 0 is no size
    (("10", "20", "30"), True, 40),
    (("1", "3", "4", "10"), True, 16),  # irregular: the end's own step continued
    (("1", "3", "4", "10"), False, None),
    (("8",), True, None),  # one value: no step to continue
    (("a", "b"), True, None),  # not numbers
    (("0.5", "1"), True, None),
    (("8", "4", "2"), True, None),  # not ascending
    (("-2", "2"), True, None),  # not positive
])
def test_step_beyond_continues_the_progression_at_its_end(values: tuple[str, ...], upward: bool,
                                                          beyond: int | None) -> None:
    assert knob_edit.step_beyond(values, upward) == beyond


def test_max_value_is_the_knobs_own_limit() -> None:
    warps = Knob("num_warps@k", "k.py", ("1", "2", "4"), r"W=(\d+)", "warps", "k")
    [bounds] = knob_edit.launch_bounds_knobs("k.cu", "__global__ void __launch_bounds__(256) k() {}",
                                             each=False)
    assert knob_edit.max_value(warps) == 32  # 1024 threads
    assert knob_edit.max_value(bounds) == 1024
    assert knob_edit.max_value(TILE) == 2 ** 31 - 1  # a C int
    # a backend's own limit (a tile no larger than the problem: inductor_rules) is the knob's
    assert knob_edit.max_value(attrs.evolve(TILE, maximum=64)) == 64
    assert knob_edit.max_value(attrs.evolve(warps, maximum=64)) == 32
    capped = KnobRange(attrs.evolve(TILE, values=("16", "32", "64"), maximum=64), steps=8)
    assert capped.next_value(True, {"stencil.cpp": SOURCE}) == (None, "limit")


def test_takes_checks_that_every_place_reads_the_value_back() -> None:
    files = {"k.cu": b"#define TILE 128\nstatic_assert(TILE == 128);\n"}
    assert knob_edit.takes(Knob("TILE", "k.cu", ("128",), knob_edit.define_pattern("TILE")),
                           files, "4096")
    three_digits = Knob("TILE", "k.cu", ("128",), r"#define TILE (\d{1,3})$")
    assert knob_edit.takes(three_digits, files, "512")
    assert not knob_edit.takes(three_digits, files, "1024")
    pinned = Knob("TILE", "k.cu", ("128",), knob_edit.define_pattern("TILE"),
                  also=(("k.cu", r"static_assert\(TILE == (128|256)\)"),))
    assert knob_edit.takes(pinned, files, "256")
    assert not knob_edit.takes(pinned, files, "512")


def test_a_range_grows_to_its_cap_and_not_past_its_limit() -> None:
    files = {"stencil.cpp": SOURCE}
    tile = KnobRange(TILE, steps=2)
    assert [tile.grow(True, files), tile.grow(True, files), tile.grow(True, files)] == [
        "256", "512", None]
    assert tile.values[-3:] == ("128", "256", "512") and tile.stopped == {True: "cap"}
    assert tile.grow(False, files) is None and tile.stopped[False] == "limit"  # 1: no smaller size
    warps = KnobRange(Knob("WARPS", "stencil.cpp", ("1", "2", "4", "8", "16", "32"),
                           knob_edit.define_pattern("WARPS"), "warps", "k"), steps=8)
    assert warps.next_value(True, files) == (None, "limit")  # 32 warps: 1024 threads
    huge = KnobRange(Knob("TILE", "stencil.cpp", (str(2 ** 29), str(2 ** 30)),
                          knob_edit.define_pattern("TILE")), steps=8)
    assert huge.next_value(True, files) == (None, "limit")  # 2**31 overflows a C int
    assert KnobRange(TILE, steps=0).next_value(True, files) == (None, "cap")


def test_edge_note_says_the_best_is_at_the_end_and_why() -> None:
    assert edge_note("TILE", "4096", True, "the search ended: iterations") == (
        "best TILE=4096 is the largest value tried; larger values may be faster (the search "
        "ended: iterations)")
    assert edge_note("TILE", "1", False, "limit", "screened") == (
        "best TILE=1 is the smallest value screened; TILE takes no smaller one")
    assert "at most [tuner] extend_steps values" in edge_note("TILE", "512", True, "cap")


# ---------------------------------------------------------------------- the neighbour search


def test_the_best_at_the_top_grows_the_range_until_it_lies_inside() -> None:
    """The report of 2026-12-05: TILE detected at 1..128 around 8, fastest at 4096. Each value
    past 128 is proposed once the one before it is the best; 8192 is slower: the best is
    inside, and the notes say what the tuner did."""
    ctx = context()
    described = drive(ctx, fastest_at(4096), 10)
    assert described == ["TILE=16", "TILE=32", "TILE=64", "TILE=128"] + [
        f"TILE={2 ** k} (past TILE's range 1..128)" for k in range(8, 14)]
    assert notes(ctx) == [
        "TILE: the best so far, TILE=128, is the largest value of its range 1..128: larger "
        "ones are tried (doubling, at most 8)",
        "TILE: the best so far, TILE=4096, lies inside its range grown to 1..8192"]


def test_the_cap_ends_the_growth_and_says_larger_values_may_be_faster() -> None:
    ctx = context(tuner={"extend_steps": 2})
    described = drive(ctx, fastest_at(4096), 8)
    assert described[4:6] == ["TILE=256 (past TILE's range 1..128)",
                              "TILE=512 (past TILE's range 1..128)"]
    assert not any("1024" in d for d in described)
    assert notes(ctx)[-1] == ("best TILE=512 is the largest value tried; larger values may be "
                              "faster (the tuner grows a range by at most [tuner] extend_steps "
                              "values each way)")


def test_the_searchs_end_with_the_best_at_the_top_is_said_before_it_ends() -> None:
    """The iteration budget ends the search right after TILE=1024 was the best: the tuner says
    so on that candidate's outcome (the loop stops before it proposes again)."""
    ctx = context(iterations=7)
    described = drive(ctx, fastest_at(4096), 7)
    assert described[-1] == "TILE=1024 (past TILE's range 1..128)"
    assert notes(ctx)[-1] == ("best TILE=1024 is the largest value tried; larger values may be "
                              "faster (the search ended: iterations)")


def test_a_grown_value_that_fails_its_build_ends_the_growth_that_way() -> None:
    ctx = context()
    described = drive(ctx, fastest_at(4096), 12, failing="512")
    assert "TILE=512 (past TILE's range 1..128)" in described
    assert not any("1024" in d for d in described)
    assert notes(ctx)[-1] == "TILE=512 failed at build: TILE's range grows no further past 256"


def test_another_knobs_failure_beside_a_grown_value_does_not_end_its_growth() -> None:
    """Once the best holds a grown end (TILE=128), every neighbour that moves another knob
    carries TILE=128 too: that neighbour's build failing is no verdict on TILE=128."""
    warps = Knob("WARPS", "stencil.cpp", ("2", "4", "8"), knob_edit.define_pattern("WARPS"))
    ctx = context(knobs=(TILE, warps), baseline={"TILE": "8", "WARPS": "4"})
    files = {"stencil.cpp": SOURCE}
    tile = KnobRange(attrs.evolve(TILE, values=("16", "32", "64")), steps=4)
    assert tile.grow(True, files) == "128"
    watch = RangeWatch({"TILE": tile, "WARPS": KnobRange(warps, steps=4)},
                       {key({"TILE": "64", "WARPS": "4"}): 1.2,
                        key({"TILE": "128", "WARPS": "4"}): 1.5})
    watch.failed(ctx, {"TILE": "128", "WARPS": "8"}, Outcome("c3", False, failed_gate="build"))
    assert tile.stopped == {} and not notes(ctx)
    watch.grow(ctx)
    assert tile.values[-1] == "256"
    # the grown value failing on its own (never timed) still ends that end
    watch.failed(ctx, {"TILE": "256", "WARPS": "4"}, Outcome("c4", False, failed_gate="build"))
    assert tile.stopped == {True: "failed"}


def test_a_flat_end_or_a_knobs_own_limit_grows_nothing_and_says_nothing() -> None:
    ctx = context()
    described = drive(ctx, lambda c: 2.0 if int(c["TILE"]) >= 64 else 1.0, 12)  # 64 = 128
    assert not any("past" in d for d in described) and notes(ctx) == []
    warps = Knob("WARPS", "stencil.cpp", ("1", "2", "4", "8", "16", "32"),
                 knob_edit.define_pattern("WARPS"), "warps", "k")
    ctx = context((warps,), baseline={"WARPS": "4"})
    tuner, parent = Tuner(), Node("baseline", {})
    for i in range(8):  # fastest at 32 warps, the most a block holds
        proposals = tuner.propose(ctx, parent, 1)
        if not proposals:
            break
        speedup = int(proposals[0].knobs["WARPS"]) / 4
        tuner.observe(ctx, proposals[0], Outcome(f"c{i}", True, speedup))
        if speedup > parent.speedup:
            parent = Node(f"c{i}", {}, dict(proposals[0].knobs), speedup=speedup)
    assert parent.knobs == {"WARPS": "32"} and tuner.watch.ranges["WARPS"].values[-1] == "32"
    assert notes(ctx) == []


def test_values_the_compile_probe_dropped_are_not_grown_back() -> None:
    """TILE detected at 1..128; a static_assert refuses 64 and 128 (knob_probe.py drops them):
    the list's top, 32, is the knob's limit, not an end to grow past."""
    probed = Knob(TILE.name, TILE.file, TILE.values[:6], TILE.pattern)
    ctx = context((probed,))
    ctx.target = attrs.evolve(ctx.target, knobs=())  # detected: the target declares none
    described = drive(ctx, fastest_at(4096), 8)
    assert described == ["TILE=16", "TILE=32", "TILE=1", "TILE=2", "TILE=4"], described
    assert notes(ctx) == []


def test_a_resumed_run_replaying_its_journal_does_not_say_it_twice() -> None:
    ctx = context()
    ctx.budget.replaying = lambda: True
    tuner, parent = Tuner(), Node("baseline", {})
    for i in range(6):
        [proposal] = tuner.propose(ctx, parent, 1)
        speedup = fastest_at(4096)(proposal.knobs)
        tuner.observe(ctx, proposal, Outcome(f"c{i}", True, speedup, replayed=True))
        parent = Node(f"c{i}", {}, dict(proposal.knobs), speedup=speedup)
    assert tuner.watch.ranges["TILE"].values[-1] == "512"  # the same proposals, the state kept
    assert notes(ctx) == []


# ---------------------------------------------------------------------- the joint search


def test_the_joint_search_grows_a_list_its_best_holds_the_end_of() -> None:
    """Fastest at BLOCK 1024, past the list's 16..128; the number of warps matters too."""
    block = KnobRange(Knob("BLOCK", "k.py", ("16", "32", "64", "128"), r"BLOCK=(\d+)"), 8)
    files = {"k.py": b"BLOCK=32\n"}
    screened: list[dict[str, str]] = []

    def cost(c: dict[str, str]) -> float:
        return 1 + abs(math.log2(int(c["BLOCK"])) - 10) + abs(int(c["WARPS"]) - 2) / 4

    def evaluate(configs: list[dict[str, str]]) -> list[float | None]:
        screened.extend(configs)
        return [cost(c) for c in configs]

    search = JointSearch([("BLOCK", block.values), ("WARPS", ("1", "2", "4"))],
                         {"BLOCK": "32", "WARPS": "1"}, evaluate,
                         extend=lambda name, upward: block.grow(upward, files))
    ranked = search.run()
    assert ranked[0] == ({"BLOCK": "1024", "WARPS": "2"}, 1.0)
    assert block.values[-4:] == ("256", "512", "1024", "2048") and search.edges() == []
    assert {"BLOCK": "2048", "WARPS": "2"} in screened  # slower: the best lies inside
    assert len({tuple(sorted(c.items())) for c in screened}) == len(screened)  # never twice


def test_growing_a_list_at_its_bottom_keeps_every_cost_with_its_configuration() -> None:
    block = KnobRange(Knob("BLOCK", "k.py", ("16", "32", "64", "128"), r"BLOCK=(\d+)"), 8)
    files = {"k.py": b"BLOCK=32\n"}

    def cost(c: dict[str, str]) -> float:  # fastest at BLOCK 2, 4 warps
        return 1 + abs(math.log2(int(c["BLOCK"])) - 1) + abs(int(c["WARPS"]) - 4) / 4

    search = JointSearch([("BLOCK", block.values), ("WARPS", ("1", "2", "4", "8"))],
                         {"BLOCK": "64", "WARPS": "1"}, lambda cs: [cost(c) for c in cs],
                         extend=lambda name, upward: block.grow(upward, files))
    ranked = search.run()
    assert ranked[0] == ({"BLOCK": "2", "WARPS": "4"}, 1.0)
    assert block.values[:4] == ("1", "2", "4", "8") and block.added == {True: 0, False: 4}
    assert all(c == cost(config) for config, c in ranked)


def test_the_screens_budget_leaves_the_best_at_the_end_and_says_so() -> None:
    """Fastest at the largest TILE; each batch holds the GPU for a second, the screen may
    spend 2.5: the whole list (one batch), then 256 and 512 (a batch each)."""
    ctx = context(tuner={"screen_gpu_seconds": 2.5})

    def screen(configs: list[dict[str, str]]) -> list[Screened]:
        ctx.budget.spent.gpu_seconds += 1.0
        return [Screened(c, True, 1.0, 8 / int(c["TILE"])) for c in configs]

    ctx.screen = screen
    frontier = screened_frontier(ctx, {"TILE": "8"})
    assert frontier is not None and frontier[0] == {"TILE": "512"}
    assert notes(ctx) == [
        "TILE: the screen's best held the top of its range 1..128: grown to 1..512; best TILE=512",
        "best TILE=512 is the largest value screened; larger values may be faster (the screen's "
        "budget ended its extension)"]
    assert ctx.profile.tuner_frontier is not None
    assert ctx.profile.tuner_frontier.grown == {"TILE": [str(2 ** k) for k in range(10)]}


# ---------------------------------------------------------------------- end to end

# the real transpose_bench runs (its checksum, shape and bytes kept); its time_ms is a model of
# the tree's TILE, fastest at 32, four times the list's top of 8: no clock, no load decides
MODEL_BENCH = '''import json, math, re, subprocess, sys
from pathlib import Path
repo, build, work = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])
done = subprocess.run([str(build / "transpose_bench"), "--work", str(work), "--iters", "1",
                       "--warmup", "0"], capture_output=True, text=True)
sys.stderr.write(done.stderr)
if done.returncode != 0:
    sys.exit(done.returncode)
line = json.loads(done.stdout.strip().splitlines()[-1])
tile = int(re.search(r"^#define TILE (\\d+)", (repo / "kernel.cpp").read_text(), re.M).group(1))
line["time_ms"] = 80.0 / math.sqrt(min(tile, 32)) * (1 + 0.25 * math.log2(max(tile, 32) / 32)) * work
print(json.dumps(line))
'''


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("c++") is None,
                    reason="needs cmake and a C++ compiler")
def test_a_cmake_run_reaches_the_best_tile_past_its_declared_range(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(REPO / "examples" / "cmake-cpu", project)
    (project / "model_bench.py").write_text(MODEL_BENCH)
    toml = project / "kernelopt.toml"
    text = toml.read_text()
    for old, new in (
            ('bench = "{build}/transpose_bench --work {work}"',
             f'bench = "{sys.executable} -S {{repo}}/model_bench.py {{repo}} {{build}} {{work}}"'),
            ("values = [1, 2, 4, 8, 16, 32, 64, 128]", "values = [1, 2, 4, 8]"),
            ('[[target.knobs]]\nname = "UNROLL"\nvalues = [1, 2, 4, 8]\n', "")):
        assert old in text, f"examples/cmake-cpu/kernelopt.toml changed: {old!r}"
        text = text.replace(old, new)
    toml.write_text(text)
    state = tmp_path / "state"
    result = kernelopt("run", str(project), "--state-root", str(state), "--iterations", "6",
                       "--final-rounds", "2", "--screen-runs", "1", "--seeds", "1", cwd=tmp_path)
    run_dir = last_run(state)
    s = summary(run_dir)
    assert (result.returncode, s["status"]) == (0, "optimized"), result.stderr[-3000:]
    verdict = next(e for e in events(run_dir) if e["event"] == "verdict")
    assert verdict["knobs"] == {"TILE": "32"}, verdict
    assert verdict["description"] == "TILE=32 (past TILE's range 1..8)"
    tried = [e["knobs"]["TILE"] for e in events(run_dir) if e["event"] == "candidate"]
    assert tried == ["2", "4", "8", "16", "32", "64"], tried
    # the console's candidate lines, the report's warnings and its verdict say it
    assert "): TILE=16 (past TILE's range 1..8)" in result.stderr, result.stderr[-3000:]
    assert "tuner: TILE: the best so far, TILE=8, is the largest value of its range 1..8" \
        in result.stderr, result.stderr[-3000:]  # the tuner's notes reach the console too
    report = (run_dir / "report.md").read_text()
    assert ("- tuner: TILE: the best so far, TILE=8, is the largest value of its range 1..8: "
            "larger ones are tried (doubling, at most 8)") in report, report
    assert "- tuner: TILE: the best so far, TILE=32, lies inside its range grown to 1..64" in report
    assert "`c5` — TILE=32 (past TILE's range 1..8)" in report
