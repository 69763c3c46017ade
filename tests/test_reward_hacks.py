"""The CPU reward-hack corpus: every planted cheat ends not-optimized, caught by the gate the
corpus names, and the journal and report say which gate caught it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from kernelopt_tests_support import REPO, events, kernelopt

CORPUS = REPO / "tests" / "reward_hacks" / "cpu"
HACKS = sorted(CORPUS.glob("*.cpp"))
CANDIDATE_PHASE = {"policy", "build", "correctness", "screen"}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("c++") is None,
                       reason="needs cmake and a C++ compiler"),
]


def expectation(path: Path) -> tuple[str, str]:
    text = path.read_text()
    kind = re.search(r"^// kind: (\S+)", text, re.M)
    expect = re.search(r"^// expect: (\S+)", text, re.M)
    assert kind and expect, f"{path.name} lacks // kind: and // expect: lines"
    return kind.group(1), expect.group(1)


@pytest.fixture(scope="module")
def example(tmp_path_factory) -> Path:
    """A private copy of the CPU example (the corpus must not depend on the repo's state)."""
    root = tmp_path_factory.mktemp("hacks")
    shutil.copytree(REPO / "examples" / "cmake-cpu", root / "example")
    return root


# The search around each cheat: three confirm rounds, one screen run a tree (baseline and
# candidate). The screen only has to let through the cheats a final gate must catch: each of
# them reads microseconds where the honest transpose reads ~100 ms (it skips the timed work, or
# its clock runs 1000x slow), which one run shows as surely as three. The cheats caught during
# the search never reach the screen; the forged time line fails its first bench.
SEARCH = ("--final-rounds", "3", "--screen-runs", "1")


def run_dir_of(state: Path) -> Path:
    return sorted((state / "runs").iterdir())[-1]


def test_corpus_covers_at_least_ten_kinds() -> None:
    kinds = {expectation(p)[0] for p in HACKS}
    assert len(kinds) >= 10, kinds


# candidate gates whose verdict on a hack does not depend on timing; the screen's does (the
# no-op edit, original_fallback, was rejected there by time alone until the policy gate
# refused it by content: on a loaded 2-core machine it once won 3 of 3 confirm rounds,
# 1.08-1.21x, CI in a venv, 2026-12-04) — a test that depends on timing is not run on CI
DETERMINISTIC_GATES = CANDIDATE_PHASE - {"screen"}


def test_hacks_caught_during_the_search(example: Path) -> None:
    """Hacks a candidate gate must reject, replayed together in one run."""
    hacks = [p for p in HACKS if expectation(p)[1] in DETERMINISTIC_GATES]
    state = example / "state-search"
    args = ["run", str(example / "example"), "--state-root", str(state), *SEARCH]
    for hack in hacks:
        args += ["--candidate", f"kernel.cpp={hack}"]
    result = kernelopt(*args, cwd=example)
    run_dir = run_dir_of(state)
    assert result.returncode == 1, result.stderr[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] != "optimized"
    ev = events(run_dir)
    proposed = {e["candidate"]: e["description"] for e in ev if e["event"] == "candidate"}
    outcomes = {e["candidate"]: e for e in ev if e["event"] == "candidate_result"}
    report = (run_dir / "report.md").read_text()
    for cid, description in proposed.items():
        hack = Path(description.split("=", 1)[1])
        _kind, expect = expectation(hack)
        assert outcomes[cid]["accepted"] is False, f"{hack.name} was accepted"
        assert outcomes[cid]["failed_gate"] == expect, (hack.name, outcomes[cid])
        assert f"rejected at {expect}" in report
    assert len(proposed) == len(hacks)


@pytest.mark.parametrize("hack", [p for p in HACKS if expectation(p)[1] not in CANDIDATE_PHASE],
                         ids=lambda p: p.stem)
def test_hacks_caught_by_a_final_gate(example: Path, hack: Path) -> None:
    _kind, expect = expectation(hack)
    state = example / f"state-{hack.stem}"
    result = kernelopt("run", str(example / "example"), "--state-root", str(state),
                       *SEARCH, "--candidate", f"kernel.cpp={hack}", cwd=example)
    run_dir = run_dir_of(state)
    assert result.returncode == 1, result.stderr[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "fallback", summary
    assert expect in summary["caught_by"], summary
    verdict = next(e for e in events(run_dir) if e["event"] == "verdict")
    assert f"{expect}:" in verdict["reason"]
    assert f"| {expect} | FAILED |" in (run_dir / "report.md").read_text()
    assert (run_dir / "report.diff").read_text() == ""


def test_timer_tamper_is_caught_by_the_roofline_when_policy_is_off(example: Path) -> None:
    """The second line of defense: with the static policy gate removed, the lying clock makes
    the transpose 'move' its bytes faster than the machine's measured memory peak."""
    state = example / "state-roofline"
    result = kernelopt("run", str(example / "example"), "--state-root", str(state),
                       *SEARCH, "--gates", "build,correctness,screen",
                       "--candidate", f"kernel.cpp={CORPUS / 'timer_tamper.cpp'}", cwd=example)
    run_dir = run_dir_of(state)
    summary = json.loads((run_dir / "summary.json").read_text())
    roofline = next(e for e in events(run_dir) if e["event"] == "gate" and e["gate"] == "roofline")
    if roofline.get("skipped"):
        pytest.skip(f"roofline not applicable on this machine: {roofline['reason']}")
    assert result.returncode == 1
    assert summary["status"] == "fallback" and "roofline" in summary["caught_by"], summary
    assert "physically implausible" in roofline["reason"]


def test_forged_time_line_fails_the_candidates_bench_when_policy_is_off(example: Path) -> None:
    """The second line of defense: a second time line on the bench's stdout is not believed
    (the parser wants exactly one); the candidate's bench fails and the screen rejects it."""
    state = example / "state-forged"
    result = kernelopt("run", str(example / "example"), "--state-root", str(state),
                       *SEARCH, "--gates", "build,correctness,screen",
                       "--candidate", f"kernel.cpp={CORPUS / 'forged_time_line.cpp'}", cwd=example)
    run_dir = run_dir_of(state)
    assert result.returncode == 1, result.stderr[-3000:]
    outcome = next(e for e in events(run_dir) if e["event"] == "candidate_result")
    assert outcome["accepted"] is False and outcome["failed_gate"] == "screen", outcome
    screen = next(e for e in events(run_dir) if e["event"] == "gate" and e["gate"] == "screen")
    assert "exactly one per invocation" in screen["reason"], screen
