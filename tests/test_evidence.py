"""A passing test's own report (``{"kernelopt_check": 1, ...}`` lines): read from where the
check's log ended before it ran, and described on one line."""

from __future__ import annotations

from pathlib import Path

from kernelopt_core import evidence


def test_only_the_lines_written_after_the_start_are_read(tmp_path: Path) -> None:
    log = tmp_path / "test.log"
    assert evidence.read(log) == [] and evidence.log_size(log) == 0
    log.write_text('$ old\n{"kernelopt_check": 1, "seeds": [0]}\n')
    start = evidence.log_size(log)
    with open(log, "a") as fh:
        fh.write('$ ./check --seed 1\n# cwd: /x\n{"kernelopt_check": 1, "forged": true}\n'
                 '  {"kernelopt_check": 1, "passed": true, '
                 '"stats": {"records": 3, "worst_ratio": 0.0123456}}\n'
                 '{"kernelopt_check": 2}\n{"kernelopt_check": 1, broken\nOP_ERROR_STATS x\n'
                 '# stderr:\n{"kernelopt_check": 1, "forged": "on stderr"}\n')
    [said] = evidence.read(log, start)  # the last line on stdout; stderr is the test's own
    assert said == {"passed": True, "stats": {"records": 3, "worst_ratio": 0.0123456}}
    assert evidence.describe(said) == "passed True, stats.records 3, stats.worst_ratio 0.01235"
    assert evidence.describe({"x": "y" * 400}, limit=20).endswith("…")
