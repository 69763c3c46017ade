"""kernelopt campaign (kernelopt_core.campaign): two copies of the CPU example on two slots of
the local executor, real builds and benches; the plan's order and budget split; the ranking
and the Amdahl sum over a model's kernels."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
from kernelopt_tests_support import counted_cpu_example

from kernelopt_core import campaign
from kernelopt_core.journal import read
from kernelopt_core.target import Target

REPO = Path(__file__).resolve().parents[1]
KERNELOPT = [sys.executable, "-c", "from kernelopt_core.cli import main; main()"]
RUN_ARGS = "--iterations 3 --patience 3 --final-rounds 2 --screen-runs 1 --seeds 1"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")
def test_two_targets_on_two_slots_then_the_same_campaign_resumes(tmp_path: Path) -> None:
    for name in ("a", "b"):  # the bench's time a model of the knobs: no verdict rides on the load
        counted_cpu_example(tmp_path / name)
    state = tmp_path / "state"
    command = [*KERNELOPT, "campaign", "a", "b", "--gpus", "0,1", "--name", "cpu",
               "--budget-minutes", "4", "--budget-gpu-minutes", "2", "--run-args", RUN_ARGS,
               "--top", "2", "--backend", "cmake",  # a plugin's run flag and the backend: every job's
               "--state-root", str(state)]
    first = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert first.returncode in (0, 1), first.stdout + first.stderr
    summary = json.loads((state / "campaigns" / "cpu" / "summary.json").read_text())
    assert summary["gpus"] == ["0", "1"]
    assert {r["run"] for r in summary["results"]} == {"cpu-01", "cpu-02"}
    assert all(r["status"] == "optimized" for r in summary["results"])
    assert summary["verified"] == sum(r["status"] == "optimized" for r in summary["results"])
    assert {r["gpu"] for r in summary["results"]} <= {"0", "1"}
    events = read(state / "campaigns" / "cpu" / "campaign.jsonl")
    [plan] = [e for e in events if e["event"] == "campaign"]
    for argv in plan["jobs"]:  # each job its share of the budgets, then the run arguments
        assert argv[argv.index("--budget-minutes") + 1] == "4.00"  # 4 × 2 slots × 1/2
        assert argv[argv.index("--budget-gpu-seconds") + 1] == "60.0"
        assert argv[-len(RUN_ARGS.split()) - 4:] == [*RUN_ARGS.split(), "--top", "2",
                                                     "--backend", "cmake"]
    lines = {r: (state / "runs" / r / "journal.jsonl").read_text().count("\n")
             for r in ("cpu-01", "cpu-02")}
    # the same campaign again: every run is finished, so nothing runs again
    again = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert again.returncode == first.returncode, again.stdout + again.stderr
    assert {r: (state / "runs" / r / "journal.jsonl").read_text().count("\n")
            for r in lines} == lines
    # a later campaign ranks by headroom: the last runs' fractions of peak are known now
    later = subprocess.run([*KERNELOPT, "campaign", "a", "--gpus", "1", "--name", "later",
                            "--run-args", RUN_ARGS, "--state-root", str(state)],
                           cwd=tmp_path, capture_output=True, text=True, timeout=600)
    [plan] = [e for e in read(state / "campaigns" / "later" / "campaign.jsonl")
              if e["event"] == "campaign"]
    assert plan["entries"][0]["headroom_known"] is True, later.stdout + later.stderr


def test_a_plugin_flag_given_to_the_campaign_and_in_run_args_is_refused(tmp_path: Path) -> None:
    for run_args in ("--iterations 3 --top 3", "--top=3"):
        result = subprocess.run([*KERNELOPT, "campaign", str(tmp_path), "--top", "2", "--run-args",
                                 run_args], capture_output=True, text=True, timeout=60)
        assert result.returncode == 2, result.stdout + result.stderr
        assert "--top is given twice" in result.stderr and "give it once" in result.stderr
    result = subprocess.run([*KERNELOPT, "campaign", str(tmp_path), "--backend", "cmake",
                             "--run-args", "--backend=cmake"], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2 and "--backend is given twice" in result.stderr, result.stderr
    # a job's share of a campaign budget is the campaign's to write
    result = subprocess.run([*KERNELOPT, "campaign", str(tmp_path), "--budget-cost", "5"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "--budget-cost" in result.stderr and "--budget-usd" in result.stderr


def _target(name: str, share: float | None) -> Target:
    return Target("triton", name, Path("/m"), (f"{name}.py",), time_share=share)


def test_plan_orders_by_expected_gain_and_splits_the_budgets(tmp_path: Path) -> None:
    found = [("/model", [_target("small", 0.1), _target("big", 0.6)]),
             ("/kernels", [_target("k1", None), _target("k2", None)])]
    entries = campaign.plan("c", found, tmp_path)
    assert [e.target for e in entries] == ["big", "k1", "k2", "small"]  # 0.6, 0.5, 0.5, 0.1
    flags = campaign.budgets(entries, 2, gpu_minutes=17.0, usd=1.7, wall_minutes=10.0)
    big = flags[entries[0].key]
    assert big == ["--budget-gpu-seconds", "360.0", "--budget-cost", "0.6000",
                   "--budget-minutes", "7.06"]  # 0.6 / 1.7 of each; wall: 2 slots
    assert flags[entries[-1].key][1] == "60.0"


def test_the_plan_shows_how_near_its_peak_each_kernel_ran_in_its_profile(tmp_path: Path) -> None:
    """ConvNeXt-T's capture on an H100 (2026-12-07, bench/results/2026-12-07-h100-modes-
    convnext-llama: kernels.json's time per call, Inductor's bytes, the 3017.9 GB/s the roofline
    gate measured): its GELU ran at 0.89 of the peak, its layer norm at 0.55. The fraction is
    shown and journaled beside the plan, never a headroom: the order and the budget split stay
    share × the last run's headroom (on that day's six kernels it did not predict the wins).
    Bytes the cache holds, or no peak, give none."""
    def kernel(name: str, share: float, ms: float, nbytes: int) -> Target:
        return attrs.evolve(_target(name, share), bytes_moved=nbytes, profiled_ms=ms,
                            device="cuda")

    gelu = kernel("gelu_view_1", 0.0814, 0.1143, 308281344)
    norm = kernel("layer_norm_0", 0.0440, 0.0463, 77070912)
    small = kernel("small", 0.05, 0.001, 1 << 20)
    asked: list[tuple[str, str]] = []

    def peaks(path: str, target: Target) -> tuple[float, int]:
        asked.append((path, target.name))
        return 3017.9, 50 << 20

    entries = campaign.plan("p", [("/convnext", [gelu, norm, small])], tmp_path, peaks)
    assert [e.target for e in entries] == ["gelu_view_1", "small", "layer_norm_0"]  # by share
    by_name = {e.target: e for e in entries}
    assert by_name["gelu_view_1"].profiled_fraction == pytest.approx(0.894, abs=0.005)
    assert by_name["layer_norm_0"].profiled_fraction == pytest.approx(0.552, abs=0.005)
    assert by_name["small"].profiled_fraction is None  # 1 MiB: the cache may have served it
    assert all(e.headroom == 1.0 and not e.headroom_known for e in entries)
    assert ("/convnext", "layer_norm_0") in asked
    assert campaign.plan("q", [("/m", [norm])], tmp_path)[0].profiled_fraction is None


def test_the_profiled_fraction_uses_the_gates_peak_and_never_measures(tmp_path: Path,
                                                                      monkeypatch) -> None:
    """The plan reads the peak the roofline gate would (--peak-gbps, the descriptor's, else
    this machine's device cache) and the cache size kept with it, and measures nothing (its
    jobs may run on other GPUs)."""
    from kernelopt_core.commands import campaign as command
    from kernelopt_core.gates.options import RooflineOptions
    from kernelopt_core.measure import device
    from kernelopt_core.settings import Settings, table_name

    def no_measuring(*args: object, **kwargs: object) -> None:
        raise AssertionError("the plan measured the device")

    monkeypatch.setattr(device, "measure", no_measuring)
    monkeypatch.setenv("KERNELOPT_DEVICE_CACHE", str(tmp_path / "device"))
    norm = attrs.evolve(_target("layer_norm_0", 0.044), bytes_moved=77070912, profiled_ms=0.0463,
                        device="cuda")
    plain = Settings(state_root=tmp_path)
    given = Settings(state_root=tmp_path,
                     tables={table_name(RooflineOptions): RooflineOptions(peak_gbps=2000.0)})
    peaks = command._peaks(tmp_path, {"/a": plain, "/b": given})
    # nothing measured here yet: no cache size, so no fraction, a peak given or not
    assert peaks("/a", norm) is None and peaks("/b", norm) is None
    (tmp_path / "device").mkdir()
    (tmp_path / "device" / f"{device.device_key('cuda')}.json").write_text(json.dumps(
        {"peak_gbps": 3017.9, "cache_bytes": 50 << 20, "measured_at": 0}))
    assert peaks("/a", norm) == (3017.9, 50 << 20)
    assert peaks("/b", norm) == (2000.0, 50 << 20)
    assert peaks("/a", attrs.evolve(norm, peak_gbps=2500.0)) == (2500.0, 50 << 20)
    assert peaks("/a", _target("unprofiled", 0.1)) is None


def test_summary_ranks_by_time_saved_and_sums_a_model_by_amdahl(tmp_path: Path) -> None:
    from kernelopt_core.executors import JobResult
    from kernelopt_core.journal import Journal

    found = [("/model", [_target("a", 0.5), _target("b", 0.25)]), ("/dir", [_target("k", None)])]
    entries = campaign.plan("m", found, tmp_path)
    journal = Journal(tmp_path / "campaign.jsonl")
    journal.write("campaign", name="m", executor="local", gpus=["0"],
                  entries=[{**attrs.asdict(e), "priority": e.priority} for e in entries], jobs=[])
    outcomes = {"a": ("optimized", 2.0), "b": ("matched", 1.0), "k": ("optimized", 4.0)}
    for e in entries:
        status, speedup = outcomes[e.target]
        result = JobResult(e.key, 0, "", "local", "0", 1.0)
        journal.write("job", **attrs.asdict(result),
                      summary={"status": status, "speedup": speedup, "report_line": status})
    journal.close()
    s = campaign.summarize(tmp_path / "campaign.jsonl")
    assert [r["target"] for r in s["results"]] == ["k", "a", "b"]  # saved 0.75, 0.25, 0
    # the model: a's half of the time halves, b unchanged -> 1 / (1 - 0.25)
    assert s["models"]["/model"]["amdahl_speedup"] == pytest.approx(1 / 0.75)
    assert "/dir" not in s["models"]  # a directory of kernels is not one program


def test_local_executor_starts_jobs_in_the_order_given(tmp_path: Path) -> None:
    """The Executor contract: jobs start in the order given (the campaign's priority). One
    slot, so each job starts only after the one before it has ended."""
    import sys

    from kernelopt_core.executors import Job, LocalExecutor

    log = tmp_path / "order.txt"
    append = "import sys; open(sys.argv[1], 'a').write(sys.argv[2] + '\\n')"
    keys = ["j3", "j1", "j5", "j0", "j4", "j2"]  # not sorted: the given order, not the names'
    jobs = [Job(k, (sys.executable, "-c", append, str(log), k), str(tmp_path)) for k in keys]
    results: list[str] = []
    LocalExecutor().run(jobs, ["0"], lambda r: results.append(r.key), tmp_path / "logs")
    assert log.read_text().split() == keys and results == keys
