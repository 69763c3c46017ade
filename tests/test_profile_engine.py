"""`kernelopt profile --engine`: a whole program's kernels ranked and each mapped to the tree's
file that defines it, with a suggestion when the largest one is outside the target (on the ncu
summary recorded on the H200 and the sources of bench/ncu_engine)."""

from __future__ import annotations

import gzip
from pathlib import Path

from kernelopt_core.api import cuda_kernel_names
from kernelopt_core.profiling import parsers
from kernelopt_core.profiling import view as profile_view
from kernelopt_core.workspace import snapshot

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures" / "profilers"


def summary() -> dict[str, object]:
    path = FIXTURES / "ncu-multikernel-summary.csv"
    text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    return {"kernels": [k.to_json() for k in parsers.ncu_summary(text)]}


def tree_sources(root: Path) -> dict[str, bytes]:
    return profile_view.sources(snapshot(root)[0])  # what `kernelopt profile` reads


def test_every_kernel_of_the_program_is_mapped_to_the_file_that_defines_it() -> None:
    tree = REPO / "bench" / "ncu_engine"
    sources = tree_sources(tree)
    assert {"main.cu", "row_max.cu", "scale_add.cu", "tiny_bias.cu", "kernels.h"} <= set(sources)
    editable = {k: v for k, v in sources.items() if k == "row_max.cu"}
    profile = profile_view.annotate(summary(), cuda_kernel_names(editable))
    profile = profile_view.locate(profile, cuda_kernel_names(sources))
    rows = profile_view.ranking(profile)
    assert [(r[4], r[5].split("(")[0]) for r in rows] == [
        ("scale_add.cu (not the target's)", "scale_add"), ("row_max.cu", "row_max"),
        ("tiny_bias.cu (not the target's)", "tiny_bias")]
    hint = profile_view.suggestion(profile)
    assert hint is not None and "scale_add.cu" in hint and "outside this target" in hint


def test_no_suggestion_when_the_target_holds_the_largest_kernel() -> None:
    sources = tree_sources(REPO / "bench" / "ncu_engine")
    profile = profile_view.annotate(summary(), cuda_kernel_names(
        {k: v for k, v in sources.items() if k == "scale_add.cu"}))
    assert profile_view.suggestion(profile_view.locate(profile, cuda_kernel_names(sources))) is None


def test_only_files_that_can_define_a_kernel_are_read() -> None:
    files = {"src/a.cu": b"", "k.py": b"", "notes.txt": b"", "lib.so": b"", "x.cuh": b""}
    assert sorted(profile_view.sources(files)) == ["k.py", "src/a.cu", "x.cuh"]
