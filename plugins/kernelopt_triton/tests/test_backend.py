"""The triton backend without torch: detection, discovery, commands, prerequisites."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from kernelopt_triton import convention
from kernelopt_triton.backend import TritonBackend, require_prerequisites
from kernelopt_triton_testpaths import EXAMPLES

from kernelopt_core.errors import EXIT_PREREQUISITE, PrerequisiteError, UsageError
from kernelopt_core.settings import Settings
from kernelopt_core.target import Tree

NOT_A_KERNEL = "import torch\n\ndef launch(x):\n    return x\n"


def test_detect_files_and_directories(tmp_path: Path) -> None:
    backend = TritonBackend()
    assert backend.detect(EXAMPLES / "softmax.py") == 0.9
    assert backend.detect(EXAMPLES) == 0.8
    (tmp_path / "model.py").write_text(NOT_A_KERNEL)
    (tmp_path / "notes.txt").write_text("@triton.jit\ndef launch(): pass\n")
    assert backend.detect(tmp_path / "model.py") == 0.0
    assert backend.detect(tmp_path / "notes.txt") == 0.0
    assert backend.detect(tmp_path) == 0.0
    assert backend.detect(tmp_path / "missing.py") == 0.0
    # a file with a syntax error is still recognised (the build step reports the error)
    broken = (EXAMPLES / "vecadd.py").read_text().replace("def launch(x, y, out)", "def launch(x, y, out")
    (tmp_path / "broken.py").write_text(broken)
    assert backend.detect(tmp_path / "broken.py") == 0.9


def test_discover_a_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KERNELOPT_SMALL", raising=False)
    targets = TritonBackend().discover(EXAMPLES, Settings())
    assert [t.name for t in targets] == ["layernorm", "softmax", "softmax_fp16", "vecadd"]
    softmax = targets[1]
    assert softmax.backend == "triton" and softmax.root == EXAMPLES.resolve()
    assert softmax.editable == ("softmax.py",) and softmax.shape == "f32[8192,8192]"
    assert softmax.bytes_moved == 2 * 8192 * 8192 * 4
    assert softmax.bench is not None and softmax.bench.format == "json"
    assert softmax.device in ("cpu", "cuda", "hip")
    assert {k.name for k in softmax.knobs} == {"BLOCK_SIZE@softmax_kernel", "num_warps@softmax_kernel"}
    monkeypatch.setenv("KERNELOPT_SMALL", "1")
    [small] = TritonBackend().discover(EXAMPLES / "softmax.py", Settings())
    assert small.shape == "f32[4,300]" and small.bytes_moved == 2 * 4 * 300 * 4


def test_commands_are_described_not_run(tmp_path: Path) -> None:
    backend = TritonBackend()
    [target] = backend.discover(EXAMPLES / "vecadd.py", Settings())
    tree = Tree("candidate", tmp_path / "src", tmp_path / "build")
    check = backend.check(target, tree, 3)
    assert check.argv == (sys.executable, "-m", "kernelopt_triton.harness", "check",
                          str(tmp_path / "src" / "vecadd.py"), "--seed", "3", "--oracle",
                          str((EXAMPLES / "vecadd.py").resolve()))
    assert check.cwd == tree.src
    bench = backend.bench(target, tree)
    assert bench is not None and bench.argv[3:5] == ("bench", str(tmp_path / "src" / "vecadd.py"))
    if target.device == "cpu":
        assert check.env["TRITON_INTERPRET"] == "1" and bench.env["TRITON_INTERPRET"] == "1"
    assert backend.engine(target, tree) is None


def test_build_is_a_syntax_check(tmp_path: Path) -> None:
    backend = TritonBackend()
    [target] = backend.discover(EXAMPLES / "vecadd.py", Settings())
    src, build = tmp_path / "src", tmp_path / "build"
    src.mkdir()
    build.mkdir()
    tree = Tree("candidate", src, build)
    [command] = backend.build(target, tree)
    (src / "vecadd.py").write_text((EXAMPLES / "vecadd.py").read_text())
    ok = subprocess.run(command.argv, cwd=command.cwd, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    (src / "vecadd.py").write_text("def launch(:\n")
    bad = subprocess.run(command.argv, cwd=command.cwd, capture_output=True, text=True)
    assert bad.returncode != 0 and "SyntaxError" in bad.stderr
    assert not (src / "__pycache__").exists()


def test_missing_torch_or_triton_is_a_prerequisite_error(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def without_triton(name: str, *args: object):
        return None if name == "triton" else real(name, *args)

    with pytest.raises(PrerequisiteError) as info:
        require_prerequisites(without_triton)
    assert info.value.exit_code == EXIT_PREREQUISITE
    assert "triton" in str(info.value) and "pip install triton" in str(info.value)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(PrerequisiteError, match="torch and triton"):
        TritonBackend().discover(EXAMPLES / "softmax.py", Settings())


def test_a_file_missing_convention_names_is_a_usage_error(tmp_path: Path) -> None:
    text = (EXAMPLES / "vecadd.py").read_text().replace("OUTPUTS = (2,)\n", "")
    (tmp_path / "k.py").write_text(text)
    with pytest.raises(UsageError, match="does not define OUTPUTS"):
        TritonBackend().discover(tmp_path / "k.py", Settings())
    with pytest.raises(UsageError, match="not a Triton kernel file"):
        (tmp_path / "m.py").write_text(NOT_A_KERNEL)
        TritonBackend().discover(tmp_path / "m.py", Settings())


def test_constant_folding_reads_the_environment() -> None:
    tree = convention.parse(
        'import os\nSMALL = os.environ.get("S") == "1"\nR, C = (2, 3) if SMALL else (64, 128)\n'
        'SHAPE = f"f16[{R},{C}]"\nBYTES = R * C * 2 << 1\nFLOPS = unknown_call()\n')
    assert tree is not None
    assert convention.declared(tree, {}) == {"SHAPE": "f16[64,128]", "BYTES": 64 * 128 * 4}
    assert convention.declared(tree, {"S": "1"}) == {"SHAPE": "f16[2,3]", "BYTES": 24}
