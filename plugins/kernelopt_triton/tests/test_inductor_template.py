"""max-autotune's Triton GEMM templates (``triton_tem_*``) as standalone kernels and back into
Inductor's source (inductor_template.py), on the CPU.

Fixture: tests/fixtures/inductor/template-small/kernels/triton_tem_fused_addmm_relu_0.py is
hand-made in the exact layout of Inductor's template source with ``benchmark_kernel`` on
(torch's select_algorithm.py and triton_mm.py.jinja: in-body meta parameters, FixedGrid, the
grid as get_args()'s last three values), at a small shape (64x48 @ 48x32, bias + ReLU
epilogue) so Triton's interpreter runs it. The real ones of a GPU capture are checked on the
device (bench/h200_modes.sh swapcheck)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from kernelopt_triton import engine, inductor
from kernelopt_triton.engine_switch import SwitchedKernel
from kernelopt_triton.inductor_gen import generate_files
from kernelopt_triton.inductor_parse import parse_kernel_source
from kernelopt_triton.inductor_template import (
    inductor_form,
    parse_template,
    standalone_form,
    tile_programs,
)
from kernelopt_triton.knobs import detect

CAP = Path(__file__).parent / "fixtures" / "inductor" / "template-small"
NAME = "triton_tem_fused_addmm_relu_0"
CHILD_ENV = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": os.pathsep.join(
    [str(Path(inductor.__file__).parents[1]), os.environ.get("PYTHONPATH", "")])}


@pytest.fixture(scope="module")
def source() -> str:
    return (CAP / "kernels" / f"{NAME}.py").read_text()


@pytest.fixture
def generated(tmp_path: Path) -> Path:
    record = json.loads((CAP / "kernels.json").read_text())
    return generate_files(CAP, record, record["kernels"][0], tmp_path / "targets")[0]


def test_the_template_source_parses_with_its_fixed_grid_and_config(source: str) -> None:
    ks = parse_kernel_source(source, NAME)
    assert ks.heuristic == "template" and ks.grid_type == "FixedGrid"
    assert ks.fixed_grid == (4, 1, 1)  # cdiv(64, 32) * cdiv(32, 16) tiles
    assert ks.decorator_ints == {"num_stages": 3, "num_warps": 4} and ks.flops == 196608
    assert [a.name for a in ks.args] == ["in_ptr0", "arg_A", "arg_B", "out_ptr0"]
    tpl = parse_template(ks.jit_source, NAME)
    assert tpl.sizes == {"M": 64, "N": 32, "K": 48} and tpl.tile_grid
    assert tpl.meta["BLOCK_M"] == "32" and tpl.meta["EVEN_K"] == "True"
    assert tpl.movable(ks.fixed_grid) == ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")
    # a grid that is not the tile grid keeps its tiles: only the swizzle and BLOCK_K move
    assert tpl.movable((7, 1, 1)) == ("BLOCK_K", "GROUP_M")


def test_the_standalone_file_has_the_templates_knobs_and_a_grid_that_follows_them(
        generated: Path) -> None:
    text = generated.read_text()
    ast.parse(text)
    assert "BLOCK_M: tl.constexpr = 32, BLOCK_N: tl.constexpr = 16" in text
    assert "BLOCK_M : tl.constexpr" not in text  # moved, not duplicated
    assert "EVEN_K : tl.constexpr = True" in text and "tl.static_assert(48 % BLOCK_K == 0" in text
    assert "triton.cdiv(64, meta['BLOCK_M']) * triton.cdiv(32, meta['BLOCK_N']), 1, 1)" in text
    assert "FLOPS = 196608" in text
    knobs = {k.name.split("@")[0] for k in detect(str(generated), text)}
    assert {"BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages"} <= knobs, knobs


def _run(files: list[Path]) -> subprocess.CompletedProcess[str]:
    script = (
        "import importlib.util, sys, torch\n"
        "for p in sys.argv[1:]:\n"
        "    spec = importlib.util.spec_from_file_location('m', p)\n"
        "    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "    ref = m.reference(*m.make_args(3, 'cpu'))\n"
        "    args = m.make_args(3, 'cpu')\n"
        "    for i in m.OUTPUTS: args[i].fill_(float('nan'))\n"
        "    m.launch(*args)\n"
        "    for i, r in zip(m.OUTPUTS, ref):\n"
        "        assert not r.isnan().any()\n"
        "        torch.testing.assert_close(args[i].double(), r.double(), **m.TOLERANCE)\n"
        "    print('ok', p)\n"
    )
    return subprocess.run([sys.executable, "-c", script, *map(str, files)], env=CHILD_ENV,
                          capture_output=True, text=True, timeout=240)


def test_tuned_tiles_run_under_the_interpreter_and_match_the_template(generated: Path) -> None:
    """Other tiles, swizzle and warps compute the same GEMM on a grid that follows the tiles;
    a BLOCK_K that does not divide K (unmasked loads) fails to compile, never reads past K."""
    text = generated.read_text()
    edits = {"cand": text.replace("BLOCK_M: tl.constexpr = 32", "BLOCK_M: tl.constexpr = 16")
                         .replace("BLOCK_N: tl.constexpr = 16", "BLOCK_N: tl.constexpr = 32")
                         .replace("GROUP_M: tl.constexpr = 8", "GROUP_M: tl.constexpr = 2")
                         .replace("num_warps=4", "num_warps=2"),
             "odd_k": text.replace("BLOCK_K: tl.constexpr = 16", "BLOCK_K: tl.constexpr = 32")}
    files = []
    for label, edited in edits.items():
        assert edited != text
        path = generated.with_name(f"{label}.py")
        path.write_text(edited)
        path.with_name(f"{label}_orig.py").symlink_to(generated.with_name(f"{NAME}_orig.py"))
        files.append(path)
    proc = _run([generated, files[0]])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("ok ") == 2
    proc = _run([files[1]])
    assert proc.returncode != 0 and "BLOCK_K must divide K = 48" in proc.stderr, proc.stderr[-2000:]


def test_a_candidate_goes_back_into_inductors_template_with_its_grid(source: str,
                                                                    generated: Path) -> None:
    candidate = (generated.read_text()
                 .replace("BLOCK_M: tl.constexpr = 32", "BLOCK_M: tl.constexpr = 64")
                 .replace("num_warps=4, num_stages=3", "num_warps=8, num_stages=4"))
    swapped = engine.swap_kernel_source(source, candidate, NAME)
    tree = ast.parse(swapped)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == NAME)
    assert [a.arg for a in fn.args.args] == ["in_ptr0", "arg_A", "arg_B", "out_ptr0"]
    assert "    BLOCK_M : tl.constexpr = 64" in swapped and "num_warps=8," in swapped
    assert "num_stages=4," in swapped and "'grid_type': 'FixedGrid'" in swapped
    assert swapped.count("@triton_heuristics.template(") == 1 and "def get_args():" in swapped
    # the grid's x: cdiv(64, 64) * cdiv(32, 16) tiles, where the captured tiles made 4
    assert tile_programs(swapped, NAME) == 2 and tile_programs(source, NAME) == 4
    # the standalone form and back is Inductor's function again, the static_assert aside
    ks = parse_kernel_source(source, NAME)
    there, _ = standalone_form(ks.jit_source, NAME, ks.fixed_grid)
    back = inductor_form(there, NAME, ks.params)
    assert parse_template(back, NAME).meta == parse_template(ks.jit_source, NAME).meta
    # a candidate that drops Inductor's parameters cannot go back
    with pytest.raises(ValueError, match="keeps Inductor's parameters"):
        inductor_form(there.replace("(in_ptr0, arg_A,", "(arg_A,"), NAME, ks.params)
    # a tile given at the launch would differ from the body's the grid follows: refused
    with pytest.raises(ValueError, match="BLOCK_M given at its launch"):
        engine.swap_kernel_source(source, candidate.replace("num_warps=8,", "BLOCK_M=16, num_warps=8,"), NAME)


def test_the_switched_template_runs_on_the_candidates_grid() -> None:
    """The wrapper passes the captured grid as run's last three arguments (FixedGrid); the
    candidate's version gets its own x."""
    calls = []

    class Launcher:
        def run(self, *args, **kwargs):
            calls.append(args)

    switched = SwitchedKernel(NAME, {"baseline": Launcher(), "candidate": Launcher()}, {},
                              {"candidate": 2})
    switched.active = "baseline"
    switched.run("bias", "a", "b", "out", 4, 1, 1, stream=0)
    switched.active = "candidate"
    switched.run("bias", "a", "b", "out", 4, 1, 1, stream=0)
    assert calls == [("bias", "a", "b", "out", 4, 1, 1), ("bias", "a", "b", "out", 2, 1, 1)]
