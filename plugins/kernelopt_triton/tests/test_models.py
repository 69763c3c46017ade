"""The `inductor` backend as a user meets it without a GPU: detected, its flags on `run`, and a
clear exit 3 (CI has no GPU; the GPU path is proved by bench/h200_triton.sh)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kernelopt_triton.models import InductorBackend
from kernelopt_triton.plugin import TritonBackend

REPO = Path(__file__).resolve().parents[3]


def kernelopt(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kernelopt_core.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_model_files_go_to_the_inductor_backend_kernel_files_to_triton() -> None:
    model, kernel = REPO / "examples" / "mlp.py", REPO / "examples" / "triton" / "softmax.py"
    assert InductorBackend().detect(model) > TritonBackend().detect(model)
    assert TritonBackend().detect(kernel) > InductorBackend().detect(kernel)


def test_run_a_model_without_a_gpu_exits_3_saying_what_is_needed(tmp_path: Path) -> None:
    for name in ("mlp.py", "pointwise_fused.py"):
        result = kernelopt("run", str(REPO / "examples" / name), "--top", "2", cwd=tmp_path)
        assert result.returncode == 3, result.stderr
        assert "needs a CUDA GPU" in result.stderr and "fix:" in result.stderr
    assert not (tmp_path / ".kernelopt" / "work").exists()  # nothing captured, nothing written


def test_model_flags_are_on_run() -> None:
    text = kernelopt("run", "--help", cwd=REPO).stdout
    assert "--top" in text and "--kernel" in text
