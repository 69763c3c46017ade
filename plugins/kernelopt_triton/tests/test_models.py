"""The `inductor` backend as a user meets it without a GPU: detected, its flags on `run`, and a
clear exit 3 (CI has no GPU; the GPU path is proved by bench/h200_inductor.sh)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kernelopt_triton.backend import TritonBackend
from kernelopt_triton.models import InductorBackend

REPO = Path(__file__).resolve().parents[3]


def kernelopt(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kernelopt_core.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_model_files_go_to_the_inductor_backend_kernel_files_to_triton() -> None:
    model, kernel = REPO / "examples" / "mlp.py", REPO / "examples" / "triton" / "softmax.py"
    assert InductorBackend().detect(model) > TritonBackend().detect(model)
    assert TritonBackend().detect(kernel) > InductorBackend().detect(kernel)


@pytest.mark.slow
def test_run_a_model_without_a_gpu_exits_3_saying_what_is_needed(tmp_path: Path) -> None:
    for name in ("mlp.py", "pointwise_fused.py"):
        result = kernelopt("run", str(REPO / "examples" / name), "--top", "2", cwd=tmp_path)
        assert result.returncode == 3, result.stderr
        assert "needs a CUDA GPU" in result.stderr and "fix:" in result.stderr
    assert not (tmp_path / ".kernelopt" / "work").exists()  # nothing captured, nothing written


def test_model_flags_are_on_run() -> None:
    text = kernelopt("run", "--help", cwd=REPO).stdout
    assert "--top" in text and "--kernel" in text


@pytest.mark.slow
def test_a_bad_top_is_a_usage_error_before_anything_runs(tmp_path: Path) -> None:
    model = str(REPO / "examples" / "mlp.py")
    for args in (("--top", "0"), ("--top", "-2"), ("-o", "top=abc")):
        result = kernelopt("run", model, *args, cwd=tmp_path)
        assert result.returncode == 2, (args, result.stderr)
        assert "`top`" in result.stderr and "Traceback" not in result.stderr
        assert ("must be >= 1" in result.stderr) == (args[0] == "--top"), result.stderr


def test_a_model_with_no_compile_named_runs_in_the_mode_its_race_chose() -> None:
    """Issue 53: nothing names the compile: the capture races the default compile against
    reduce-overhead (model_compare's line in race.json); the runs compile the one chosen, and
    the console's first line says which and why."""
    from kernelopt_triton.models import raced_mode

    def race(chosen: str, why: str) -> dict:
        return {"kernelopt_model": 1, "baseline": "default", "kernelopt": chosen,
                "choice": {"why": why, **({"over": "default"} if chosen != "default" else {})},
                "modes": {"eager": {"ms": 9.0}, "default": {"ms": 2.1},
                          "reduce-overhead": {"ms": 1.2}}}

    faster = "reduce-overhead ran 1.750x as fast as default (±0.8 %, 8 paired rounds, outputs matched eager)"
    assert raced_mode(race("reduce-overhead", faster)) == (
        "reduce-overhead", "reduce-overhead, the faster measured (default 2.1000 ms, "
        f"reduce-overhead 1.2000 ms): {faster}")
    within = "no other compile measured faster than default by its rounds (closest: ...)"
    mode, words = raced_mode(race("default", within))
    assert mode is None and words.startswith("the default compile (default 2.1000 ms") \
        and words.endswith(within)
    # a race that failed (said once, in race.json): the default compile, and why
    failed = {"kernelopt_model": 1, "error": "the model's race step failed: … (the whole log is "
              "C/race.log); --compile-mode default skips the race"}
    mode, words = raced_mode(failed)
    assert mode is None and words == ("the default compile: the race against reduce-overhead "
                                      f"failed: {failed['error']}")


def test_a_race_that_fails_keeps_the_default_compile_and_says_so_once(tmp_path: Path) -> None:
    """The race is an extra on top of a capture that ran: its child failing (here: no CUDA on
    this machine) leaves the default compile, says why with the log and the flag that skips
    it, and is not run again (race.json keeps the failure)."""
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("the race's child fails here only for want of CUDA")
    from kernelopt_triton.models import RACE_FILE

    from kernelopt_core.api import Settings

    model = tmp_path / "gate.py"
    model.write_text("import torch\n\ndef model():\n    return torch.nn.Identity()\n\n"
                     "def inputs(seed, device):\n    return (torch.ones(4, device=device),)\n")
    capture_dir = tmp_path / "capture"
    settings = Settings(state_root=tmp_path / "state")
    mode, words = InductorBackend()._race(model, capture_dir, settings)
    assert mode is None and words.startswith(
        "the default compile: the race against reduce-overhead failed: the model's race step")
    assert f"(the whole log is {capture_dir / 'race.log'}); --compile-mode default skips" in words
    (capture_dir / "race.log").unlink()  # a second discover reads race.json, runs nothing
    assert InductorBackend()._race(model, capture_dir, settings) == (mode, words)
    assert not (capture_dir / "race.log").exists() and (capture_dir / RACE_FILE).is_file()


def test_a_kernels_profiled_time_per_call_comes_from_its_capture() -> None:
    """kernels.json's time per step over the calls per step: ConvNeXt-T's GELU on an H100
    (2026-12-07, bench/results/2026-12-07-h100-modes-convnext-llama), 343.05 µs in 3 calls;
    its run then timed it alone at 0.1158 ms. A record without device time gives none."""
    from kernelopt_triton.models import _profiled

    gelu = {"name": "triton_poi_fused_gelu_view_1", "time_us": 343.0457999999998, "calls": 3,
            "num_gb": 0.308281344, "share": 0.08140901471887323}
    assert _profiled(gelu)["profiled_ms"] == pytest.approx(0.11435, abs=1e-5)
    assert _profiled({**gelu, "calls": 0}) == {} and _profiled({"name": "k"}) == {}


def test_a_capture_without_the_depthwise_choice_is_made_again(tmp_path: Path) -> None:
    """kernels.json from before the depthwise choice (no ``depthwise``) is captured again when
    the choice is on, kept when it is off; the run's line says how many shapes and how."""
    from kernelopt_triton.capture_depthwise import depthwise_line
    from kernelopt_triton.models import _captured

    (tmp_path / "kernels.json").write_text(json.dumps({"kernels": [], "forms": {}}))
    assert not _captured(tmp_path, forms=True, depthwise=True)
    assert _captured(tmp_path, forms=True, depthwise=False)
    (tmp_path / "kernels.json").write_text(json.dumps({"kernels": [], "forms": {},
                                                       "depthwise": {"shapes": 0}}))
    assert _captured(tmp_path, forms=True, depthwise=True)
    assert depthwise_line({"shapes": 0}) == ""
    assert depthwise_line({"file": "depthwise.json", "shapes": 4, "chosen": 3, "form": "opaque",
                           "search_s": 61.2}) == (
        "depthwise convolutions: kernelopt's kernel for 3 of 4 shapes, compiled opaque (61.2 s "
        "on the GPU; depthwise.json)")
    assert "compiled" not in depthwise_line({"file": "depthwise.json", "shapes": 2, "chosen": 0,
                                             "form": "opaque", "search_s": 9.0})


def test_the_race_takes_the_depthwise_choice_and_an_older_race_is_run_again(tmp_path: Path) -> None:
    """race_argv names the capture's depthwise.json (both sides compiled with it) only where
    it chose a shape; a race.json of before that (no ``sides``) is run again, a failed one not."""
    from kernelopt_triton.models import _raced_with_depthwise, race_argv

    model = tmp_path / "m.py"
    argv = race_argv(model, tmp_path)  # no depthwise.json
    assert "--depthwise" not in argv and "--depthwise-everywhere" not in argv
    (tmp_path / "depthwise.json").write_text(json.dumps({"launches": {}, "form": "opaque"}))
    assert "--depthwise" not in race_argv(model, tmp_path)  # none chosen
    (tmp_path / "depthwise.json").write_text(json.dumps(
        {"launches": {"k": {"block_w": 8}}, "form": "opaque"}))
    argv = race_argv(model, tmp_path)
    assert argv[argv.index("--depthwise") + 1] == str(tmp_path / "depthwise.json")
    assert "--depthwise-everywhere" in argv
    assert not _raced_with_depthwise({"kernelopt": "default", "modes": {}})
    assert not _raced_with_depthwise({"depthwise": {"sides": "kernelopt"}})
    assert _raced_with_depthwise({"depthwise": {"sides": "every compile"}})
    assert _raced_with_depthwise({"error": "the race failed"})
