"""``--top K`` with a model and no ``--op``: the model's heaviest ops from its last profile (the
H200 recording of a 7B-wide Llama's prompt and generation under ncu, fixtures/h200-llama-model),
mapped to ops with the real ggml-cuda sources and timed at the model's nodes; an op the source
shows cannot be timed is passed over, before any build, with why."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import shutil
import tarfile
from pathlib import Path

import attrs
import pytest
from kernelopt_llamacpp.backend import LlamaCppBackend
from llamacpp_fixture import FIXTURE, settings_with

from kernelopt_core.api import ncu_kernels
from kernelopt_core.errors import UsageError
from kernelopt_core.journal import Journal
from kernelopt_core.session import new_run_id, write_header

pytestmark = pytest.mark.slow  # the real ggml-cuda.cu's op table: ~3 s to read

HERE = Path(__file__).parent / "fixtures"
RECORDED = HERE / "h200-llama-model"


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real ggml-cuda sources and test-backend-ops.cpp, with the fixture's marker (no GPU
    asked at discover) and its CMakeLists (a tree kernelopt detects)."""
    root = tmp_path_factory.mktemp("llama.cpp")
    with tarfile.open(RECORDED / "ggml-cuda-src.tgz") as sources:
        sources.extractall(root, filter="data")
    (root / "tests").mkdir(exist_ok=True)
    (root / "tests" / "test-backend-ops.cpp").write_bytes(
        gzip.decompress((HERE / "real-tbo" / "test-backend-ops.cpp.gz").read_bytes()))
    for name in ("CMakeLists.txt", "kernelopt-fixture.toml"):
        shutil.copy(FIXTURE / name, root / name)
    return root


def _profile(state: Path, tree: Path, model: Path) -> str:
    """The journal `kernelopt profile TREE --backend llamacpp --engine --e2e-model M` writes,
    its kernels the H200 recording's."""
    [whole] = LlamaCppBackend().discover(tree, settings_with(state, e2e_model=str(model)))
    run_id = new_run_id()
    journal = Journal(state / "profiles" / run_id / "journal.jsonl")
    write_header(journal, run_id, whole, settings_with(state, e2e_model=str(model)), ["kernelopt"])
    for phase in ("prefill", "decode"):
        text = gzip.decompress((RECORDED / f"ncu-{phase}.csv.gz").read_bytes()).decode()
        journal.write("profile", profiler="ncu", tree="baseline", program="engine", phase=phase,
                      metrics={"kernels": [k.to_json() for k in ncu_kernels(text)]})
    journal.write("end", exit_code=0, gpu_seconds=0.0)
    journal.close()
    return run_id


def test_top_k_takes_the_models_heaviest_ops_it_can_time(tree: Path, tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    nodes = tmp_path / "nodes.txt"
    nodes.write_bytes(gzip.decompress((RECORDED / "nodes-prefill.txt.gz").read_bytes()))
    state = tmp_path / "state"
    with pytest.raises(UsageError) as missing:  # no profile yet: how to make one
        LlamaCppBackend().discover(tree, settings_with(state, e2e_model=str(model), top=3,
                                                       origins={"llamacpp.top": "flag"}))
    assert "kernelopt profile" in (missing.value.hint or "") and "--engine" in missing.value.hint
    run_id = _profile(state, tree, model)
    settings = settings_with(state, e2e_model=str(model), top=3, nodes=str(nodes),
                             origins={"llamacpp.top": "flag"})
    targets = LlamaCppBackend().discover(tree, settings)
    written = json.loads(next((state / "llamacpp").glob("*-top.json")).read_text())
    assert written["profile"] == run_id
    rows = {r["op"]: r for r in written["ops"]}
    # the decode's matrix-vector kernels are MUL_MAT's: the heaviest op, timable at its node
    # (m/n/k by ggml's layout), and its GEMV's block size is a knob at its dispatch site
    # (dispatch_knobs.py: mmvf.cu's max_block_size): chosen first; cuBLAS is a library's
    assert rows["MUL_MAT"]["share"] > 0.4 and rows["MUL_MAT"]["chosen"]
    assert not rows["cuBLAS"]["chosen"] and "library" in rows["cuBLAS"]["why"]
    assert abs(sum(r["share"] for r in written["ops"]) - 1.0) < 1e-6
    chosen = [r["op"] for r in written["ops"] if r["chosen"]]
    assert [t.name for t in targets] == chosen and len(chosen) == 3
    assert chosen == ["MUL_MAT", "RMS_NORM", "SOFT_MAX"]  # 62.7 %, then the norm and softmax
    # each phase's share apart: the GEMV is most of decode, the softmax a prefill op
    assert set(rows["MUL_MAT"]["phases"]) == {"prefill", "decode"}
    assert rows["MUL_MAT"]["phases"]["decode"] > 0.8 > rows["MUL_MAT"]["phases"]["prefill"]
    assert rows["SOFT_MAX"]["phases"]["prefill"] > rows["SOFT_MAX"]["phases"]["decode"]
    assert "(prefill " in targets[0].preface and ", decode " in targets[0].preface
    # --phase decode: the ops ranked by what generation spends, its shares the decode's
    decode = LlamaCppBackend().discover(tree, settings_with(
        state, e2e_model=str(model), top=2, nodes=str(nodes), phase="decode",
        origins={"llamacpp.top": "flag"}))
    assert decode[0].name == "MUL_MAT"
    assert decode[0].time_share == pytest.approx(rows["MUL_MAT"]["phases"]["decode"], abs=1e-4)
    assert "by share of decode's device time" in decode[0].preface
    for target in targets:
        assert target.time_share == rows[target.name]["share"]
        # no engine gate per op: the model check runs the model once, every winner in place
        assert target.data.model == str(model.resolve()) and target.data.e2e_model is None
        assert target.data.match and LlamaCppBackend().engine(target, None) is None  # type: ignore[arg-type]
        assert "passed over" in target.preface and "MUL_MAT" in target.preface
    # the model check after the runs: the whole model as built and with the winners in place
    assert LlamaCppBackend().model_compare(targets, {}, tmp_path / "check") is None  # stand-ins
    # a campaign's job: --target OP with the same --top; the core picks that op from these
    again = LlamaCppBackend().discover(tree, attrs.evolve(settings, target="SOFT_MAX"))
    assert [t.name for t in again] == chosen
    flags = {"llamacpp.top": "option --top", "llamacpp.op": "option --op"}
    with pytest.raises(UsageError, match="--op .* --top"):  # both given on the command line
        LlamaCppBackend().discover(tree, settings_with(state, e2e_model=str(model), top=2,
                                                       op="SOFT_MAX", origins=flags))
    # a top meant for the Triton models (KERNELOPT_TOP) or from a file: an --op given wins
    for where in ({"llamacpp.top": "env KERNELOPT_TOP"},
                  {"llamacpp.top": "kernelopt.toml:3", "llamacpp.op": "option --op"}):
        [one] = LlamaCppBackend().discover(tree, settings_with(state, e2e_model=str(model), top=3,
                                                               op="SOFT_MAX", origins=where))
        assert one.name == "SOFT_MAX" and one.time_share is None
    # coverage.json (coverage.py) keeps the choice: each op searched, or passed over and why
    from kernelopt_llamacpp import coverage

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert coverage.main(["--state-root", str(state), "--repo", str(tree)]) == 0
    covered = {o["op"]: o for o in json.loads(out.getvalue())["ops"]}
    assert covered["MUL_MAT"]["chosen"] is True and covered["MUL_MAT"]["timed"]
    [cap] = covered["MUL_MAT"]["knobs"]  # which knob reaches the model's GEMV, said
    assert (cap["name"], cap["file"]) == ("max_block_size", "ggml/src/ggml-cuda/mmvf.cu")
    assert cap["reaches"] and all(k.startswith("mul_mat_vec_f<") for k in cap["reaches"])
    assert [op for op, o in covered.items() if o["chosen"]] == chosen
    assert all(o["passed_over"] is None for o in covered.values() if o["chosen"])
    # the model itself stays a target to profile (--target model), whatever --top says
    [whole] = LlamaCppBackend().discover(tree, attrs.evolve(settings, target="model"))
    assert whole.name == "model" and whole.editable == ()
    with pytest.raises(UsageError, match="needs the model"):
        LlamaCppBackend().discover(tree, settings_with(state, top=2, origins=flags))
    with pytest.raises(UsageError, match="--nodes"):
        LlamaCppBackend().discover(tree, settings_with(state, e2e_model=str(model), top=2,
                                                       nodes=str(tmp_path / "none.txt"),
                                                       origins=flags))


def test_the_model_checks_trees_builds_and_rates(tmp_path: Path) -> None:
    """whole_model.py: the tree copied without its build folders and .git, each winner's files
    laid over the second copy; a build that fails is the check's error line, not a crash; the
    rates are llama-bench's samples (the H200 recording of the 7B-wide model)."""
    from kernelopt_llamacpp import whole_model

    src = tmp_path / "tree"
    shutil.copytree(FIXTURE, src)
    (src / "build").mkdir()
    (src / "build" / "big.o").write_bytes(b"x")
    (src / ".git").mkdir()
    winner = tmp_path / "winner"
    (winner / "ggml" / "src" / "ggml-cuda").mkdir(parents=True)
    (winner / "ggml" / "src" / "ggml-cuda" / "softmax.cu").write_text("// the winner\n")
    laid = whole_model.copy_tree(src, tmp_path / "ours" / "base-src", [winner])
    ours = tmp_path / "ours" / "base-src"
    assert laid == ["ggml/src/ggml-cuda/softmax.cu"] and not (ours / "build").exists()
    assert not (ours / ".git").exists() and (ours / "ggml" / "src" / "ggml-cuda" / "norm.cu").is_file()
    assert (ours / "ggml" / "src" / "ggml-cuda" / "softmax.cu").read_text() == "// the winner\n"
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):  # the fixture has no llama-bench: the build fails
        assert whole_model.main(["--src", str(src), "--model", str(model), "--out",
                                 str(tmp_path / "check"), "--winner", str(winner)]) == 0
    line = json.loads(out.getvalue().strip().splitlines()[-1])
    assert line["kernelopt_model"] == 1 and "upstream" in line["error"] and "build" in line["error"]
    found = whole_model.rates((RECORDED / "llama-bench.jsonl").read_text())
    assert found == {"prefill": [52459.0, 65323.0, 72989.2], "decode": [1289.57, 1291.11, 1309.27]}
    mode = whole_model.mode(found, [10.0, 10.5], True)
    assert mode["ms"] == pytest.approx(1000 * (512 / 65323.0 + 128 / 1291.11))
    # IQR over the median (inclusive quartiles: never wider than the samples' range)
    assert mode["spread_pct"] == pytest.approx(100 * 0.25 / 10.25, abs=0.01)
    assert mode["windows"] == 2
    assert mode["prefill_spread_pct"] == pytest.approx(100 * (69156.1 - 58891.0) / 65323.0,
                                                       abs=0.01)
    assert mode["prefill_samples"] == 3 and mode["decode_samples"] == 3
    assert mode["decode_spread_pct"] == pytest.approx(100 * (1300.19 - 1290.34) / 1291.11,
                                                      abs=0.01)


def test_with_the_gguf_as_nodes_each_op_is_timed_in_the_phase_it_spends_most_in(
        tree: Path, tmp_path: Path) -> None:
    """--top with --nodes MODEL.gguf and no --phase: MUL_MAT, most of the decode's time, is
    timed at its decode node (the GEMV its knob reaches), not at a prefill GEMM; --phase
    without a GGUF or --top is refused."""
    pytest.importorskip("gguf")
    from kernelopt_llamacpp.gguf_model import write_model

    model = write_model(tmp_path / "m.gguf", None, n_vocab=300, n_head=4, f16=True)
    state = tmp_path / "state"
    _profile(state, tree, model)
    targets = LlamaCppBackend().discover(tree, settings_with(
        state, e2e_model=str(model), top=3, nodes=str(model), origins={"llamacpp.top": "flag"}))
    by_name = {t.name: t for t in targets}
    assert "MUL_MAT" in by_name and "m.gguf's decode graph" in by_name["MUL_MAT"].shape
    assert "n=1" in by_name["MUL_MAT"].data.match  # one token: the decode's product
    with pytest.raises(UsageError, match="--phase decode picks the batch"):
        LlamaCppBackend().discover(tree, settings_with(state, op="SOFT_MAX", phase="decode"))
