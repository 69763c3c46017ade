"""Each reduction kernel's other form (inductor_forms.py) for real, on the CPU: Inductor emits
Triton kernels for the CPU, the capture compiles the model a second time with Inductor's
persistent-or-looped choice reversed, the standalone file holds both forms behind a
REDUCTION_FORM knob, and the engine swaps the chosen form into the model's own compile."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from kernelopt_triton import inductor
from kernelopt_triton.engine_swap import candidate_parts, chosen_form, swap_kernel_source
from kernelopt_triton.inductor_forms import SWITCH_NAME, form_knobs, other_name
from kernelopt_triton.inductor_parse import parse_kernel_source
from kernelopt_triton.knobs import detect

from kernelopt_core.api import Target

CHILD_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(Path(inductor.__file__).parents[1]), os.environ.get("PYTHONPATH", "")])}
# sums only: Triton's interpreter runs a max reduction element by element (minutes)
MODEL = '''import torch
from torch import nn

TOLERANCE = {"atol": 1e-4, "rtol": 1e-4}


class Norms(nn.Module):
    def forward(self, x, y):
        # a short row (Inductor: persistent) and a long one (Inductor: looped)
        a = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
        b = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + 1e-6)
        return a, b


def model():
    return Norms()


def inputs(seed, device):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(8, 64, generator=gen).to(device),
            torch.randn(4, 2048, generator=gen).to(device))
'''
RUN_FORMS = '''import importlib.util, sys, torch
path = sys.argv[1]
for form in (0, 1):
    spec = importlib.util.spec_from_file_location("m", path)
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
    m.REDUCTION_FORM = form  # launch() reads the module's switch
    ref = m.reference(*m.make_args(3, "cpu"))
    args = m.make_args(3, "cpu")
    for i in m.OUTPUTS:
        args[i].fill_(float("nan"))  # poisoned: the launch must write every element
    m.launch(*args)
    for i, r in zip(m.OUTPUTS, ref):
        torch.testing.assert_close(args[i].double(), r.double(), **m.TOLERANCE)
print("ok")
'''


def _child(args: list[str], cwd: Path, env: dict[str, str] | None = None
           ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300,
                          cwd=str(cwd), env=env or CHILD_ENV)


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict]:
    root = tmp_path_factory.mktemp("forms")
    model = root / "norms.py"
    model.write_text(MODEL)
    cap = root / "cap"
    for args in (["capture", str(model), "--out", str(cap), "--device", "cpu"],
                 ["generate", str(cap), "--top", "2"]):
        proc = _child(["-m", "kernelopt_triton.inductor", *args], root)
        assert proc.returncode == 0, proc.stderr[-3000:]
    return model, cap, json.loads((cap / "kernels.json").read_text())


@pytest.mark.slow
def test_the_capture_keeps_each_reductions_other_form(captured) -> None:
    _model, cap, record = captured
    assert record["forms"]["paired"] == 2 and "error" not in record["forms"]
    by_heuristic = {k["heuristic"]: k for k in record["kernels"]}
    short, long = by_heuristic["persistent_reduction"], by_heuristic["reduction"]
    assert short["args"][0]["size"] == [8, 64] and long["args"][0]["size"] == [4, 2048]
    # the short row looped, the long one persistent: Inductor's own code for either
    assert short["form"]["heuristic"] == "reduction"
    assert long["form"]["heuristic"] == "persistent_reduction"
    for k in (short, long):
        assert k["form"]["name"] == other_name(k["name"])
        form = parse_kernel_source((cap / k["form"]["file"]).read_text(), k["form"]["name"])
        assert [a.name for a in form.args] == [a["name"] for a in k["args"]]
    persistent = parse_kernel_source((cap / long["form"]["file"]).read_text(), long["form"]["name"])
    assert "R0_BLOCK" not in persistent.params  # the whole row is the block


@pytest.mark.slow
def test_both_forms_of_the_standalone_file_match_the_reference(captured) -> None:
    _model, cap, record = captured
    for k in record["kernels"]:
        path = cap / "targets" / f"{k['name']}.py"
        text = path.read_text()
        assert f"\n{SWITCH_NAME} = 0\n" in text and f"def {k['form']['name']}(" in text
        proc = _child(["-c", RUN_FORMS, str(path)], cap, {**CHILD_ENV, "TRITON_INTERPRET": "1"})
        assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


@pytest.mark.slow
def test_each_forms_launch_keywords_are_knobs_only_while_that_form_runs(captured) -> None:
    _model, cap, record = captured
    long = next(k for k in record["kernels"] if k["heuristic"] == "reduction")
    path = cap / "targets" / f"{long['name']}.py"
    ks = parse_kernel_source((cap / long["file"]).read_text(), long["name"])
    form = parse_kernel_source((cap / long["form"]["file"]).read_text(), long["form"]["name"])
    found = detect(path.name, path.read_text())
    knobs = {k.name: k for k in form_knobs(path.name, tuple(found), ks, form, {})}
    assert knobs[SWITCH_NAME].values == ("0", "1") and not knobs[SWITCH_NAME].when
    looped, persistent = long["name"], long["form"]["name"]
    assert knobs[f"R0_BLOCK@{looped}"].when == (SWITCH_NAME, "0")
    assert knobs[f"num_stages@{looped}"].when == (SWITCH_NAME, "0")
    assert knobs[f"XBLOCK@{persistent}"].when == (SWITCH_NAME, "1")
    # Inductor's limits per form: a persistent program's block is its row, no loop to pipeline
    assert f"R0_BLOCK@{persistent}" not in knobs and f"num_stages@{persistent}" not in knobs
    Target("triton", "t", cap, (path.name,), knobs=tuple(knobs.values()))  # conditions valid


@pytest.mark.slow
def test_the_swap_takes_the_other_form_with_its_own_metadata(captured) -> None:
    _model, cap, record = captured
    long = next(k for k in record["kernels"] if k["heuristic"] == "reduction")
    name, other = long["name"], long["form"]["name"]
    text = (cap / "targets" / f"{name}.py").read_text()
    inductor_source = (cap / long["file"]).read_text()
    assert chosen_form(text) == (None, {})
    assert "R0_BLOCK : tl.constexpr" in swap_kernel_source(inductor_source, text, name)
    switched = text.replace(f"\n{SWITCH_NAME} = 0\n", f"\n{SWITCH_NAME} = 1\n")
    assert chosen_form(switched)[0] == other
    funcs, config = candidate_parts(switched, name)
    assert f"def {name}(" in funcs[-1] and other not in "".join(funcs)
    assert "R0_BLOCK" not in config  # the persistent form's launch
    swapped = swap_kernel_source(inductor_source, switched, name)
    assert "@triton_heuristics.fixed_config(" in swapped
    assert "R0_BLOCK: tl.constexpr = 2048" in swapped  # the persistent body, under NAME
    assert "'R0_BLOCK': 'constexpr'" not in swapped  # its own signature, not the looped one's
    # the config as given: no coordinate descent on its first run (max-autotune's flag)
    assert "'coordinate_descent_tuning': False" in swapped
    # the other direction: Inductor's persistent kernel swapped for its looped form
    short = next(k for k in record["kernels"] if k["heuristic"] == "persistent_reduction")
    text = (cap / "targets" / f"{short['name']}.py").read_text()
    looped = swap_kernel_source((cap / short["file"]).read_text(),
                                text.replace(f"\n{SWITCH_NAME} = 0\n", f"\n{SWITCH_NAME} = 1\n"),
                                short["name"])
    assert "'R0_BLOCK': 'constexpr'" in looped and "for r0_offset in tl.range(" in looped
    assert f"def {short['name']}(" in looped and short["form"]["name"] not in looped


@pytest.mark.slow
def test_a_switch_to_a_form_the_file_does_not_describe_is_refused(captured) -> None:
    _model, cap, record = captured
    long = next(k for k in record["kernels"] if k["heuristic"] == "reduction")
    text = (cap / "targets" / f"{long['name']}.py").read_text()
    switched = text.replace(f"\n{SWITCH_NAME} = 0\n", f"\n{SWITCH_NAME} = 1\n")
    for broken in (switched.replace("\nFORM_META = ", "\nOLD_META = "),
                   switched.replace("\nFORM_KERNEL = ", "\nOLD_KERNEL = "),
                   text.replace(f"\n{SWITCH_NAME} = 0\n", f"\n{SWITCH_NAME} = 2\n")):
        with pytest.raises(ValueError, match="REDUCTION_FORM is 0"):
            swap_kernel_source((cap / long["file"]).read_text(), broken, long["name"])


@pytest.mark.slow
def test_the_backend_gives_the_switch_and_says_what_the_second_compile_gave(captured) -> None:
    from kernelopt_triton.inductor_forms import forms_line
    from kernelopt_triton.models import InductorBackend

    model, cap, record = captured
    for k in record["kernels"]:
        target = InductorBackend()._model_target(cap / "targets" / f"{k['name']}.py", model, k)
        knobs = {knob.name: knob for knob in target.knobs}
        assert knobs[SWITCH_NAME].values == ("0", "1")
        assert all(knob.when for name, knob in knobs.items() if name != SWITCH_NAME)
        # the file's BYTES; no profiled time on the CPU (no device time: no headroom estimate)
        assert target.bytes_moved and target.bytes_moved > 0
        assert k["calls"] == 0 and target.profiled_ms is None
    line = forms_line(record["forms"])
    assert line.startswith("reduction forms: 2 reduction kernels with their other form too")


TWO_GRAPHS = MODEL.replace(
    "        b = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + 1e-6)\n",
    "        torch._dynamo.graph_break()\n"
    "        b = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + 1e-6)\n").replace(
    "torch.randn(8, 64, generator=gen)", "torch.randn(64, 32768, generator=gen)")


@pytest.mark.slow
def test_a_later_graphs_kernel_is_paired_by_its_place_not_its_suffix(tmp_path: Path) -> None:
    """Graph 0's long row stays looped in both compiles; graph 1's shorter one changes form.
    The first compile calls graph 1's kernel NAME_g1 (its Inductor name clashes with graph
    0's), the second does not (triton_per_ clashes with nothing): paired by the graph's place
    and Inductor's own name, written under the first's name."""
    model = tmp_path / "two_graphs.py"
    model.write_text(TWO_GRAPHS)
    cap = tmp_path / "cap"
    for args in (["capture", str(model), "--out", str(cap), "--device", "cpu"],
                 ["generate", str(cap), "--top", "2"]):
        proc = _child(["-m", "kernelopt_triton.inductor", *args], tmp_path)
        assert proc.returncode == 0, proc.stderr[-3000:]
    record = json.loads((cap / "kernels.json").read_text())
    assert record["forms"]["paired"] == 1 and record["forms"]["unpaired"] == 1, record["forms"]
    later = next(k for k in record["kernels"] if k.get("form"))
    assert later["name"].endswith("_g1") and later["form"]["name"] == other_name(later["name"])
    assert later["args"][0]["size"] == [4, 2048]
    path = cap / "targets" / f"{later['name']}.py"
    proc = _child(["-c", RUN_FORMS, str(path)], cap, {**CHILD_ENV, "TRITON_INTERPRET": "1"})
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


@pytest.mark.slow
def test_the_engine_runs_the_chosen_form_inside_the_models_compile(captured, tmp_path: Path) -> None:
    """REDUCTION_FORM = 1 swapped into the model: outputs match; the same file with its other
    form's arithmetic broken does not (so the form the switch picks is what runs)."""
    model, cap, record = captured
    long = next(k for k in record["kernels"] if k["heuristic"] == "reduction")
    name = long["name"]
    baseline = cap / "targets" / f"{name}.py"
    switched = baseline.read_text().replace(f"\n{SWITCH_NAME} = 0\n", f"\n{SWITCH_NAME} = 1\n")
    head, sep, form_body = switched.partition(f"def {long['form']['name']}(")
    broken = head + sep + form_body.replace("2048.0", "1024.0", 1)  # the mean's divisor
    assert broken != switched
    results = []
    for label, text in (("other", switched), ("broken", broken)):
        candidate = tmp_path / label / f"{name}.py"
        candidate.parent.mkdir()
        candidate.write_text(text)
        proc = _child(["-m", "kernelopt_triton.engine", str(model), "--kernel", name, "--source",
                       str(candidate), "--baseline-source", str(baseline), "--device", "cpu",
                       "--rounds", "2", "--cache-dir", str(tmp_path / "cache"),
                       "--capture-source", str(cap / long["file"])], tmp_path)
        lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        assert proc.returncode == 0 and len(lines) == 1, proc.stdout[-2000:] + proc.stderr[-3000:]
        results.append(lines[0])
    assert results[0]["match"] is True and results[0]["identity"].startswith("by code")
    assert len(results[0]["candidate_ms"]) == 2
    assert results[1]["match"] is False
