"""report.html: self-contained (no script, nothing fetched), its plots drawn from a journal
recorded on the H200, and rendered by a real headless Chromium (Debian's package; README's
test command installs it): the screenshot must show the plots' colours."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from kernelopt_tests_support import records

from kernelopt_core import events, report
from kernelopt_core.svg_plots import COLORS

RECORDED = Path(__file__).parent / "fixtures" / "journals" / "h200-softmax-run.jsonl"


def rendered(tmp_path: Path) -> Path:
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    shutil.copy(RECORDED, run / "journal.jsonl")
    report.write_all(run)
    return run / "report.html"


def test_the_html_report_draws_the_run_and_fetches_nothing(tmp_path: Path) -> None:
    html = rendered(tmp_path).read_text()
    for title in ("Candidates over the search", "Confirm rounds of c1", "Roofline: bandwidth"):
        assert title in html
    assert html.count("<svg") == 3  # no engine gate with a model: no Amdahl view
    assert "optimized: 1.80×" in html
    assert "<script" not in html and "src=" not in html
    links = [part.split("'")[0] for part in html.split("href='")[1:]]
    assert links == ["report.md", "report.diff"]  # beside it, nothing remote
    # 20 confirm rounds: 20 baseline (0.24 ms) and 20 candidate (0.13-0.14 ms) points
    assert html.count("<title>baseline 0.24") == 20 and html.count("<title>candidate 0.1") == 20


def test_a_candidate_rejected_before_timing_is_drawn_apart(tmp_path: Path) -> None:
    from kernelopt_core.report_html import candidates_plot

    def rejected(cid: str, tile: int, speedup: float | None, gate: str) -> list[events.Event]:
        return [events.Candidate(candidate=cid, parent="baseline", planner="tuner",
                                 description=f"TILE={tile}", knobs={"TILE": tile},
                                 files=["k.c"]),
                events.CandidateResult(candidate=cid, accepted=False, speedup=speedup,
                                       failed_gate=gate, reason="no", gates_passed=[],
                                       tag=None, wall_s=0.1, child_s=0.1)]

    journal = records(*rejected("c1", 8, None, "build"), *rejected("c2", 16, 0.8, "screen"))
    svg = candidates_plot(journal) or ""
    assert "c1: TILE=8: rejected at build" in svg and COLORS["untimed"] in svg
    assert "c2: TILE=16: 0.800×, rejected at screen" in svg and COLORS["rejected"] in svg


def png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """An 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes) → rows of pixels."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks, header = 8, b"", b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks += body
        pos += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour in (2, 6)
    bpp = 4 if colour == 6 else 3
    raw, stride, rows, prev = zlib.decompress(chunks), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up, corner = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc
                                      else corner)) & 255
        rows.append(bytes(line))
        prev = line
    return width, bpp, rows


def count(rows: list[bytes], bpp: int, hex_colour: str) -> int:
    rgb = bytes.fromhex(hex_colour.lstrip("#"))
    return sum(row[i:i + 3] == rgb for row in rows for i in range(0, len(row), bpp))


@pytest.mark.skipif(shutil.which("chromium") is None,
                    reason="Debian's chromium is not installed (README's test command installs it)")
def test_a_real_browser_draws_the_plots(tmp_path: Path) -> None:
    page = rendered(tmp_path)
    shot = tmp_path / "shot.png"
    proc = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}", "--hide-scrollbars",
         "--window-size=1220,900", f"--screenshot={shot}", page.as_uri()],
        capture_output=True, text=True, timeout=120)
    assert shot.exists(), proc.stderr[-2000:]
    _width, bpp, rows = png_pixels(shot.read_bytes())
    # the accepted candidates' dots, the baseline's line and bar, the winner's line and bar
    assert count(rows, bpp, COLORS["accepted"]) > 200
    assert count(rows, bpp, COLORS["baseline"]) > 2000
    assert count(rows, bpp, COLORS["candidate"]) > 2000
    json.dumps({"pixels": len(rows)})  # the screenshot decoded whole


def test_a_models_amdahl_view_and_a_summary_without_noise_are_drawn(tmp_path: Path) -> None:
    """The engine gate's times are lists of runs (their medians drawn); a winner whose
    confirm gate measured no noise draws no band instead of failing the report."""
    from kernelopt_core.report import summarize
    from kernelopt_core.report_html import render_html

    journal = [json.loads(line) for line in RECORDED.read_text().splitlines()]
    # the standalone kernel's engine gate was skipped: in its place, the shape of the engine
    # gate's event as the Triton plugin journals it for a model
    engine = next(i for i, e in enumerate(journal) if e["event"] == "gate"
                  and e["gate"] == "engine" and e.get("final"))
    [journal[engine]] = records(events.Gate(
        candidate="c1", gate="engine", passed=True, final=True, skipped=False,
        reason="outputs match",
        metrics={"baseline_ms": [0.4107, 0.4133], "candidate_ms": [0.3774, 0.3775],
                 "speedup": 1.0915, "time_share": 1.0, "amdahl_speedup": 1.0912}))
    s = summarize(journal)
    html = render_html(journal, s)
    assert html.count("<svg") == 4 and "Model time (engine gate, medians)" in html
    assert "Amdahl&#x27;s prediction" in html or "Amdahl's prediction" in html
    bare = render_html(journal, {**s, "noise_pct": None})  # no band, no failure
    assert "baseline ± noise" not in bare and bare.count("<svg") == 4
