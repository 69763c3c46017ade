"""The torch.compile (Inductor) model path, on recorded fixtures; no GPU needed.

Fixtures (tests/fixtures/inductor/):
- output_code_cpu.txt: REAL Inductor output (torch 2.13, `capture --device cpu`, i.e.
  cpu_backend="triton" with benchmark_kernel on) for small_block.py: a looped reduction and a
  pointwise kernel in the same format as the CUDA output (device_str differs).
- profile_table_cuda.txt: hand-made in the exact layout of torch.profiler's key_averages().table()
  (profiler_util._build_table: right-aligned columns, 55-character names cut with "...").
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from kernelopt_triton import engine, inductor  # noqa: E402
from kernelopt_triton.inductor_gen import generate_files, render  # noqa: E402
from kernelopt_triton.inductor_parse import (  # noqa: E402
    is_wrapper_module,
    parse_call_sites,
    parse_kernel_source,
    parse_output_code,
    shape_string,
)
from kernelopt_triton.profile_table import (  # noqa: E402
    ProfileRow,
    Ranked,
    is_annotation,
    library_kind,
    parse_profiler_table,
    rank_kernels,
    ranking_table,
)

FIX = Path(__file__).parent / "fixtures" / "inductor"
REPO = Path(__file__).resolve().parents[3]
# Children import kernelopt_triton from this checkout whether or not it is installed.
CHILD_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(Path(inductor.__file__).parents[1]), os.environ.get("PYTHONPATH", "")])}
RED = "triton_red_fused__softmax_add_gelu_mean_mul_native_layer_norm_sigmoid_0"
POI = "triton_poi_fused_add_mul_sigmoid_1"


@pytest.fixture(scope="module")
def output_code() -> str:
    return (FIX / "output_code_cpu.txt").read_text()


def test_parse_output_code_finds_kernels_sources_and_calls(output_code):
    kernels = parse_output_code(output_code)
    assert [k.name for k in kernels] == [RED, POI]
    assert all(k.device_str == "cpu" for k in kernels)
    assert all("@triton.jit" in k.source and "get_args" in k.source for k in kernels)
    sites = parse_call_sites(output_code)
    assert sites[RED] == [("buf4", "buf9", "arg2_1", "arg0_1", "arg1_1", "32", "2048")]
    assert sites[POI] == [("arg3_1", "buf10", "6144")]
    assert is_wrapper_module(output_code) and not is_wrapper_module(kernels[0].source)


def test_parse_kernel_source_launch_metadata_and_args(output_code):
    red, poi = (parse_kernel_source(k.source, k.name) for k in parse_output_code(output_code))
    assert red.heuristic == "reduction" and poi.heuristic == "pointwise"
    assert red.grid_type == "Grid1D" and red.constexprs == ("XBLOCK", "R0_BLOCK")
    assert red.size_hints == {"x": 32, "r0_": 2048}
    assert red.signature["in_out_ptr0"] == "*fp32"
    assert red.output_params() == ("in_out_ptr0", "in_out_ptr1")
    assert [a.kind for a in red.args] == ["tensor"] * 5 + ["int", "int"]
    assert red.args[0].size == (32, 2048) and red.args[3].size == (2048,)
    assert red.args[-1].value == 2048 and red.num_gb == pytest.approx(0.001327104)
    assert poi.output_params() == ("out_ptr0",) and shape_string(poi.args) == "f32[64,96]"
    assert poi.jit_source.startswith("@triton.jit\ndef triton_poi_fused_add_mul_sigmoid_1(")
    assert "triton_heuristics.pointwise" not in poi.jit_source


def test_profiler_table_ranks_kernels_by_device_share():
    rows = parse_profiler_table((FIX / "profile_table_cuda.txt").read_text())
    names = ["triton_per_fused_native_layer_norm_0", "triton_poi_fused_addmm_gelu_1",
             "triton_per_fused_add_native_layer_norm_2"]
    ranked, total = rank_kernels(names, rows)
    assert total == pytest.approx(14250 + 14010 + 1012 + 447 + 402.5)
    assert [r.name for r in ranked] == [names[1], names[2], names[0]]
    assert ranked[0].time_us == pytest.approx(1012) and ranked[0].calls == 5
    assert ranked[0].share == pytest.approx(1012 / total)
    table = ranking_table(ranked, total)
    assert "triton_poi_fused_addmm_gelu_1" in table.splitlines()[1] and "Triton kernels:" in table


def test_annotation_rows_are_not_device_work():
    """ProfilerStep#N and record_function ranges get a GPU-side twin spanning the kernels they
    enclose: counted, a model with one kernel showed a 50 % share (issue 11)."""
    rows = [ProfileRow("triton_red_fused_0", 2056.0, 5), ProfileRow("ProfilerStep#1", 2056.0, 5),
            ProfileRow("## Call CompiledFxGraph fabc ##", 2050.0, 5),
            ProfileRow("Torch-Compiled Region: 0/0", 2050.0, 5),
            ProfileRow("Memset (Device)", 4.0, 5)]
    ranked, total = rank_kernels(["triton_red_fused_0"], rows)
    assert total == pytest.approx(2060.0)
    assert ranked[0].share == pytest.approx(2056 / 2060)
    assert not is_annotation("triton_poi_fused_add_0") and is_annotation("ProfilerStep#12")


def test_real_h200_profile_ranks_the_only_kernel_at_its_whole_share():
    """The table of a real capture (H200): its ProfilerStep* row carries the kernel's time
    again; the only Triton kernel's share is the whole device time, not half of it."""
    fix = FIX / "h200-pointwise_fused"
    record = json.loads((fix / "kernels.json").read_text())
    names = [k["name"] for k in record["kernels"]]
    rows = parse_profiler_table((fix / "profile.txt").read_text())
    assert any(r.name == "ProfilerStep*" and r.device_us > 2000 for r in rows)
    ranked, total = rank_kernels(names, rows)
    assert ranked[0].share == pytest.approx(1.0, abs=0.01)
    assert total == pytest.approx(2056.0, rel=0.01)
    assert record["kernels"][0]["share"] == pytest.approx(1.0, abs=0.01)  # what capture wrote
    events = [ProfileRow(e["name"], e["device_us"], e["calls"])
              for e in json.loads((fix / "device_events.json").read_text())]
    assert rank_kernels(names, events)[0][0].share == pytest.approx(1.0, abs=0.01)


def test_real_h200_mlp_profile_counts_each_cublas_kernel_once():
    """A real capture with vendor kernels (H200, examples/mlp.py): ``aten::addmm`` carries its
    two cuBLAS kernels' time again and ``ProfilerStep*`` the whole step's; the total is the
    device's (15.43 ms for 5 steps, the table's own "Self CUDA time total") and the Triton
    kernels rank at their share of it."""
    fix = FIX / "h200-mlp"
    record = json.loads((fix / "kernels.json").read_text())
    names = [k["name"] for k in record["kernels"]]
    assert names[:3] == ["triton_poi_fused_gelu_1", "triton_red_fused_add_native_layer_norm_2",
                         "triton_red_fused_native_layer_norm_0"]
    table = (fix / "profile.txt").read_text()
    assert "aten::addmm" in table and "14.004ms" in table
    rows = parse_profiler_table(table)
    assert not any(r.name.startswith("aten::") for r in rows)  # CPU ops: their kernels count
    events = [ProfileRow(e["name"], e["device_us"], e["calls"])
              for e in json.loads((fix / "device_events.json").read_text())]
    for source in (rows, events):
        ranked, total = rank_kernels(names, source)
        assert total == pytest.approx(15433.0, rel=0.002)
        assert [k.name for k in ranked[:3]] == names[:3]
        assert ranked[0].share == pytest.approx(930.394 / 15433.0, rel=0.01)
        assert sum(k.share for k in ranked) == pytest.approx(0.0925, abs=0.002)


def test_real_llama_capture_ranks_library_kernels_so_the_shares_add_up(tmp_path):
    """A transformers Llama prefill captured on the H200: cuBLAS GEMMs, cuDNN's SDPA and
    memsets are most of the time; each big one is a library row named by its kind, the small
    ones one summed row, and Triton plus library rows make the whole device time."""
    fix = FIX / "h200-llama_prefill"
    record = json.loads((fix / "kernels.json").read_text())
    names = [k["name"] for k in record["kernels"]]
    events = [ProfileRow(e["name"], e["device_us"], e["calls"])
              for e in json.loads((fix / "device_events.json").read_text())]
    ranked, total = rank_kernels(names, events)
    libraries = [Ranked(r.name, r.device_us, r.calls, r.device_us / total)
                 for r in events if r.name not in names and r.device_us > 0]
    table = ranking_table(ranked, total, 5, libraries, name_width=90)
    rows = table.splitlines()[1:-1]
    shares = [float(line.split()[1].rstrip("%")) for line in rows]
    assert sum(shares) == pytest.approx(100.0, abs=0.5)
    assert ranked[0].name == "triton_poi_fused__unsafe_view_mul_silu_9"
    lib = [line for line in rows if line.lstrip().startswith("lib")]
    assert "[GEMM (cuBLAS/CUTLASS)] nvjet_sm90_tst_176x128" in lib[0] and " 33.5%" in lib[0]
    assert any("[attention library (cuDNN/flash)] cudnn_generated_fort_native_sdpa" in line
               for line in lib)
    assert any("[copy/set] Memset (Device)" in line for line in lib)
    assert "Triton kernels: 22.2%" in table and "libraries and copies: 77.8%" in table
    assert library_kind("void at::native::vectorized_elementwise_kernel<4>") == "ATen kernel"


def test_real_llama_output_code_stands_alone_for_its_top_kernels(tmp_path):
    """Inductor's wrapper for a real transformers model parses; its top kernels (a pointwise
    SiLU-gate, RoPE's cat/cos/sin pointwise with a 200-character name, an RMSNorm reduction)
    become standalone kernel files with the launch knobs of Inductor's chosen config."""
    fix = FIX / "h200-llama_prefill"
    record = json.loads((fix / "kernels.json").read_text())
    parsed = {k.name for k in parse_output_code((fix / "output_code" / "graph_0.py").read_text())}
    assert {k["name"] for k in record["kernels"]} == parsed
    chosen = [record["kernels"][i] for i in (0, 1, 4)]
    for kernel in chosen:
        main_file = generate_files(fix, record, kernel, tmp_path / "t")[0]
        text = main_file.read_text()
        ast.parse(text)
        assert f"def {kernel['name']}(" in text and "def make_args(seed, device):" in text
        assert "torch.Generator(device=device)" in text  # inputs drawn on the device
        for knob, value in kernel["launch"].items():
            if knob != "num_stages":
                assert f"{knob}={value}" in text


def test_device_events_leave_user_annotations_out():
    from kernelopt_triton.inductor import _device_events

    class Event:
        def __init__(self, name: str, us: float, annotation: bool, device: str = "DeviceType.CUDA"):
            self.name, self.self_device_time_total = name, us
            self.is_user_annotation, self.device_type = annotation, device

    class Prof:
        def events(self) -> list[Event]:
            return [Event("triton_red_fused_0", 400.0, False), Event("triton_red_fused_0", 410.0, False),
                    Event("my_range", 810.0, True), Event("ProfilerStep#3", 810.0, False),
                    Event("aten::sum", 0.0, False, "DeviceType.CPU")]

    rows = _device_events(Prof())
    assert [(r.name, r.device_us, r.calls) for r in rows] == [("triton_red_fused_0", 810.0, 2)]


def _capture_dir(tmp_path: Path, output_code: str) -> Path:
    """A capture directory as `capture` writes it, from the recorded output code."""
    cap = tmp_path / "cap"
    (cap / "kernels").mkdir(parents=True)
    kernels = []
    for k in parse_output_code(output_code):
        (cap / "kernels" / f"{k.name}.py").write_text(k.source)
        launch = {"XBLOCK": 1, "R0_BLOCK": 1024, "num_warps": 4, "num_stages": 1} if k.name == RED else \
            {"XBLOCK": 512, "num_warps": 4, "num_stages": 1}
        kernels.append({"name": k.name, "file": f"kernels/{k.name}.py", "launch": launch,
                        "share": 0.6 if k.name == POI else 0.3, "time_us": 10.0})
    kernels.sort(key=lambda k: -k["share"])
    record = {"schema": 1, "model": "small_block.py", "kernels": kernels}
    (cap / "kernels.json").write_text(json.dumps(record))
    return cap


def test_generate_writes_standalone_files_in_the_convention(tmp_path, output_code):
    cap = _capture_dir(tmp_path, output_code)
    assert inductor.main(["generate", str(cap), "--top", "2"]) == 0
    targets = cap / "targets"
    for name in (POI, RED):
        text = (targets / f"{name}.py").read_text()
        tree = ast.parse(text)
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assigned = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
                    if isinstance(t, ast.Name)}
        assert {"make_args", "launch", "reference", name} <= defined
        assert {"SHAPE", "TOLERANCE", "OUTPUTS", "BYTES"} <= assigned
        assert "@triton_heuristics" not in text and "num_warps=4" in text
        assert not inductor.is_model_file(targets / f"{name}.py")
        assert (targets / f"{name}_orig.py").is_file()
        assert json.loads((targets / f"{name}.json").read_text())["context"] == [f"{name}_orig.py"]
    assert "XBLOCK=512," in (targets / f"{POI}.py").read_text()
    assert "XBLOCK=1, R0_BLOCK=1024," in (targets / f"{RED}.py").read_text()
    assert inductor.main(["generate", str(cap), "--kernel", "nope"]) == 2


def test_a_kernel_that_cannot_stand_alone_is_skipped_not_the_others(tmp_path, output_code):
    cap = _capture_dir(tmp_path, output_code)
    source = cap / "kernels" / f"{RED}.py"
    source.write_text(source.read_text().replace("'grid_type': 'Grid1D'", "'grid_type': 'FancyGrid'"))
    assert inductor.main(["generate", str(cap), "--top", "2"]) == 0
    targets = cap / "targets"
    assert (targets / f"{POI}.py").is_file() and not (targets / f"{RED}.py").exists()
    skipped = json.loads((targets / inductor.SKIPPED_FILE).read_text())
    assert list(skipped) == [RED] and "FancyGrid" in skipped[RED]
    assert inductor.main(["generate", str(cap), "--kernel", RED]) == 2  # nothing left: an error


@pytest.mark.slow
def test_generated_pointwise_file_runs_under_the_interpreter_and_matches(tmp_path, output_code):
    cap = _capture_dir(tmp_path, output_code)
    record = json.loads((cap / "kernels.json").read_text())
    kernel = next(k for k in record["kernels"] if k["name"] == POI)
    main_file = generate_files(cap, {"model": "m"}, kernel, tmp_path / "t")[0]
    # A candidate edit the tuner would make: another XBLOCK and num_warps.
    edited = main_file.read_text().replace("XBLOCK=512, num_warps=4", "XBLOCK=128, num_warps=2")
    main_file.with_name("cand.py").write_text(edited)
    main_file.with_name("cand_orig.py").symlink_to(main_file.with_name(f"{POI}_orig.py"))
    script = (
        "import importlib.util, sys, torch\n"
        "for p in sys.argv[1:]:\n"
        "    spec = importlib.util.spec_from_file_location('m', p)\n"
        "    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "    ref = m.reference(*m.make_args(3, 'cpu'))\n"
        "    args = m.make_args(3, 'cpu')\n"
        "    assert all(float(a.abs().sum()) > 0 for a in args)\n"
        "    m.launch(*args)\n"
        "    for i, r in zip(m.OUTPUTS, ref):\n"
        "        torch.testing.assert_close(args[i].double(), r.double(), **m.TOLERANCE)\n"
        "print('ok')\n"
    )
    env = {**CHILD_ENV, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, "-c", script, str(main_file), str(main_file.with_name("cand.py"))],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "ok"


def test_engine_swap_puts_the_candidate_and_its_config_into_inductors_source(output_code):
    kdef = next(k for k in parse_output_code(output_code) if k.name == POI)
    ks = parse_kernel_source(kdef.source, POI)
    candidate, _ = render(ks, {"launch": {"XBLOCK": 256, "num_warps": 8, "num_stages": 1}}, "m", kdef.source)
    line = "tmp3 = tl.full([1], 1.5, tl.float32)"
    candidate = candidate.replace(line, line + "  # edited")
    swapped = swap_and_check(kdef.source, candidate)
    assert "@triton_heuristics.fixed_config(" in swapped and "'XBLOCK': 256" in swapped
    assert "'num_warps': 8" in swapped and "# edited" in swapped
    assert "triton_heuristics.pointwise(" not in swapped and "def get_args():" in swapped


def swap_and_check(source: str, candidate: str) -> str:
    swapped = engine.swap_kernel_source(source, candidate, POI)
    ast.parse(swapped)
    assert swapped.count(f"def {POI}(") == 1
    return swapped


def test_engine_compare_is_float64_with_tolerance():
    ref = [torch.tensor([1.0, 2.0], dtype=torch.float16)]
    ok, detail = engine.compare([torch.tensor([1.0, 2.01], dtype=torch.float16)], ref, 2e-2, 2e-2)
    assert ok and "max abs err" in detail
    ok, _ = engine.compare([torch.tensor([1.0, 2.5], dtype=torch.float16)], ref, 2e-2, 2e-2)
    assert not ok
    assert not engine.compare([torch.tensor([float("nan"), 2.0])], [torch.tensor([1.0, 2.0])], 1, 1)[0]


def test_engine_times_windows_of_back_to_back_calls_after_a_warm_up():
    calls = []

    def call():
        calls.append(1)
        time.sleep(0.002)

    timing = engine.time_calls(None, call, cuda=False, windows=5, warmup=3)
    per_window = timing["calls_per_window"]
    assert 1 <= per_window <= 10  # ~20 ms of work per window at >= 2 ms per call
    assert timing["windows"] == 5 and timing["time_ms"] >= 2.0
    # the warm-up ran for WARMUP_S (>= 3 calls) before the timed windows
    assert len(calls) - 5 * per_window >= max(3, int(engine.WARMUP_S / 0.01))
    assert timing["spread_pct"] >= 0


def test_model_files_are_recognised_by_ast():
    assert inductor.is_model_file(REPO / "examples" / "mlp.py")
    assert inductor.is_model_file(REPO / "examples" / "pointwise_fused.py")
    assert inductor.is_model_file(FIX / "small_block.py")
    assert not inductor.is_model_file(Path(engine.__file__))


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU path")
def test_without_a_gpu_capture_and_engine_exit_3_with_the_message(tmp_path):
    msg = inductor.model_prerequisite_error()
    assert msg and msg.startswith("needs a CUDA GPU: torch.compile's Triton kernels")
    assert "standalone kernel files under the interpreter" in msg
    mlp = str(REPO / "examples" / "mlp.py")
    for argv in (["kernelopt_triton.inductor", "capture", mlp, "--out", str(tmp_path)],
                 ["kernelopt_triton.engine", mlp, "--kernel", "k",
                  "--source", str(tmp_path / "k.py")]):
        proc = subprocess.run([sys.executable, "-m", *argv], capture_output=True, text=True, timeout=120,
                              cwd=str(tmp_path), env=CHILD_ENV)
        assert proc.returncode == 3, proc.stderr[-2000:]
        assert "needs a CUDA GPU" in proc.stderr


@pytest.mark.slow
def test_a_model_that_raises_is_the_users_error_exit_2(tmp_path):
    model = tmp_path / "broken_model.py"
    model.write_text("import torch\n\n\ndef model():\n    raise ValueError('no weights here')\n\n\n"
                     "def inputs(seed, device):\n    return (torch.randn(4, device=device),)\n")
    proc = subprocess.run([sys.executable, "-m", "kernelopt_triton.inductor", "capture", str(model),
                           "--out", str(tmp_path / "cap"), "--device", "cpu"],
                          capture_output=True, text=True, timeout=300, cwd=str(tmp_path), env=CHILD_ENV)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "the model file raised ValueError: no weights here" in proc.stderr
    try:
        raise KeyError("x")
    except KeyError as exc:  # raised here, not in the model file
        assert not inductor.raised_in(exc, model)
