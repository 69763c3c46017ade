"""The compile probe's core side: one variant per non-baseline knob value (the others at the
baseline's), and the backend's result line read back."""

from __future__ import annotations

import json
from pathlib import Path

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
