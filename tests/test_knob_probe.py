"""The compile probe's core side: one variant per non-baseline knob value (the others at the
baseline's), and the backend's result line read back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kernelopt_core import knob_probe
from kernelopt_core.target import Knob


def test_each_value_is_a_variant_with_the_other_knobs_at_the_baseline(tmp_path: Path) -> None:
    files = {"k.cuh": b"#define A 64\n#define B 2\n", "k.cu": b"int x;\n"}
    knobs = (Knob("A", "k.cuh", ("32", "64", "128"), r"#define A (\d+)"),
             Knob("B", "k.cuh", ("2", "4"), r"#define B (\d+)"))
    variants = knob_probe._write_variants(knobs, files, {"A": "64", "B": "2"}, tmp_path / "p")
    assert [(v["knob"], v["value"], v["files"]) for v in variants] == [
        ("A", "32", ["k.cuh"]), ("A", "128", ["k.cuh"]), ("B", "4", ["k.cuh"])]
    assert (tmp_path / "p" / "v3" / "k.cuh").read_bytes() == b"#define A 64\n#define B 4\n"
    assert json.loads((tmp_path / "p" / "variants.json").read_text()) == variants
    assert not (tmp_path / "p" / "v1" / "k.cu").exists()  # only what the value changes


def test_the_result_line_is_the_last_one_and_garbage_is_no_result() -> None:
    out = 'compiling\n{"kernelopt_probe": 1, "results": {"v1": {"ok": false}}}\n'
    assert knob_probe._results(out) == {"v1": {"ok": False}}
    assert knob_probe._results("no line") is None
    assert knob_probe._results('{"kernelopt_probe": 1, "results": [1]}') is None
    assert knob_probe._results('{"kernelopt_probe": 1, broken') is None


def test_a_mirror_group_is_written_with_the_value_and_other_groups_are_not() -> None:
    from kernelopt_core.knobs import apply, current_values

    text = {"k.cu": b"dim3 block(16, 16, 1);\nk<16><<<g, block>>>();\n#define B ((64))\n"}
    mirrored = Knob("X", "k.cu", ("16", "32"), r"block\((\d+), \d+, 1\);\nk<(?P<mirror>\d+)>")
    assert apply((mirrored,), text, {"X": "32"})["k.cu"].startswith(
        b"dim3 block(32, 16, 1);\nk<32><<<")
    plain = Knob("Y", "k.cu", ("16", "32"), r"block\((\d+), (\d+), 1\)")  # a user's second group
    assert apply((plain,), text, {"Y": "32"})["k.cu"].startswith(b"dim3 block(32, 16, 1);")
    nested = Knob("B", "k.cu", ("64", "128"), r"#define B \(\(((?P<mirror>\d+))\)\)")  # overlaps
    assert b"#define B ((128))" in apply((nested,), text, {"B": "128"})["k.cu"]
    assert current_values((mirrored,), text) == {"X": "16"}


def test_usable_drops_failed_values_keeps_the_baseline_and_keeps_all_when_the_probe_fails(
        tmp_path: Path) -> None:
    import sys
    from types import SimpleNamespace

    from kernelopt_core import process
    from kernelopt_core.journal import Journal
    from kernelopt_core.target import Command, Target, Tree

    files = {"k.cuh": b"#define A 64\n"}
    knobs = (Knob("A", "k.cuh", ("32", "64", "128"), r"#define A (\d+)"),)
    reply = {"v1": {"ok": False, "error": "static assertion failed"}}  # v2 (128): no result

    class Backend:
        def compile_probe(self, target: Target, tree: Tree, probe_dir: Path) -> Command:
            line = json.dumps({"kernelopt_probe": 1, "results": reply})
            return Command((sys.executable, "-c", f"print({line!r})"), tmp_path)

    tree = Tree("baseline", tmp_path, tmp_path)
    journal = Journal(tmp_path / "journal.jsonl")
    context: Any = SimpleNamespace(  # the parts of a RunContext the probe reads
        backend=Backend(), target=None, journal=journal,
        settings=SimpleNamespace(timeouts=SimpleNamespace(build_timeout_s=60)),
        runner=SimpleNamespace(spawn=lambda command, log: process.run(command, log)),
        workspace=SimpleNamespace(baseline_tree=tree, files=files))
    kept = knob_probe.usable(context, knobs, {"A": "64"}, tmp_path / "p")
    assert kept[0].values == ("64", "128")  # 32 dropped; 128 not judged, so kept
    reply["v2"] = {"ok": False, "error": "x"}
    assert knob_probe.usable(context, knobs, {"A": "64"},
                             tmp_path / "p") == ()  # only the baseline's value left: no knob
    reply.clear()

    class Broken(Backend):
        def compile_probe(self, target: Target, tree: Tree, probe_dir: Path) -> Command:
            return Command((sys.executable, "-c", "raise SystemExit('control failed')"), tmp_path)

    context.backend = Broken()
    assert knob_probe.usable(context, knobs, {"A": "64"}, tmp_path / "p") == knobs
    journal.close()
    events = [json.loads(line) for line in (tmp_path / "journal.jsonl").read_text().splitlines()]
    assert [e["ok"] for e in events if e["event"] == "knob_probe"] == [True, True, False]
    assert (tmp_path / "p" / "probe.log").is_file()
