"""The compile a model's user has (issue 53): a model file's COMPILE and --compile-mode become
torch.compile's keywords for the capture, the engine and the model check; a bad one is a clear
exit 2 before any compile; the backend hands the engine and the model check the capture's mode,
kernel source and Inductor cache."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path

import pytest
from kernelopt_triton.compile_mode import (
    CompileError,
    compile_kwargs,
    describe,
    label,
    uses_cudagraphs,
    without_cudagraphs,
)
from kernelopt_triton.models import InductorBackend

from kernelopt_core.api import Target, Tree

REPO = Path(__file__).resolve().parents[3]


def module(**attrs: object) -> types.SimpleNamespace:
    return types.SimpleNamespace(**attrs)


def test_the_files_compile_and_the_flag_over_it() -> None:
    assert compile_kwargs(module()) == {}
    assert compile_kwargs(module(COMPILE={"mode": "max-autotune"})) == {"mode": "max-autotune"}
    assert compile_kwargs(module(COMPILE={"mode": "max-autotune"}), "default") == {}
    # the flag replaces the file's options too: torch.compile takes a mode or options
    given = module(COMPILE={"options": {"triton.cudagraphs": True}, "dynamic": False})
    assert compile_kwargs(given, "reduce-overhead") == {"mode": "reduce-overhead", "dynamic": False}
    assert describe({}) == "the default compile" and label({}) == "default"
    assert describe({"mode": "max-autotune"}) == "mode='max-autotune'"
    assert label(compile_kwargs(given)) == "custom"


@pytest.mark.parametrize("given, words", [
    ({"backend": "eager"}, "'backend': kernelopt compiles with Inductor"),
    ({"mode": "fastest"}, "compile mode 'fastest' is not one of"),
    ({"mode": "max-autotune", "options": {}}, "both mode and options"),
    (["max-autotune"], "COMPILE must be a dict"),
    ({"options": "x"}, "options must be a dict of Inductor settings"),
    ({"fullgraph": "yes"}, "fullgraph must be True, False or None"),
])
def test_a_compile_torch_would_not_take_is_refused_with_why(given: object, words: str) -> None:
    with pytest.raises(CompileError, match=words.replace("(", r"\(")):
        compile_kwargs(module(COMPILE=given))


def test_the_options_table_offers_the_modes_compile_mode_knows() -> None:
    from kernelopt_triton.compile_mode import MODES
    from kernelopt_triton.options import COMPILE_MODES

    assert COMPILE_MODES == MODES
    assert compile_kwargs(module(COMPILE={"mode": None, "fullgraph": True})) == {"fullgraph": True}


def test_cuda_graph_compiles_and_their_graphless_twins() -> None:
    for kwargs, graphs, twin in (
            ({}, False, {}),
            ({"mode": "max-autotune"}, True, {"mode": "max-autotune-no-cudagraphs"}),
            ({"mode": "reduce-overhead"}, True, {}),
            ({"mode": "max-autotune-no-cudagraphs"}, False, {"mode": "max-autotune-no-cudagraphs"}),
            ({"options": {"triton.cudagraphs": True}}, True,
             {"options": {"triton.cudagraphs": False}})):
        assert uses_cudagraphs(kwargs) is graphs, kwargs
        assert without_cudagraphs(kwargs) == twin and not uses_cudagraphs(twin)


def test_the_engine_and_the_model_check_see_the_capture(tmp_path: Path) -> None:
    capture = tmp_path / "cap"
    (capture / "kernels").mkdir(parents=True)
    (capture / "cache").mkdir()
    source = capture / "kernels" / "triton_poi_k_3.py"
    source.write_text("# the captured kernel\n")
    data = {"model": tmp_path / "m.py", "kernel": "triton_poi_k_3", "capture_dir": str(capture),
            "compile_mode": "max-autotune"}
    target = Target("m-triton_poi_k_3", "inductor", tmp_path, ("triton_poi_k_3.py",), data=data)
    trees = {r: Tree(r, tmp_path / r, tmp_path / r / "build") for r in ("baseline", "candidate")}
    pair = InductorBackend().engine_pair(target, trees["baseline"], trees["candidate"])
    assert pair is not None
    argv = list(pair.argv)
    assert argv[argv.index("--compile-mode") + 1] == "max-autotune"
    assert argv[argv.index("--capture-source") + 1] == str(source)
    assert argv[argv.index("--cache-dir") + 1] == str(capture / "cache")  # the capture's configs
    check = InductorBackend().model_compare([target], {target.name: tmp_path / "win"}, tmp_path)
    assert check is not None
    argv = list(check.argv)
    assert argv[argv.index("--compile-mode") + 1] == "max-autotune"
    assert f"triton_poi_k_3={source}" in argv and argv[argv.index("--cache-dir") + 1] == str(
        capture / "cache")
    assert argv[argv.index("--modes") + 1].endswith(",kernelopt")


@pytest.mark.slow
def test_a_bad_compile_mode_is_a_usage_error_before_anything_runs(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "kernelopt_core.cli", "run",
                             str(REPO / "examples" / "mlp.py"), "--compile-mode", "fastest"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2, result.stderr
    assert "compile_mode" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
def test_a_model_files_bad_compile_stops_the_capture_with_exit_2(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    model = tmp_path / "bad_compile.py"
    model.write_text((REPO / "examples" / "mlp.py").read_text()
                     + '\nCOMPILE = {"mode": "max-autotune", "backend": "eager"}\n')
    result = subprocess.run([sys.executable, "-m", "kernelopt_triton.inductor", "capture",
                             str(model), "--out", str(tmp_path / "cap"), "--device", "cpu"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2, result.stderr[-2000:]
    assert "COMPILE has 'backend'" in result.stderr and str(model) in result.stderr


def test_a_capture_that_chose_the_depthwise_kernel_is_built_so_by_the_engine_and_the_check(
        tmp_path: Path) -> None:
    """The capture's depthwise.json with a chosen shape reaches the engine (both sides built
    as the capture was) and the model check (its kernelopt side, winners or none); without a
    chosen shape, neither gets it."""
    capture = tmp_path / "capture"
    (capture / "kernels").mkdir(parents=True)
    (capture / "cache").mkdir()
    record = capture / "depthwise.json"
    record.write_text(json.dumps({"launches": {"64x96x56x56/7x7/s1x1/p3x3/d1x1": {
        "block_w": 16, "block_c": 32, "num_warps": 4, "block_h": 4}}}))
    data = {"model": tmp_path / "m.py", "kernel": "triton_poi_k_3", "capture_dir": str(capture)}
    target = Target("m-triton_poi_k_3", "inductor", tmp_path, ("triton_poi_k_3.py",), data=data)
    trees = {r: Tree(r, tmp_path / r, tmp_path / r / "build") for r in ("baseline", "candidate")}
    pair = InductorBackend().engine_pair(target, trees["baseline"], trees["candidate"])
    assert pair is not None and pair.argv[pair.argv.index("--depthwise") + 1] == str(record)
    check = InductorBackend().model_compare([target], {}, tmp_path)  # no kernel won
    assert check is not None and check.argv[check.argv.index("--depthwise") + 1] == str(record)
    assert check.argv[check.argv.index("--modes") + 1].endswith(",kernelopt")
    record.write_text(json.dumps({"launches": {}, "shapes": []}))
    pair = InductorBackend().engine_pair(target, trees["baseline"], trees["candidate"])
    check = InductorBackend().model_compare([target], {}, tmp_path)
    assert pair is not None and check is not None
    assert "--depthwise" not in pair.argv and "--depthwise" not in check.argv
    assert not check.argv[check.argv.index("--modes") + 1].endswith(",kernelopt")
