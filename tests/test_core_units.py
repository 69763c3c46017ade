"""Knobs, settings, search, workspace isolation and revert."""

from __future__ import annotations

import subprocess
from pathlib import Path

import attrs
import pytest

from kernelopt_core import knobs
from kernelopt_core.errors import UsageError
from kernelopt_core.gates.options import ConfirmOptions, RooflineOptions, ScreenOptions, ShapeOptions
from kernelopt_core.search import BeamSearch, Node
from kernelopt_core.settings import FIELDS, Settings, load
from kernelopt_core.target import Knob, Target
from kernelopt_core.testing import fingerprint, git_repo, write_chunk_project
from kernelopt_core.workspace import Workspace, snapshot

CUDA = b"""#define CUDA_SOFTMAX_BLOCK_SIZE 256
#define WARP_SIZE 32
#define N_ITEMS 7
__global__ void __launch_bounds__(256) k(float* x) {
#pragma unroll 4
  for (int i = 0; i < 4; ++i) x[i] *= 2;
}
"""


def test_knob_detection_finds_block_sizes_launch_bounds_and_unroll() -> None:
    found = {k.name: k for k in knobs.detect({"softmax.cu": CUDA})}
    assert set(found) == {"CUDA_SOFTMAX_BLOCK_SIZE", "WARP_SIZE", "launch_bounds@softmax.cu",
                          "unroll@softmax.cu"}
    assert "1024" in found["CUDA_SOFTMAX_BLOCK_SIZE"].values
    values = knobs.current_values(tuple(found.values()), {"softmax.cu": CUDA})
    assert values["launch_bounds@softmax.cu"] == "256" and values["unroll@softmax.cu"] == "4"
    edits = knobs.apply(tuple(found.values()), {"softmax.cu": CUDA},
                        {**values, "CUDA_SOFTMAX_BLOCK_SIZE": "512", "unroll@softmax.cu": "8"})
    text = edits["softmax.cu"].decode()
    assert "#define CUDA_SOFTMAX_BLOCK_SIZE 512" in text and "#pragma unroll 8" in text
    assert "__launch_bounds__(256)" in text


def test_knob_pattern_must_match_exactly_once() -> None:
    knob = Knob("X", "a.c", ("1", "2"), knobs.define_pattern("X"))
    with pytest.raises(UsageError, match="matches 0 times"):
        knobs.current_values((knob,), {"a.c": b"int x;\n"})
    with pytest.raises(UsageError, match="matches 2 times"):
        knobs.current_values((knob,), {"a.c": b"#define X 1\n#define X 2\n"})
    # a knob in a file the target may not edit: every tuner proposal would fail at `editable`
    with pytest.raises(UsageError, match="not one of the target's editable files"):
        knobs.current_values((knob,), {"a.c": b"#define X 1\n", "b.c": b""}, ("b.c",))
    # its `also` places obey the same rules, and must hold the knob's value
    coupled = attrs.evolve(knob, also=(("b.c", r"assert\(X == (\d+)\)"),))
    with pytest.raises(UsageError, match="matches 0 times in b.c"):
        knobs.current_values((coupled,), {"a.c": b"#define X 1\n", "b.c": b""})
    with pytest.raises(UsageError, match="different values"):
        knobs.current_values((coupled,), {"a.c": b"#define X 1\n", "b.c": b"assert(X == 2)"})
    with pytest.raises(UsageError, match="not one of the target's editable files"):
        knobs.current_values((coupled,), {"a.c": b"#define X 1\n", "b.c": b"assert(X == 1)"},
                             ("a.c",))


def test_settings_precedence_and_origins(tmp_path: Path, monkeypatch) -> None:
    toml = tmp_path / "kernelopt.toml"
    toml.write_text("[run]\niterations = 5\npatience = 3\ngamma = 1.05\n")
    monkeypatch.setenv("KERNELOPT_PATIENCE", "4")
    monkeypatch.setenv("KERNELOPT_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / ".env").write_text("KERNELOPT_BEAM=2\nKERNELOPT_PATIENCE=9\n")
    s = load(toml, {"gamma": 1.1}, cwd=tmp_path)
    assert (s.search.iterations, s.search.patience, s.section(ConfirmOptions).gamma,
            s.search.beam) == (5, 4, 1.1, 2)
    assert s.origins["iterations"] == str(toml)
    assert s.origins["patience"] == "env KERNELOPT_PATIENCE"  # the real environment wins
    assert s.origins["confirm.gamma"] == "option --gamma"
    # gamma in [run]: read into [confirm], a note saying where it belongs now
    assert load(toml, {}, cwd=tmp_path).section(ConfirmOptions).gamma == 1.05
    assert any("`gamma` in [run]" in n and "[confirm]" in n for n in s.notes)
    with pytest.raises(UsageError, match=r"option --gamma: \[confirm\] `gamma` = 0.9: must be at least 1"):
        load(None, {"gamma": 0.9}, cwd=tmp_path)


def test_settings_keep_only_the_cores_own_fields_grouped_under_flat_names(tmp_path: Path) -> None:
    """Issue 37: Settings holds at most 15 fields; the grouped settings keep their flat names
    ([run] keys, flags, KERNELOPT_*), which Settings.make takes and flat() gives back; the
    built-in planners' options are their own tables ([tuner], [replay]), read like a plugin's."""
    assert len(attrs.fields(Settings)) <= 15
    assert {"iterations", "candidate_gates", "bench_timeout_s", "seeds", "state_root"} <= set(FIELDS)
    assert not {"screen_top", "screen_evaluations", "screen_gpu_seconds",
                "screen_config_timeout_s", "candidates", "final_rounds", "kappa"} & set(FIELDS)
    s = Settings.make(state_root=tmp_path, seeds=(1,), screen_runs=1, iterations=2,
                      build_timeout_s=9.0)
    assert (s.section(ScreenOptions).screen_runs, s.search.iterations,
            s.timeouts.build_timeout_s, s.seeds) == (1, 2, 9.0, (1,))
    flat = s.flat()  # the built-in gates' options too, by their flat names (the run header)
    assert set(flat) == {*FIELDS, "final_rounds", "kappa", "gamma", "screen_runs", "worker_rounds",
                         "min_noise_pct", "peak_gbps", "checksum_rtol"}
    assert flat["screen_runs"] == 1 and flat["gamma"] == 1.03
    assert Settings.make(**flat) == Settings(state_root=tmp_path, **{
        g: getattr(s, g) for g in ("search", "gates", "timeouts")}, seeds=(1,), tables={
        t: s.section(cls) for t, cls in (("screen", ScreenOptions), ("confirm", ConfirmOptions),
                                         ("shape", ShapeOptions), ("roofline", RooflineOptions))})


def test_the_built_in_planners_options_are_their_own_tables(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """[tuner] and [replay] through every source a plugin's table has: kernelopt.toml, the
    environment, -o, the flag (--candidate repeatable); a bad value names where it came from."""
    from kernelopt_core.planners.replay import ReplayOptions
    from kernelopt_core.planners.tuner_options import TunerOptions

    tables = (TunerOptions, ReplayOptions)
    project = tmp_path / "kernelopt.toml"
    project.write_text("[tuner]\nscreen_top = 5\nscreen_gpu_seconds = 30\n")
    monkeypatch.setenv("KERNELOPT_SCREEN_EVALUATIONS", "40")
    s = load(project, {"option": ("screen_config_timeout_s=9",),
                       "candidates": ("k.cu=a.cu", "k.cu=b.cu")}, cwd=tmp_path, tables=tables)
    assert s.section(TunerOptions) == TunerOptions(5, 40, 30.0, 9.0)
    assert s.section(ReplayOptions).candidates == ("k.cu=a.cu", "k.cu=b.cu")
    assert s.origins["tuner.screen_top"] == f"{project}:2"
    project.write_text("[run]\nscreen_top = 5\n")  # the key moved: where it belongs now
    with pytest.raises(UsageError) as moved:
        load(project, {}, cwd=tmp_path, tables=tables)
    assert "`screen_top` belongs in [tuner]" in (moved.value.hint or "")
    project.write_text("[tuner]\nscreen_top = 0\n")
    with pytest.raises(UsageError, match=r"kernelopt.toml.*\[tuner\] `screen_top` = 0"):
        load(project, {}, cwd=tmp_path, tables=tables)


@pytest.mark.parametrize(("flags", "message"), [
    ({"min_noise_pct": 0.0}, "`min_noise_pct` = 0.0"),
    ({"bench_timeout_s": -1.0}, "`bench_timeout_s` = -1.0"),
    ({"llm_timeout_s": 0.0}, "option --llm-timeout-s: \\[agents\\] `llm_timeout_s` = 0.0"),
    ({"budget_cost": -2.0}, "`budget_cost` = -2.0: 'budget_cost' must be > 0"),
    ({"max_malformed": -3}, "`max_malformed` = -3"),
    ({"edit_mode": "sed"}, "`edit_mode` = 'sed'"),
    ({"seeds": "1,1"}, "distinct"),
])
def test_settings_that_would_break_a_run_are_refused(tmp_path: Path, monkeypatch, flags,
                                                     message: str) -> None:
    from kernelopt_core.planners.agent_options import AgentOptions

    monkeypatch.setenv("KERNELOPT_CONFIG", str(tmp_path / "none.toml"))
    with pytest.raises(UsageError, match=message):
        load(None, flags, cwd=tmp_path, tables=(AgentOptions,))


def test_beam_ucb_prefers_fast_nodes_but_explores() -> None:
    search = BeamSearch(Node("baseline", {}), width=2)
    search.add(Node("a", {}, speedup=2.0))
    search.add(Node("b", {}, speedup=1.5))
    search.add(Node("c", {}, speedup=1.1))  # outside the beam of 2
    picks = [search.select().id for _ in range(30)]
    assert picks.count("a") > picks.count("b") > 0 and "c" not in picks
    search.nodes["a"].exhausted = search.nodes["b"].exhausted = True
    assert search.select().id == "c"
    assert search.best().id == "a"


def test_snapshot_includes_uncommitted_work_and_skips_ignored(tmp_path: Path) -> None:
    project = write_chunk_project(tmp_path / "p")
    (project / ".gitignore").write_text("build/\n*.o\n")
    (project / "build").mkdir()
    (project / "build" / "junk.txt").write_text("x")
    (project / "k.o").write_text("x")
    git_repo(project)
    files, _modes = snapshot(project)
    assert "# uncommitted note" in files["kernel.py"].decode()
    assert "staged.txt" in files and "NOTES.txt" not in files  # the stash is not the worktree
    assert "build/junk.txt" not in files and "k.o" not in files
    assert not any(p.startswith(".git/") for p in files)


def test_workspace_commits_tags_and_diffs_without_touching_the_user(tmp_path: Path) -> None:
    project = git_repo(write_chunk_project(tmp_path / "p"))
    before = fingerprint(project)
    target = Target("scripted", "chunk", project, ("kernel.py",))
    ws = Workspace(tmp_path / "state", target)
    base = ws.start("r1")
    new = ws.files["kernel.py"].replace(b"CHUNK = 1", b"CHUNK = 64")
    ws.use_candidate({"kernel.py": new})
    assert (ws.candidate_tree.src / "kernel.py").read_bytes() == new
    assert (ws.baseline_tree.src / "kernel.py").read_bytes() == ws.files["kernel.py"]
    commit, tag = ws.commit_candidate("r1", "c1", {"kernel.py": new}, "c1: CHUNK=64")
    assert tag == "kernelopt/r1/c1" and ws.tags()[tag] == commit
    diff = ws.diff(base, commit).decode()
    assert "-CHUNK = 1" in diff and "+CHUNK = 64" in diff and "a/kernel.py" in diff
    applied = subprocess.run(["git", "apply", "--check", "-"], input=diff.encode(), cwd=project)
    assert applied.returncode == 0
    assert fingerprint(project) == before


def test_a_backend_harness_is_in_every_tree_and_in_no_diff(tmp_path: Path) -> None:
    project = git_repo(write_chunk_project(tmp_path / "p"))
    before = fingerprint(project)
    harness = {"bench.py": b"# harness\n" + (project / "bench.py").read_bytes()}
    target = Target("scripted", "chunk", project, ("kernel.py",), harness=harness)
    ws = Workspace(tmp_path / "state", target)
    base = ws.start("r1")
    for tree in (ws.baseline_tree, ws.candidate_tree):
        assert (tree.src / "bench.py").read_bytes() == harness["bench.py"]
    new = ws.files["kernel.py"].replace(b"CHUNK = 1", b"CHUNK = 64")
    commit, _tag = ws.commit_candidate("r1", "c1", {"kernel.py": new}, "c1")
    diff = ws.diff(base, commit).decode()
    assert "harness" not in diff and "+CHUNK = 64" in diff
    assert fingerprint(project) == before  # the user's bench.py is untouched
    clash = Target("scripted", "chunk", project, ("kernel.py",), harness={"kernel.py": b"x"})
    with pytest.raises(RuntimeError, match="harness file kernel.py is editable"):
        Workspace(tmp_path / "state2", clash).start("r2")


def test_materialize_keeps_mtimes_of_unchanged_files(tmp_path: Path) -> None:
    project = write_chunk_project(tmp_path / "p")
    ws = Workspace(tmp_path / "state", Target("scripted", "chunk", project, ("kernel.py",)))
    ws.start("r1")
    bench = ws.candidate_tree.src / "bench.py"
    stamp = bench.stat().st_mtime_ns
    ws.use_candidate({"kernel.py": b"CHUNK = 2\n"})
    ws.use_candidate({})
    assert bench.stat().st_mtime_ns == stamp
    assert (ws.candidate_tree.src / "kernel.py").read_bytes() == ws.files["kernel.py"]


def test_kernelopt_home_moves_the_state_root_unless_a_flag_does(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("KERNELOPT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KERNELOPT_CONFIG", str(tmp_path / "none.toml"))
    # the CLI passes every option, unset ones as None
    assert load(None, {"state_root": None}, cwd=tmp_path).state_root == tmp_path / "home"
    flagged = load(None, {"state_root": tmp_path / "flag"}, cwd=tmp_path)
    assert flagged.state_root == tmp_path / "flag"


def test_snapshot_skips_symlinks_that_leave_the_target(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("outside")
    project = write_chunk_project(tmp_path / "p")
    (project / "leak.txt").symlink_to(secret)
    (project / "alias.py").symlink_to(project / "kernel.py")
    files, _ = snapshot(project)
    assert "leak.txt" not in files and "alias.py" in files


def test_a_build_directory_is_configured_once_and_again_after_a_failed_configure(tmp_path) -> None:
    from kernelopt_core.cmake_support import needs_configure

    build, argv = tmp_path / "build", ["cmake", "-S", "src", "-B", "build"]
    assert needs_configure(build, argv)  # new directory
    (build / "CMakeCache.txt").write_text("cache")
    (build / "Makefile").write_text("all:")
    assert not needs_configure(build, argv)  # configured: only rebuild
    assert needs_configure(build, [*argv, "-DX=1"])  # other arguments: a clean cache
    assert not (build / "CMakeCache.txt").exists()
    (build / "CMakeCache.txt").write_text("cache")
    (build / "Makefile").unlink()  # a configure that failed before generating
    assert needs_configure(build, [*argv, "-DX=1"])


def test_a_proposal_names_each_knob_short_and_its_kernel_once() -> None:
    """Issue 31: report rows repeated a 100-character Inductor kernel name after every knob."""
    from kernelopt_core.knobs import describe_assignment, short_name

    long = ("triton_red_fused__softmax_add_exp_gelu_mean_mul_native_layer_norm_prepare_softmax_"
            "online_sigmoid_sub_0")
    text = describe_assignment({f"R0_BLOCK@{long}": "512", f"num_warps@{long}": "2",
                                "TILE": "32", "unroll@kernel.cu": "4"})
    assert text == (f"{short_name(long)}: R0_BLOCK=512, num_warps=2; TILE=32; "
                    "kernel.cu: unroll=4")
    assert len(short_name(long)) == 40 and short_name(long).endswith("…sigmoid_sub_0")
    assert short_name("softmax_kernel") == "softmax_kernel"
    # Inductor's kernels of one model differ in their ending index: their short forms too
    assert short_name(long[:-1] + "1") != short_name(long)


def test_a_gate_option_left_in_run_is_read_with_a_note_or_said_ignored(tmp_path: Path) -> None:
    """Issue 56 moved the gates' options to their own tables: `[run] final_rounds` still
    works, with a note naming [confirm]; where [confirm] sets it too, [confirm] wins and the
    note says the [run] one is ignored."""
    from kernelopt_core.gates.options import ConfirmOptions
    from kernelopt_core.settings import load

    toml = tmp_path / "kernelopt.toml"
    toml.write_text("[run]\nfinal_rounds = 3\n")
    moved = load(toml, {}, cwd=tmp_path)
    assert moved.section(ConfirmOptions).final_rounds == 3
    assert moved.notes == [f"{toml}: `final_rounds` in [run] is read, but it belongs in [confirm] "
                           "now (a gate's)"]
    toml.write_text("[run]\nfinal_rounds = 3\n\n[confirm]\nfinal_rounds = 5\n")
    both = load(toml, {}, cwd=tmp_path)
    assert both.section(ConfirmOptions).final_rounds == 5
    assert both.notes == [f"{toml}: `final_rounds` in [run] is ignored: [confirm] sets it (a gate's)"]
