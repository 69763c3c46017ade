"""`kernelopt init` on a real CMake project (the CPU example without its kernelopt.toml): the
descriptor it finds, the smoke baseline it runs first, what it refuses, and a run on its
descriptor that ends optimized."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kernelopt_tests_support import COUNTED_TRANSPOSE_BENCH

REPO = Path(__file__).resolve().parents[3]


def kernelopt(*args: str, cwd: Path, stdin: str | None = None,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items()
             if not k.endswith("_API_KEY")
             and (not k.startswith("KERNELOPT_") or k == "KERNELOPT_DEVICE_CACHE")}
    return subprocess.run([sys.executable, "-c", "from kernelopt_core.cli import main; main()",
                           *args], cwd=cwd, input=stdin, capture_output=True, text=True,
                          timeout=900, env={**clean, **(env or {})})


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "transpose"
    shutil.copytree(REPO / "examples" / "cmake-cpu", root)
    (root / "kernelopt.toml").unlink()
    return root


@pytest.mark.slow
def test_init_finds_the_descriptor_and_a_run_on_it_ends_optimized(project: Path) -> None:
    done = kernelopt("init", "--yes", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "smoke baseline passed: transpose_test on seed 1" in done.stderr
    text = (project / "kernelopt.toml").read_text()
    for line in ('name = "transpose"', 'editable = ["kernel.cpp"]', 'context = ["kernel.h"]',
                 'contract = ["transpose_bench.cpp", "transpose_test.cpp"]',
                 'test = "{build}/transpose_test --seed {seed}"',
                 'bench = "{build}/transpose_bench --work {work}"', 'bench_format = "json"',
                 'shape = "f32[2048,2048]"', "bytes = 33554432"):
        assert line in text, line
    # the run on it reads a deterministic clock (the real bench runs, its time is counted:
    # tests/kernelopt_tests_support.py), so the verdict does not depend on the machine's load
    (project / "counted_bench.py").write_text(COUNTED_TRANSPOSE_BENCH)
    (project / "kernelopt.toml").write_text(text.replace(
        'bench = "{build}/transpose_bench --work {work}"',
        f'bench = "{sys.executable} {{repo}}/counted_bench.py {{repo}} {{build}} {{work}}"'))
    run = kernelopt("run", ".", "--iterations", "3", "--patience", "3", "--final-rounds", "2",
                    "--screen-runs", "1", "--seeds", "1", cwd=project)
    assert run.returncode == 0, run.stderr[-2000:]
    summary = json.loads(next((project / ".kernelopt" / "runs").glob("*/summary.json")).read_text())
    assert summary["status"] == "optimized"


@pytest.mark.slow
def test_init_never_overwrites_and_dry_run_writes_nothing(project: Path, tmp_path: Path) -> None:
    dry = kernelopt("init", "--yes", "--dry-run", cwd=project)
    assert dry.returncode == 0 and 'backend = "cmake"' in dry.stdout
    assert not (project / "kernelopt.toml").exists()
    (project / "kernelopt.toml").write_text("# mine\n")
    refused = kernelopt("init", "--yes", cwd=project)
    assert refused.returncode == 2 and "already exists" in refused.stderr
    assert (project / "kernelopt.toml").read_text() == "# mine\n"
    empty = tmp_path / "empty"
    empty.mkdir()
    nothing = kernelopt("init", "--yes", cwd=empty)
    assert nothing.returncode == 2 and "has no CMakeLists.txt" in nothing.stderr


@pytest.mark.slow
def test_two_bench_programs_are_asked_about_or_refused_with_yes(project: Path) -> None:
    cmake = project / "CMakeLists.txt"
    cmake.write_text(cmake.read_text() + "\nadd_executable(transpose_bench_small transpose_bench.cpp)\n"
                     "target_link_libraries(transpose_bench_small PRIVATE kernel)\n")
    refused = kernelopt("init", "--yes", cwd=project)
    assert refused.returncode == 2
    assert "found: transpose_bench, transpose_bench_small" in refused.stderr
    asked = kernelopt("init", cwd=project, stdin="transpose_bench\n")
    assert asked.returncode == 0, asked.stderr
    assert 'bench = "{build}/transpose_bench --work {work}"' in (project / "kernelopt.toml").read_text()


@pytest.mark.slow
def test_a_program_built_elsewhere_is_found_where_cmake_put_it(project: Path) -> None:
    cmake = project / "CMakeLists.txt"
    cmake.write_text(cmake.read_text() + "\nset_target_properties(transpose_test PROPERTIES "
                     "RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)\n")
    done = kernelopt("init", "--yes", "--dry-run", cwd=project)
    assert done.returncode == 0, done.stderr
    assert 'test = "{build}/bin/transpose_test --seed {seed}"' in done.stdout


@pytest.mark.slow
def test_init_checks_the_llm_provider_with_one_request_when_a_key_is_set(project: Path) -> None:
    """A real HTTP server as the provider (kernelopt_core.testing.ScriptedLLMServer)."""
    from kernelopt_core.testing import ScriptedLLMServer

    with ScriptedLLMServer({"other": [{"message": {"role": "assistant", "content": "OK"}}]}) \
            as server:
        env = {"OPENCODE_API_KEY": "test-key", "KERNELOPT_BASE_URL": server.url,
               "KERNELOPT_MODEL": "m-test"}
        done = kernelopt("init", "--yes", "--dry-run", cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    assert "LLM provider checked: opencode-go: model m-test answered in" in done.stderr
    assert len(server.requests) == 1
    assert server.requests[0]["headers"].get("Authorization") == "Bearer test-key"
    # a provider that does not answer: said, and the descriptor is still written
    env["KERNELOPT_BASE_URL"] = "http://127.0.0.1:9/v1"  # nothing listens on port 9
    unanswered = kernelopt("init", "--yes", cwd=project, env=env)
    assert unanswered.returncode == 0, unanswered.stderr
    assert "the LLM provider did not answer" in unanswered.stderr
    assert (project / "kernelopt.toml").exists()
    quiet = kernelopt("init", "--yes", "--dry-run", cwd=project)  # no key: nothing to check
    assert "no LLM key set: runs use the built-in tuner" in quiet.stderr


@pytest.mark.slow
def test_a_bench_that_prints_a_human_line_gets_a_regex_descriptor(project: Path) -> None:
    """A bench printing `median= 12.3 us` (no JSON): init reads the labelled time as the bench
    prints it (issue 34 item 1), and the smoke baseline and the run parse it."""
    bench = project / "transpose_bench.cpp"
    text = bench.read_text()
    start = text.index('    std::printf("{\\"kernelopt_bench\\"')
    end = text.index("    return 0;\n}", start)
    bench.write_text(text[:start] + '    std::printf("runs %lld  min= %.3f us  median= %.3f us  '
                     'max= %.3f us\\n", iters, sorted.front() * 1e3, median * 1e3, '
                     "sorted.back() * 1e3);\n" + text[end:])
    done = kernelopt("init", "--yes", cwd=project)
    assert done.returncode == 0, done.stderr
    written = (project / "kernelopt.toml").read_text()
    for line in ('bench_format = "regex"',
                 "bench_regex = '\\bmedian\\s*=\\s*([0-9.]+(?:[eE][-+]?[0-9]+)?)\\s*us\\b'",
                 'bench_unit = "us"'):
        assert line in written, written
    # the bench's own line and clock are the subject, not the verdict: one seed and one screen
    # run a tree, the least search that still reads that line for the baseline
    run = kernelopt("run", ".", "--iterations", "1", "--final-rounds", "2", "--screen-runs", "1",
                    "--seeds", "1", cwd=project)
    assert run.returncode in (0, 1), run.stderr[-2000:]
    assert "baseline:" in run.stderr and "ms (median of" in run.stderr
    from kernelopt_cmake.init import human_time  # the labels a bench may print, read or not
    assert human_time("runtime: 3 ms\ntime: 1 ms").regex.startswith("\\btime\\s*:")
    assert human_time("median: 12.3 μs").unit == "us" and human_time("avg 2 MS").unit == "ms"
    assert human_time("median: .5 ms").value == ".5" and human_time("median 1 ms median 2 ms") is None
