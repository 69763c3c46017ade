"""The profilers' parsers on output recorded on the H200 (tests/fixtures/profilers/), the
target's kernels told from the harness's, the report's table, and the exit-3 message of a
profiler that is not installed."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernelopt_core.profiling import parsers
from kernelopt_core.profiling import view as profile_view
from kernelopt_core.profiling.builtin import Ncu, Nsys, Rocprof

FIXTURES = Path(__file__).parent / "fixtures" / "profilers"
REPO = Path(__file__).resolve().parents[1]


def fixture(name: str) -> str:
    path = FIXTURES / name
    if path.suffix == ".gz":
        return gzip.decompress(path.read_bytes()).decode()
    return path.read_text()


def test_ncu_metrics_are_per_launch_not_summed_over_launches() -> None:
    kernels = parsers.ncu_kernels(fixture("ncu-cmake-cuda-baseline.csv"))
    row_sum = next(k for k in kernels if "row_sum_kernel" in k.name)
    fill = next(k for k in kernels if "fill_input" in k.name)
    assert (row_sum.launches, fill.launches) == (8, 1)
    m = row_sum.metrics
    # one launch reads the 16384 x 4096 f32 input once: 268 MB, not 8 launches' worth
    assert m["dram__bytes_read.sum"] == pytest.approx(268.4e6, rel=0.01)
    assert m["gpu__time_duration.sum.us"] == pytest.approx(193.86, abs=0.01)
    assert row_sum.mean_us == pytest.approx(m["gpu__time_duration.sum.us"])
    # a percentage stays a percentage (it was 544.3 % when summed over every launch)
    assert 0 < m["sm__throughput.avg.pct_of_peak_sustained_elapsed"] <= 100
    assert 0 < m["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"] <= 100
    assert m["launch__registers_per_thread"] == 44
    assert kernels[0] is row_sum  # heaviest first


def test_the_targets_kernels_are_told_from_the_harness_and_the_libraries() -> None:
    from kernelopt_triton.backend import TritonBackend

    from kernelopt_core.api import cuda_kernel_names

    cuda = cuda_kernel_names({"kernel.cu": (REPO / "examples/cmake-cuda/kernel.cu").read_bytes()})
    assert cuda == {"row_sum_kernel": "kernel.cu"}  # declared with __launch_bounds__(...)
    softmax = REPO / "examples/triton/softmax.py"
    triton = TritonBackend().kernel_names(None, {"softmax.py": softmax.read_bytes(),  # type: ignore[arg-type]
                                                 "kernel.cu": b"__global__ void not_mine() {}"})
    assert triton == {"softmax_kernel": "softmax.py"}
    parsed = {"tool": "ncu", "kernels": [k.to_json() for k in parsers.ncu_kernels(
        fixture("ncu-triton-softmax.csv.gz"))]}
    profile = profile_view.annotate(parsed, triton)
    mine = [k for k in profile["kernels"] if k["target"]]
    assert [k["name"] for k in mine] == ["softmax_kernel"] and mine[0]["launches"] == 11
    assert mine[0]["file"] == "softmax.py"
    apart = {k["name"] for k in profile["kernels"] if not k["target"]}
    assert any("spin_kernel" in n for n in apart) and any("FillFunctor" in n for n in apart)
    assert sum(k["share_pct"] for k in profile["kernels"]) == pytest.approx(100, abs=0.1)
    read = mine[0]["metrics"]["dram__bytes_read.sum"]
    # the example's two passes over each row (its poor defaults): the input read twice
    assert read == pytest.approx(2 * 8192 * 8192 * 4, rel=0.01)
    assert profile_view.is_target("void <unnamed>::row_sum_kernel<4>(const float *, int)",
                                  {"row_sum_kernel"})
    assert not profile_view.is_target("my_row_sum_kernel(float *)", {"row_sum_kernel"})


def test_the_report_table_sets_baseline_beside_winner() -> None:
    names = {"row_sum_kernel": "kernel.cu"}
    profiles = []
    for label, name in (("baseline", "ncu-cmake-cuda-baseline.csv"),
                        ("winner", "ncu-cmake-cuda-tuned.csv")):
        parsed = {"tool": "ncu", "kernels": [k.to_json() for k in parsers.ncu_kernels(fixture(name))]}
        profiles.append((label, profile_view.annotate(parsed, names)))
    table = profile_view.kernel_table(profiles)
    rows = [line for line in table if line.startswith("| baseline") or line.startswith("| winner")]
    assert len(rows) == 2 and "row_sum_kernel<1>" in rows[0] and "row_sum_kernel<4>" in rows[1]
    # µs per launch and DRAM % of peak, as measured: 193.86 → 64.57 µs, 29.0 → 87.2 %
    assert "| 193.86 |" in rows[0] and "| 64.57 |" in rows[1]
    assert "| 29.0 |" in rows[0] and "| 87.2 |" in rows[1]
    assert "long_scoreboard" in rows[0]  # the top stall reason
    assert any("1 other kernel(s)" in line for line in table)  # fill_input, apart


def test_ncu_per_kernel_summary_ranks_a_multi_kernel_program() -> None:
    per_launch = parsers.ncu_kernels(fixture("ncu-multikernel.csv"))
    summary = parsers.ncu_summary(fixture("ncu-multikernel-summary.csv"))
    assert [k.name.split("(")[0] for k in summary] == ["scale_add", "row_max", "tiny_bias"]
    assert [k.launches for k in summary] == [6, 3, 3]
    assert [k.name for k in summary] == [k.name for k in per_launch]
    for a, b in zip(summary, per_launch, strict=True):  # two ncu runs, the same ranking
        assert a.mean_us == pytest.approx(b.mean_us, rel=0.05)
    rows = profile_view.ranking(profile_view.annotate(
        {"kernels": [k.to_json() for k in summary]}, {"row_max": "multikernel.cu"}))
    assert rows[1][4] == "multikernel.cu" and rows[0][4] == ""
    assert float(rows[0][0].rstrip(" %")) > 70


def test_the_ncu_profiler_wraps_with_fixed_clocks_and_parses_its_csv(tmp_path: Path) -> None:
    from kernelopt_core.target import Command

    wrapped = Ncu().wrap(Command(("./bench", "--work", "1.0"), tmp_path), tmp_path)
    argv = list(wrapped.argv)
    assert argv[:3] == ["ncu", "--clock-control", "none"] and argv[-3:] == ["./bench", "--work", "1.0"]
    assert argv[argv.index("--log-file") + 1] == str(tmp_path / "ncu.csv")
    assert Ncu().parse(tmp_path) == {"error": "ncu wrote no CSV"}
    shutil.copy(FIXTURES / "ncu-cmake-cuda-tuned.csv", tmp_path / "ncu.csv")
    parsed = Ncu().parse(tmp_path)
    assert parsed["tool"] == "ncu" and parsed["kernels"][0]["launches"] == 8
    json.dumps(parsed)  # journal-ready
    assert Nsys().parse(tmp_path)["error"] and Rocprof().parse(tmp_path)["error"]


@pytest.mark.parametrize("profiler, tool", [("ncu", "ncu"), ("nsys", "nsys"),
                                             ("rocprof", "rocprof"),
                                             ("graphsignal", "graphsignal-run")])
def test_a_missing_profiler_exits_3_naming_what_to_install(tmp_path: Path, profiler: str,
                                                           tool: str) -> None:
    if shutil.which(tool):
        pytest.skip(f"{tool} is installed here")
    project = tmp_path / "cpu"
    shutil.copytree(REPO / "examples" / "cmake-cpu", project)
    proc = subprocess.run([sys.executable, "-c", "from kernelopt_core.cli import main; main()",
                           "profile", str(project), "--profiler", profiler,
                           "--state-root", str(tmp_path / "state")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr
    assert f"profiler {profiler!r} is unavailable" in proc.stderr
    assert "install" in proc.stderr or "ROCm" in proc.stderr or "pip install" in proc.stderr
    journal = next((tmp_path / "state" / "profiles").glob("*/journal.jsonl"))
    last = json.loads(journal.read_text().splitlines()[-1])
    assert last["event"] == "error" and last["exit_code"] == 3


def test_a_kernel_the_bench_program_defines_is_not_the_targets(tmp_path: Path) -> None:
    """examples/cmake-cuda's bench defines fill_input: it is shown apart, not as the target's
    (the table on the H200 listed it as the target's before Profiling read only the editable
    files)."""
    from kernelopt_core.profiling.bench import Profiling
    from kernelopt_core.run_context import RunContext
    from kernelopt_core.settings import Settings
    from kernelopt_core.target import Command, Target, Tree
    from kernelopt_core.testing import plugin_host

    recorded = FIXTURES / "ncu-cmake-cuda-baseline.csv"

    class Replay:  # wraps the bench in a copy of what ncu recorded for it on the H200
        name = "replay"

        def unavailable_reason(self) -> None:
            return None

        def wrap(self, command: Command, out_dir: Path) -> Command:
            return Command(("cp", str(recorded), str(out_dir / "ncu.csv")), out_dir)

        def parse(self, out_dir: Path) -> dict[str, object]:
            return Ncu().parse(out_dir)

    class Plugin:
        from kernelopt_core.hookspecs import hookimpl

        @hookimpl
        def kernelopt_register_profilers(self) -> list[object]:
            return [Replay()]

    class Backend:
        def bench(self, target: Target, tree: Tree) -> Command:
            return Command(("true",), tree.src)

        def engine(self, target: Target, tree: Tree) -> Command | None:
            return None  # no whole program declared

        def kernel_names(self, target: Target, files: dict[str, bytes]) -> dict[str, str]:
            from kernelopt_core.api import cuda_kernel_names

            return cuda_kernel_names(files)  # asked with the editable files only

    example = REPO / "examples" / "cmake-cuda"
    files = {p.name: p.read_bytes() for p in example.iterdir() if p.is_file()}
    target = Target("cmake", "row_sum", example, ("kernel.cu",),
                    contract=("rowsum_test.cu", "rowsum_bench.cu"))
    context = RunContext.open("r", tmp_path, Backend(), target,  # type: ignore[arg-type]
                              Settings(state_root=tmp_path / "state"))
    profiling = Profiling("replay", plugin_host(Plugin()), context)
    tree = Tree("baseline", tmp_path / "src", tmp_path / "build")
    tree.src.mkdir()
    profile = profiling.run(tree, files, tmp_path / "profile", "baseline")
    marked = {k["name"].split("(")[0].split("::")[-1]: k["target"] for k in profile["kernels"]}
    assert marked == {"row_sum_kernel<1>": True, "fill_input": False}
    assert "dram_bytes" not in profile  # no sum across kernels, nothing for the roofline
    assert profile["kernels"][0]["file"] == "kernel.cu"
    # the whole program instead of the bench (`kernelopt profile --engine`): none declared here
    assert profiling.run(tree, files, tmp_path / "engine", "baseline", "engine") == {}
    events = [json.loads(line) for line in (tmp_path / "journal.jsonl").read_text().splitlines()]
    assert [e["program"] for e in events if e["event"] == "profile"] == ["bench"]


def test_nsys_and_rocprof_statistics_give_the_same_records() -> None:
    nsys = parsers.nsys_kernel_sum(fixture("nsys_cuda_gpu_kern_sum.csv"))
    assert nsys[0].name == "flash_attention_prefill_f16" and nsys[0].launches == 32
    assert nsys[0].total_us == pytest.approx(99385.786)
    assert nsys[0].mean_us == pytest.approx(3105.8, rel=1e-4)  # the tool's own Avg (ns)
    assert [k.total_us for k in nsys] == sorted((k.total_us for k in nsys), reverse=True)
    # what nsys prints before its table on a console is skipped
    console = "Processing [report.sqlite] with [cuda_gpu_kern_sum.py]... \n\n"
    assert parsers.nsys_kernel_sum(console + fixture("nsys_cuda_gpu_kern_sum.csv")) == nsys
    v3 = parsers.rocprof_kernel_stats(fixture("rocprofv3_kernel_stats.csv"))
    assert [k.launches for k in v3] == [1001, 1000, 1000, 1000]
    assert v3[0].mean_us == pytest.approx(87.907575, rel=1e-6)  # AverageNs 87907.575425
    old = parsers.rocprof_kernel_stats(fixture("rocprof_results.stats.csv"))
    assert old[0].name == "bodyForce(Body*, float, int) [clone .kd]" and old[0].launches == 10
    assert old[0].total_us == pytest.approx(261124.944)


def test_nsys_and_rocprof_read_what_they_wrote(tmp_path: Path) -> None:
    from kernelopt_core.target import Command

    wrapped = Nsys().wrap(Command(("./bench",), tmp_path), tmp_path)
    assert wrapped.argv[:2] == ("sh", "-c") and "cuda_gpu_kern_sum" in wrapped.argv[2]
    shutil.copy(FIXTURES / "nsys_cuda_gpu_kern_sum.csv", tmp_path / "nsys_cuda_gpu_kern_sum.csv")
    assert Nsys().parse(tmp_path)["kernels"][0]["launches"] == 32
    run = tmp_path / "rocprof" / "host" / "1234"
    run.mkdir(parents=True)
    shutil.copy(FIXTURES / "rocprofv3_kernel_stats.csv", run / "1234_kernel_stats.csv")
    assert Rocprof().parse(tmp_path / "rocprof")["kernels"][0]["launches"] == 1001
