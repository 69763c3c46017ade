"""The engine's pair mode for real, on the CPU: Inductor emits Triton kernels for the CPU
(``cpu_backend="triton"``), Triton's interpreter runs them, and one engine process compiles a
small model once with two versions of its kernel (engine_switch.py). A candidate with another
launch config matches and is timed beside the baseline; a candidate that computes something
else is caught by the whole-model comparison; a candidate whose kernel does not compile is
reported as the candidate's failure, with the baseline's side intact."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from kernelopt_triton import inductor

CHILD_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(Path(inductor.__file__).parents[1]), os.environ.get("PYTHONPATH", "")])}
MODEL = '''import torch
from torch import nn

TOLERANCE = {"atol": 1e-4, "rtol": 1e-4}


class Gate(nn.Module):
    def forward(self, x):
        return torch.sigmoid(x) * 2.0 + 1.0


def model():
    return Gate()


def inputs(seed, device):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(64, 32, generator=gen).to(device),)
'''


def _child(args: list[str], cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=str(cwd), env=CHILD_ENV)


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """The model, its standalone kernel file (generated from a real CPU capture), its name."""
    root = tmp_path_factory.mktemp("pair")
    model = root / "gate_model.py"
    model.write_text(MODEL)
    cap = root / "cap"
    for args in (["capture", str(model), "--out", str(cap), "--device", "cpu"],
                 ["generate", str(cap), "--top", "1"]):
        proc = _child(["kernelopt_triton.inductor", *args], root)
        assert proc.returncode == 0, proc.stderr[-3000:]
    name = json.loads((cap / "kernels.json").read_text())["kernels"][0]["name"]
    return model, cap / "targets" / f"{name}.py", name


def _pair(captured: tuple[Path, Path, str], candidate_text: str, tmp_path: Path,
          *extra: str) -> tuple[int, dict, str]:
    model, baseline, name = captured
    candidate = tmp_path / f"{name}.py"
    candidate.write_text(candidate_text)
    proc = _child(["kernelopt_triton.engine", str(model), "--kernel", name, "--source",
                   str(candidate), "--baseline-source", str(baseline), "--device", "cpu",
                   "--rounds", "2", "--cache-dir", str(tmp_path / "cache"), *extra], tmp_path)
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 1, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc.returncode, lines[0], proc.stderr


@pytest.mark.slow
def test_one_process_compares_and_times_both_versions(captured, tmp_path: Path) -> None:
    _model, baseline, _name = captured
    text = baseline.read_text()
    # 16 elements a program instead of 1024: 64 times the interpreted programs, far slower
    other = re.sub(r"XBLOCK=\d+", "XBLOCK=16", text, count=1)
    assert other != text
    code, line, _ = _pair(captured, other, tmp_path)
    assert code == 0 and line["match"] is True and line["kernelopt_engine"] == 1, line
    assert len(line["baseline_ms"]) == len(line["candidate_ms"]) == 2
    # the timed rounds ran each version: the candidate's reads slower in every round
    assert all(c > 2 * b for b, c in zip(line["baseline_ms"], line["candidate_ms"], strict=True))
    # what the switch ran is what it was asked to: a wrong body is caught
    wrong = text.replace("2.0", "2.5")
    assert wrong != text
    code, line, _ = _pair(captured, wrong, tmp_path)
    assert code == 0 and line["match"] is False and "baseline_ms" not in line
    assert "max abs err" in line["detail"]


@pytest.mark.slow
def test_a_candidate_that_does_not_compile_fails_its_own_side(captured, tmp_path: Path) -> None:
    _model, baseline, name = captured
    broken = baseline.read_text().replace(f"def {name}(", f"def {name}(undefined_arg, ", 1)
    code, line, stderr = _pair(captured, broken, tmp_path)
    assert code == 4 and line["side"] == "candidate", (line, stderr[-2000:])


BROKEN_GRAPH = MODEL.replace(
    "        return torch.sigmoid(x) * 2.0 + 1.0",
    "        y = torch.sigmoid(x) * 2.0 + 1.0\n"
    "        torch._dynamo.graph_break()\n"
    "        return torch.sigmoid(y) * 3.0 + 1.0")


@pytest.mark.slow
def test_a_graph_break_gives_each_graphs_kernel_its_own_name(tmp_path: Path) -> None:
    """Inductor names the same-shaped kernel of each graph alike; the capture keeps the first
    graph's name and calls the second's NAME_g1, and the engine, compiling the model again,
    gives the same names: a wrong version of the second graph's kernel is caught there."""
    model = tmp_path / "two_graphs.py"
    model.write_text(BROKEN_GRAPH)
    cap = tmp_path / "cap"
    for args in (["capture", str(model), "--out", str(cap), "--device", "cpu"],
                 ["generate", str(cap), "--top", "2"]):
        proc = _child(["kernelopt_triton.inductor", *args], tmp_path)
        assert proc.returncode == 0, proc.stderr[-3000:]
    kernels = json.loads((cap / "kernels.json").read_text())["kernels"]
    names = sorted(k["name"] for k in kernels)
    assert len(names) == 2 and names[1] == names[0] + "_g1", names
    second = cap / "targets" / f"{names[1]}.py"
    assert "3.0" in second.read_text() and "3.0" not in (cap / "targets" / f"{names[0]}.py").read_text()
    wrong = second.read_text().replace("3.0", "3.5")
    code, line, _ = _pair((model, second, names[1]), wrong, tmp_path)
    assert code == 0 and line["match"] is False, line


@pytest.mark.slow
def test_the_model_four_ways_with_the_winner_swapped_in(captured, tmp_path: Path) -> None:
    """model_compare: max-autotune compiles first, in the same process, and must not take the
    kernel names the default compile's switch looks for (a review found it did)."""
    model, baseline, name = captured
    winner = tmp_path / "winner.py"
    winner.write_text(re.sub(r"XBLOCK=\d+", "XBLOCK=16", baseline.read_text(), count=1))
    proc = _child(["kernelopt_triton.model_compare", str(model), "--device", "cpu", "--modes",
                   "eager,max-autotune,default,kernelopt", "--swap", f"{name}={winner}",
                   "--rounds", "2", "--windows", "2"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    modes = result["modes"]
    assert set(modes) == {"eager", "max-autotune", "default", "kernelopt"}
    assert all(m["match_eager"] for m in modes.values()), modes
    assert modes["kernelopt"]["ms"] > 2 * modes["default"]["ms"]  # the winner really ran
    # faster than kernelopt by its median, two rounds (fewer than 3) decide nothing: timed
    # again, once, as many rounds, with kernelopt (issue 53: looked at twice, no more)
    assert result["extended"]["modes"][0] == "kernelopt" and "default" in result["extended"]["modes"]
    assert result["extended"]["rounds"] == 2 and modes["default"]["windows"] == 8
    assert modes["eager"]["windows"] == 4 and modes["kernelopt"]["windows"] == 8
    # then, over the 4 rounds both were timed, the unslowed compile is faster beyond its band:
    # the winner that slowed the model is not what kernelopt returns
    assert result["kernelopt"] in ("default", "max-autotune"), result["choice"]
    assert result["choice"]["over"] == "kernelopt" and result["choice"]["pairs"] == 4


def _renamed(captured: tuple[Path, Path, str], tmp_path: Path, new: str
             ) -> tuple[tuple[Path, Path, str], Path]:
    """The capture's files as if the capture had numbered the kernel ``new``."""
    model, baseline, name = captured
    files = {}
    for role, source in (("targets", baseline), ("kernels", baseline.parent.parent / "kernels"
                                                 / f"{name}.py")):
        (tmp_path / role).mkdir(exist_ok=True)
        files[role] = tmp_path / role / f"{new}.py"
        files[role].write_text(re.sub(rf"\b{name}\b", new, source.read_text()))
    return (model, files["targets"], new), files["kernels"]


@pytest.mark.slow
def test_the_kernel_is_found_by_its_code_whatever_this_compile_numbers_it(
        captured, tmp_path: Path) -> None:
    """Issue 53: the capture named the kernel one way, this compile another (a kernel deduped
    in one and not the other shifts every number); the engine finds it by its code and runs
    the candidate there. A kernel that only shares the captured name is never swapped."""
    name = captured[2]
    moved, source = _renamed(captured, tmp_path, "triton_poi_fused_moved_7")
    slower = re.sub(r"XBLOCK=\d+", "XBLOCK=16", moved[1].read_text(), count=1)
    code, line, stderr = _pair(moved, slower, tmp_path, "--capture-source", str(source))
    assert code == 0 and line["match"] is True, (line, stderr[-2000:])
    assert line["identity"] == f"by code: triton_poi_fused_moved_7 (named {name} here)"
    assert all(c > 2 * b for b, c in zip(line["baseline_ms"], line["candidate_ms"], strict=True))
    # the capture's kernel of that name computed something else: not this compile's kernel
    other = tmp_path / "other.py"
    other.write_text(source.read_text().replace("2.0", "2.5").replace("triton_poi_fused_moved_7", name))
    code, line, _ = _pair(captured, captured[1].read_text(), tmp_path, "--capture-source", str(other))
    assert code == 4 and line["side"] == "baseline", line
    assert f"this compile's {name} computes something else" in line["engine_error"]


@pytest.mark.slow
def test_under_cuda_graph_modes_each_version_is_its_own_compile(captured, tmp_path: Path) -> None:
    """reduce-overhead replays CUDA graphs (on the CPU Inductor skips them, the compile path is
    the same): each version its own compile, and the candidate's compile runs the candidate."""
    _model, baseline, _name = captured
    slower = re.sub(r"XBLOCK=\d+", "XBLOCK=16", baseline.read_text(), count=1)
    code, line, stderr = _pair(captured, slower, tmp_path, "--compile-mode", "reduce-overhead")
    assert code == 0 and line["match"] is True, (line, stderr[-2000:])
    assert line["compile"] == "mode='reduce-overhead'" and line["cuda_graphs"] is False
    assert all(c > 2 * b for b, c in zip(line["baseline_ms"], line["candidate_ms"], strict=True))


@pytest.mark.slow
def test_the_model_table_starts_from_the_users_compile(captured, tmp_path: Path) -> None:
    """model_compare's default modes plus the model's own compile (--compile-mode), and the
    winners compiled into that compile, found by their code."""
    moved, source = _renamed(captured, tmp_path, "triton_poi_fused_moved_3")
    winner = tmp_path / "winner.py"
    winner.write_text(re.sub(r"XBLOCK=\d+", "XBLOCK=16", moved[1].read_text(), count=1))
    proc = _child(["kernelopt_triton.model_compare", str(moved[0]), "--device", "cpu",
                   "--compile-mode", "reduce-overhead", "--swap", f"{moved[2]}={winner}",
                   "--capture-source", f"{moved[2]}={source}", "--rounds", "3", "--windows", "1",
                   "--cache-dir", str(tmp_path / "cache")], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    modes = result["modes"]
    assert list(modes) == ["eager", "default", "reduce-overhead", "max-autotune-no-cudagraphs",
                           "max-autotune", "kernelopt"]
    assert result["baseline"] == "reduce-overhead"
    assert all(m["match_eager"] for m in modes.values()), modes
    assert modes["kernelopt"]["ms"] > 2 * modes["reduce-overhead"]["ms"]  # the winner ran
    # a winner that makes the model slower is not returned: the fastest compile measured is
    chosen, choice = result["kernelopt"], result["choice"]
    assert chosen not in ("kernelopt", "eager"), choice
    assert choice["over"] == "kernelopt" and choice["ratio"] > 1.5 and chosen in choice["why"]
    assert result["kernelopt_vs_max_autotune"] == pytest.approx(
        modes["max-autotune"]["ms"] / modes[chosen]["ms"])
    assert modes["kernelopt"]["vs_baseline"] < 0.5  # paired with the model's own compile
    assert result["identity"].startswith("by code: triton_poi_fused_moved_3 (named ")


TWIN_GRAPHS = MODEL.replace(
    "        return torch.sigmoid(x) * 2.0 + 1.0",
    "        y = torch.sigmoid(x) * 2.0 + 1.0\n"
    "        torch._dynamo.graph_break()\n"
    "        return torch.sigmoid(y) * 2.0 + 1.0")


@pytest.mark.slow
def test_a_graph_break_with_twin_kernels_under_cuda_graph_modes(tmp_path: Path) -> None:
    """The review's two cases at once: a graph break (each version's compile must compile
    every graph again, not reuse the first compile's) and the same kernel code in both graphs
    (NAME and NAME_g1: the one wanted is the one swapped, never its twin). Also the model
    check of such a model, which compiles it once per mode."""
    model = tmp_path / "twins.py"
    model.write_text(TWIN_GRAPHS)
    cap = tmp_path / "cap"
    for args in (["capture", str(model), "--out", str(cap), "--device", "cpu"],
                 ["generate", str(cap), "--top", "2"]):
        proc = _child(["kernelopt_triton.inductor", *args], tmp_path)
        assert proc.returncode == 0, proc.stderr[-3000:]
    ranked = [k["name"] for k in json.loads((cap / "kernels.json").read_text())["kernels"]]
    names = sorted(ranked)
    assert names[1] == names[0] + "_g1", names
    twin = cap / "targets" / f"{names[1]}.py"
    # --top 1 where the first kernel does not stand alone (as max-autotune's GEMM templates,
    # launched on a FixedGrid): it is skipped, said so, and the next one is generated
    other = tmp_path / "cap-fixed"
    shutil.copytree(cap, other, ignore=shutil.ignore_patterns("targets"))
    first = other / "kernels" / f"{ranked[0]}.py"
    first.write_text(first.read_text().replace("Grid1D", "FixedGrid"))
    proc = _child(["kernelopt_triton.inductor", "generate", str(other), "--top", "1"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    skipped = json.loads((other / "targets" / "skipped.json").read_text())
    assert list(skipped) == [ranked[0]] and "FixedGrid" in skipped[ranked[0]]
    assert (other / "targets" / f"{ranked[1]}.py").is_file()
    assert not (other / "targets" / f"{ranked[0]}.py").exists()
    slower = re.sub(r"XBLOCK=\d+", "XBLOCK=16", twin.read_text(), count=1)
    source = cap / "kernels" / f"{names[1]}.py"
    code, line, stderr = _pair((model, twin, names[1]), slower, tmp_path, "--capture-source",
                               str(source))
    assert code == 0 and line["match"] is True, (line, stderr[-2000:])
    assert line["identity"] == "by code, same names"
    assert all(c > 1.3 * b for b, c in zip(line["baseline_ms"], line["candidate_ms"], strict=True))
    # under CUDA graph modes each version is its own compile: every graph compiled again
    code, line, stderr = _pair((model, twin, names[1]), slower, tmp_path, "--compile-mode",
                               "reduce-overhead", "--capture-source", str(source))
    assert code == 0 and line["match"] is True, (line, stderr[-2000:])
    assert line["identity"] == "by code, same names"
    assert all(c > 1.3 * b for b, c in zip(line["baseline_ms"], line["candidate_ms"], strict=True))
    proc = _child(["kernelopt_triton.model_compare", str(model), "--device", "cpu",
                   "--swap", f"{names[1]}={tmp_path / f'{names[1]}.py'}",
                   "--capture-source", f"{names[1]}={source}", "--modes",
                   "eager,default,kernelopt", "--compile-mode", "reduce-overhead",
                   "--rounds", "1", "--windows", "2",
                   "--cache-dir", str(cap / "cache")], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["identity"] == "by code, same names"
    assert all(m["match_eager"] for m in result["modes"].values())
    assert result["modes"]["kernelopt"]["ms"] > 1.3 * result["modes"]["reduce-overhead"]["ms"]


@pytest.mark.slow
def test_a_compile_with_inductor_settings_on_top_is_a_mode_of_its_own(tmp_path: Path) -> None:
    """Issue 53: model_compare --setting compiles the model's own compile again with Inductor
    settings on top, checks its outputs and times it beside its own compile (a paired ratio per
    round and its band); a setting Inductor fails to compile with is listed apart, with its
    cause, the rest still timed; one Inductor refuses outright is exit 2 before any compile."""
    model = tmp_path / "gate.py"
    model.write_text(MODEL)
    proc = _child(["kernelopt_triton.model_compare", str(model), "--device", "cpu", "--modes",
                   "eager", "--setting", "triton.persistent_reductions=False",
                   "--setting", 'triton.max_tiles="x"', "--rounds", "2", "--windows", "2"],
                  tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    modes = result["modes"]
    assert result["baseline"] == "default"
    assert "model_compare: default+triton.persistent_reductions=False compiled and ran in" in (
        proc.stderr)
    setting = modes["default+triton.persistent_reductions=False"]
    assert setting["settings"] == {"triton.persistent_reductions": False}
    # 2 rounds, or 4 where it ran faster than the own compile by its median (timed again)
    again = setting.get("pairs") == 4
    assert setting["match_eager"] and setting["pairs"] == (4 if again else 2)
    assert again == ("default+triton.persistent_reductions=False"
                     in result.get("extended", {}).get("modes", []))
    assert setting["vs_baseline"] > 0 and setting["vs_baseline_band_pct"] >= 0
    assert all("ms" in m for m in modes.values())  # the model check's line: every mode timed
    failed = result["failed_settings"]["default+triton.max_tiles=x"]
    assert failed["settings"] == {"triton.max_tiles": "x"} and "TypeError" in failed["failed"]

    refused = _child(["kernelopt_triton.model_compare", str(model), "--device", "cpu",
                      "--modes", "eager", "--setting", "no_such_inductor_setting=1"], tmp_path)
    assert refused.returncode == 2
    assert "--setting no_such_inductor_setting=1: " in refused.stderr
    assert "no_such_inductor_setting" in refused.stderr and "compiled" not in refused.stderr


def test_a_setting_is_key_equals_a_python_literal_or_a_bare_string() -> None:
    from kernelopt_triton.compile_mode import (
        CompileError,
        parse_setting,
        setting_label,
        with_settings,
    )

    assert parse_setting("triton.persistent_reductions=False, coordinate_descent_search_radius=2"
                         ) == {"triton.persistent_reductions": False,
                               "coordinate_descent_search_radius": 2}
    assert parse_setting("max_autotune_gemm_search_space=EXHAUSTIVE") == {
        "max_autotune_gemm_search_space": "EXHAUSTIVE"}
    for bad in ("", "freezing", "=1", "freezing="):
        with pytest.raises(CompileError, match="KEY=VALUE"):
            parse_setting(bad)
    with pytest.raises(CompileError, match="a value is True/False"):
        parse_setting("x={1}")
    # on top of a mode: the mode stays (Inductor applies it, then the options)
    assert with_settings({"mode": "max-autotune"}, {"freezing": True}) == {
        "mode": "max-autotune", "options": {"freezing": True}}
    assert setting_label({"freezing": True, "a.b": 2}) == "+freezing=True+a.b=2"


def test_kernelopt_returns_the_fastest_compile_measured_beyond_its_band() -> None:
    """Issue 53: the model's own compile with its winners stays what kernelopt returns unless
    another compile of the same process ran faster beyond the band of their paired rounds,
    with outputs that matched; then that one, and the line says why."""
    from kernelopt_triton.model_compare import fastest

    def ratio(r: float, band: float, pairs: int = 10) -> dict:
        return {"vs_baseline": r, "vs_baseline_band_pct": band, "pairs": pairs}

    modes = {"kernelopt": {"match": True}, "max-autotune": {"match": True},
             "reduce-overhead": {"match": True}, "default": {"match": False}}
    inside = {"max-autotune": ratio(1.02, 2.5), "reduce-overhead": ratio(0.97, 1.0)}
    kept, why = fastest("kernelopt", inside, modes)
    assert kept == "kernelopt" and "over" not in why
    assert why["why"] == ("no other compile measured faster than kernelopt by its rounds "
                          "(closest: max-autotune 1.020x, band ±2.5 %, 10 paired rounds)")
    beyond = {**inside, "reduce-overhead": ratio(1.05, 1.0), "default": ratio(1.40, 0.5)}
    kept, why = fastest("kernelopt", beyond, modes)  # default mismatched: never returned
    assert kept == "reduce-overhead" and why["over"] == "kernelopt"
    assert (why["ratio"], why["band_pct"], why["pairs"]) == (1.05, 1.0, 10)
    assert why["why"] == ("reduce-overhead ran 1.050x as fast as kernelopt (±1.0 %, 10 paired "
                          "rounds, outputs matched eager)")
    assert fastest("max-autotune", {}, modes)[0] == "max-autotune"
    # a faster rival whose outputs mismatched is named as such, never returned
    kept, why = fastest("kernelopt", {"default": ratio(1.40, 0.5)}, modes)
    assert kept == "kernelopt" and "; its outputs did not match eager)" in why["why"]
    # two paired rounds are no band: the compile asked for stays
    assert fastest("kernelopt", {"max-autotune": ratio(1.50, 0.0, pairs=2)}, modes)[0] == "kernelopt"
    # the compile asked for computed something else: the fastest one whose outputs matched
    wrong = {**modes, "kernelopt": {"match": False}}
    kept, why = fastest("kernelopt", inside, wrong)
    assert kept == "max-autotune" and why["over"] == "kernelopt"
    assert why["why"].startswith("kernelopt's outputs did not match eager; max-autotune's did")


def test_a_rival_that_won_every_round_is_faster_whatever_the_own_compiles_band() -> None:
    """Issue 53: a host-bound own compile (GPT-2's default on the H100, ±34 % a window, its
    paired band ±14 %) hides no rival that won the rounds: the confirm gate's sign test
    (p <= SIGN_ALPHA, 0.01) is evidence as the band is. 9 of 10 rounds (p = 0.011) and 6 of 6
    (p = 0.016) are not; 10 of 10 (p = 0.001) and 8 of 8 (p = 0.004) are."""
    from kernelopt_triton.model_compare import fastest, paired

    modes = {"default": {"match": True}, "reduce-overhead": {"match": True},
             "max-autotune": {"match": True}}

    def rounds(won: int, pairs: int) -> dict:
        # per round (3 windows each): the own compile's median window over the rival's
        own = [2.60, 1.90, 2.62] * pairs
        rival = [2.28] * 3 * won + [2.70] * 3 * (pairs - won)
        return paired(own, rival, 3)

    noisy = rounds(10, 10)
    assert noisy["won"] == 10 and noisy["round_ratios"] == [round(2.60 / 2.28, 4)] * 10
    wide = {**noisy, "vs_baseline_band_pct": 14.39}  # the band alone would keep the default
    kept, why = fastest("default", {"reduce-overhead": wide}, modes)
    assert kept == "reduce-overhead" and why["won"] == 10
    assert why["why"] == ("reduce-overhead ran 1.140x as fast as default (±14.39 %, won 10 of 10 "
                          "paired rounds, sign test p=0.00098, outputs matched eager)")
    for won, pairs in ((9, 10), (6, 6)):
        near = {**rounds(won, pairs), "vs_baseline_band_pct": 14.39}
        kept, why = fastest("default", {"reduce-overhead": near}, modes)
        assert kept == "default", (won, pairs)
        assert f"won {won} of {pairs} paired rounds, sign test p=0.0" in why["why"]
    assert fastest("default", {"max-autotune": {**rounds(8, 8), "vs_baseline_band_pct": 9.0}},
                   modes)[0] == "max-autotune"
    # faster by its median, not by its rounds: timed again (undecided); decided either way: not
    from kernelopt_triton.model_compare import undecided_rival

    assert undecided_rival({**rounds(9, 10), "vs_baseline_band_pct": 14.39})
    assert not undecided_rival(noisy) and not undecided_rival(
        {"vs_baseline": 0.98, "vs_baseline_band_pct": 0.5, "pairs": 10, "won": 3})
    # a rival timed again has more rounds than the own compile's other rivals: paired over the
    # rounds both were timed
    assert paired([2.0] * 6, [1.0] * 12, 3)["pairs"] == 2
    # a rival slower by its median never wins by rounds (it cannot have won most of them)
    slower = {"vs_baseline": 0.98, "vs_baseline_band_pct": 0.5, "pairs": 10, "won": 10}
    assert fastest("default", {"max-autotune": slower}, modes)[0] == "default"


DEPTHWISE_MODEL = '''import torch
from torch import nn

TOLERANCE = {"atol": 1e-4, "rtol": 1e-4}


def model():
    return nn.Sequential(nn.Conv2d(8, 8, 7, padding=3, groups=8), nn.GELU())


def inputs(seed, device):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 8, 12, 12, generator=gen).to(device)
    return (x.contiguous(memory_format=torch.channels_last),)
'''


@pytest.mark.slow
def test_the_capture_race_is_the_default_compile_against_reduce_overhead(tmp_path: Path) -> None:
    """Issue 53: the race a model with no compile named gets (models.InductorBackend._race),
    with its arguments: one process, the default compile as the model's own, reduce-overhead
    beside it, and a choice between them that says why (on the CPU there are no CUDA graphs:
    which one wins is the clock's, so only the shape of the answer is checked). The capture
    chose kernelopt's depthwise kernel for the model's convolution (the unnamed compile's
    opaque form): both sides are compiled with it, as the runs will be, and the words say so.
    The plumbing, not the op: on the CPU model_compare runs Inductor's Triton kernels under
    Triton's interpreter, where the decomposition keeps the library's convolution
    (depthwise.interpreted; test_lowerings compiles the op in, without the interpreter)."""
    from kernelopt_triton.models import RACE_FILE, race_argv, raced_mode

    model = tmp_path / "dw_model.py"
    model.write_text(DEPTHWISE_MODEL)
    (tmp_path / "depthwise.json").write_text(json.dumps({"launches": {
        "2x8x12x12/7x7/s1x1/p3x3/d1x1": {"block_w": 8, "block_c": 32, "num_warps": 2,
                                        "block_h": 4}}, "form": "opaque"}))
    argv = race_argv(model, tmp_path)
    assert argv[argv.index("--depthwise") + 1] == str(tmp_path / "depthwise.json")
    race = tmp_path / RACE_FILE
    proc = _child(["kernelopt_triton.model_compare", *argv, "--device", "cpu"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = json.loads(race.read_text())
    assert line["baseline"] == "default" and list(line["modes"]) == [
        "eager", "reduce-overhead", "default"]
    assert all(m["match_eager"] for m in line["modes"].values())
    assert line["depthwise"]["sides"] == "every compile"
    assert line["depthwise"]["as"] == "1 shapes as kernelopt's op (opaque)"
    # each side's compile counted the op's calls it made: none under the interpreter (on a GPU
    # the convolutions chosen, once a graph)
    assert line["depthwise"]["ops"] == {"reduce-overhead": 0, "default": 0}
    assert line["kernelopt"] in ("default", "reduce-overhead") and line["choice"]["why"]
    mode, words = raced_mode(line)
    assert mode == (None if line["kernelopt"] == "default" else "reduce-overhead")
    assert line["choice"]["why"] in words and "both with 1 shapes as kernelopt's op" in words
    assert "(traced into no call of the op: reduce-overhead, default)" in words  # said


@pytest.mark.slow
def test_the_model_check_builds_its_kernelopt_side_with_the_chosen_convolutions(
        tmp_path: Path) -> None:
    """model_compare --depthwise (the capture's depthwise.json) with no kernel winner: the
    kernelopt side is a copy of the model with its chosen depthwise convolution swapped,
    compiled apart, timed beside the user's compile and checked against eager (on the CPU the
    swapped module runs the library's convolution: the plumbing, not the kernel)."""
    model = tmp_path / "dw_model.py"
    model.write_text(DEPTHWISE_MODEL)
    record = tmp_path / "depthwise.json"
    record.write_text(json.dumps({"launches": {"2x8x12x12/7x7/s1x1/p3x3/d1x1": {
        "block_w": 8, "block_c": 32, "num_warps": 2, "block_h": 4}}, "form": "inlined"}))
    proc = _child(["kernelopt_triton.model_compare", str(model), "--device", "cpu",
                   "--depthwise", str(record), "--modes", "eager,kernelopt", "--rounds", "1",
                   "--windows", "2", "--cache-dir", str(tmp_path / "cache")], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["depthwise"] == {"file": str(record), "sides": "kernelopt",
                                   "as": "1 shapes inlined (1 modules swapped)"}
    assert set(result["modes"]) == {"eager", "default", "kernelopt"}
    assert all(m["match_eager"] for m in result["modes"].values())
    # kernelopt's model handed back (optimized_model.py): its convolution swapped as chosen
    result["kernelopt"] = "kernelopt"
    (tmp_path / "model_compare.json").write_text(json.dumps(result))
    used = _use(model, tmp_path, tmp_path)
    assert used["how"] == ("compiled as 'kernelopt'; depthwise: 1 shapes inlined (1 modules "
                           "swapped)") and used["same"], used


USE_CHECK = '''import importlib.util, json, os, sys
os.environ["TRITON_INTERPRET"] = "1"
from kernelopt_triton.interpreter import prepare_cpu_triton
prepare_cpu_triton()
import torch
import kernelopt_triton
spec = importlib.util.spec_from_file_location("user_model", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
(x,) = module.inputs(7, "cpu")
from torch._dynamo.utils import counters
from kernelopt_triton import optimized_model
try:
    fast = kernelopt_triton.optimized(module.model(), sys.argv[2])
    first = fast(x)
    graphs = counters["stats"]["unique_graphs"]
    second = fast(x)
    recompiled = counters["stats"]["unique_graphs"] - graphs  # none: the compile is kept
except (kernelopt_triton.CheckError, kernelopt_triton.NotApplied) as exc:
    print(json.dumps({"error": type(exc).__name__, "why": str(exc)}))
    sys.exit(0)
err = {scale: float((first - (torch.sigmoid(x) * scale + 1.0)).abs().max())
       for scale in (2.0, 2.5)}
# a later compile of the user's is Inductor's own: the hook passes it through
later = torch.compile(lambda t: torch.sigmoid(t) * 2.0 + 1.0)(x)
print(json.dumps({"label": fast.choice.label, "how": fast.how, "err": err,
                  "recompiled": recompiled,
                  "same": bool(torch.equal(first, second)),
                  "hook_off": optimized_model._HOOK.enabled is False,
                  "later_err": float((later - (torch.sigmoid(x) * 2.0 + 1.0)).abs().max())}))
'''


def _use(model: Path, check: Path | str, tmp_path: Path) -> dict:
    """kernelopt_triton.optimized(model, check) in a process of its own, as a user's (no
    TORCHINDUCTOR_CACHE_DIR: Inductor's default cache, under this test's TMPDIR)."""
    script = tmp_path / "use_check.py"
    script.write_text(USE_CHECK)
    env = {k: v for k, v in CHILD_ENV.items() if not k.startswith("TORCHINDUCTOR_")}
    proc = subprocess.run([sys.executable, str(script), str(model), str(check)],
                          capture_output=True, text=True, timeout=300, cwd=str(tmp_path),
                          env={**env, "TMPDIR": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_the_user_gets_the_compile_the_model_check_chose(captured, tmp_path: Path) -> None:
    """kernelopt_triton.optimized: the model check's choice compiled again in the user's own
    process. A winner that computes another function (2.5 for 2.0) is caught by the check, which
    returns another compile; that compile is what the user gets. The same check made to return
    kernelopt's model gives the winner, found by its code: its function is what the model
    computes. A model without the captured kernel is refused, as is a check it cannot use."""
    from kernelopt_triton.optimized_model import CheckError, find_check, read_choice

    model, baseline, name = captured
    wrong = tmp_path / "winner" / f"{name}.py"
    wrong.parent.mkdir()
    wrong.write_text(baseline.read_text().replace("2.0", "2.5"))
    check = tmp_path / "model-1"
    check.mkdir()
    # the winner given relative to the check's folder: model_compare.json holds it resolved
    proc = _child(["kernelopt_triton.model_compare", str(model), "--device", "cpu", "--modes",
                   "eager,default,kernelopt", "--swap", f"{name}=winner/{name}.py", "--capture-source",
                   f"{name}={baseline.parent.parent / 'kernels' / f'{name}.py'}",
                   "--rounds", "2", "--windows", "2", "--out", str(check / "model_compare.json"),
                   "--cache-dir", str(tmp_path / "cache")], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((check / "model_compare.json").read_text())
    assert result["modes"]["kernelopt"]["match_eager"] is False and result["kernelopt"] == "default"
    assert result["compiles"] == {"default": {}, "kernelopt": {}}
    assert result["swaps"] == {name: str(wrong.resolve())}
    assert result["detail"] == ("the model it returns, in your own process: kernelopt_triton."
                                f"optimized(model, {str(check.resolve())!r})")
    # the campaign's folder (one model check, model-1) is found as well as the file
    assert find_check(tmp_path) == check / "model_compare.json"
    used = _use(model, tmp_path, tmp_path)
    assert used["label"] == "default" and used["how"] == "compiled as 'default'"
    assert used["err"]["2.0"] < 1e-5 and used["same"], used
    # kernelopt's model: the winner in place of the captured kernel
    result["kernelopt"] = "kernelopt"
    (check / "model_compare.json").write_text(json.dumps(result))
    used = _use(model, check, tmp_path)
    assert used["label"] == "kernelopt" and used["err"]["2.5"] < 1e-5 and used["same"], used
    assert used["how"] == "compiled as 'kernelopt'; 1 winner(s) found by code, same names"
    assert used["recompiled"] == 0 and used["hook_off"] and used["later_err"] < 1e-5, used
    other = tmp_path / "other_model.py"
    other.write_text(MODEL.replace("* 2.0 + 1.0", "* 3.0 + 1.0"))
    refused = _use(other, check, tmp_path)
    assert refused["error"] == "NotApplied" and f"no kernel of this compile has the code of {name}" \
        in refused["why"], refused
    # a check made before the hand-back, or whose winner is gone, says so before any compile
    del result["compiles"]
    (check / "model_compare.json").write_text(json.dumps(result))
    with pytest.raises(CheckError, match="run the model check again"):
        read_choice(check / "model_compare.json")
    wrong.unlink()
    (check / "model_compare.json").write_text(json.dumps({**result, "compiles": {
        "default": {}, "kernelopt": {}}}))
    with pytest.raises(CheckError, match="is gone"):
        read_choice(check / "model_compare.json")
    with pytest.raises(CheckError, match="no model check at 'nothing-here'"):
        find_check("nothing-here", tmp_path / "state")
    # a campaign's name under the state folder; two model checks in one campaign: say which
    campaign = tmp_path / "state" / "campaigns" / "cn"
    (campaign / "model-1").mkdir(parents=True)
    (campaign / "model-1" / "model_compare.json").write_text("{}")
    assert find_check("cn", tmp_path / "state") == campaign / "model-1" / "model_compare.json"
    (campaign / "model-2").mkdir()
    (campaign / "model-2" / "model_compare.json").write_text("{}")
    with pytest.raises(CheckError, match="holds 2 model checks \\(model-1, model-2\\)"):
        find_check("cn", tmp_path / "state")
    with pytest.raises(CheckError, match="not a model check's result"):
        read_choice(campaign / "model-1" / "model_compare.json")
