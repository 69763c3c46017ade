"""Graphsignal 1.x without its service: the /signals payload of graphsignal-run's watcher
(tests/fixtures/profilers/graphsignal-signals.json) read into per-kernel records, and the
profiler's wrapped command (graphsignal-run beside a poller that saves that payload) run
against a stand-in graphsignal-run that serves it."""

from __future__ import annotations

import http.server
import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from kernelopt_core.api import cuda_kernel_names
from kernelopt_core.process import run
from kernelopt_core.profiling import parsers
from kernelopt_core.profiling import view as profile_view
from kernelopt_core.profiling.builtin import GRAPHSIGNAL_DONE, GRAPHSIGNAL_PAYLOAD, Graphsignal, poll_signals
from kernelopt_core.target import Command

FIXTURE = Path(__file__).parent / "fixtures" / "profilers" / "graphsignal-signals.json"
REPO = Path(__file__).resolve().parents[1]
FILL = ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
        "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)")


def test_the_signals_payload_gives_each_kernels_launches_and_device_time() -> None:
    kernels = parsers.graphsignal_signals(FIXTURE.read_text())
    # two processes (the bench and a child); row_max ran in both: 3 + 2 launches
    assert [(k.name, k.launches, round(k.total_us, 3)) for k in kernels] == [
        ("softmax_kernel", 6, 1410.66),  # a Triton kernel's name is not mangled
        ("scale_add(float const*, float*, float, unsigned long)", 6, 1375.32),
        ("row_max(float const*, float*, int)", 5, 570.6),
        (FILL, 4, 9.408),
        ("tiny_bias(float*, int)", 3, 6.87),
    ]
    assert [round(k.mean_us, 3) for k in kernels] == [235.11, 229.22, 114.12, 2.352, 2.29]
    assert parsers.graphsignal_activity(FIXTURE.read_text()) == {
        "kernels": 3372.858, "graphs": 0.0, "memcpy": 5400.0, "memset": 42.0, "sync": 4300.0}
    # demangled as ncu names them, so the target's kernels are found by name
    names = cuda_kernel_names(
        {"multikernel.cu": (REPO / "bench/ncu_multikernel/multikernel.cu").read_bytes()})
    profile = profile_view.annotate({"kernels": [k.to_json() for k in kernels]}, names)
    assert [(k["target"], k["share_pct"]) for k in profile["kernels"]] == [
        (False, 41.82), (True, 40.78), (True, 16.92), (False, 0.28), (True, 0.2)]
    assert parsers.demangle("_Zbogus") == "_Zbogus" and parsers.demangle("i") == "i"


def test_the_profiler_runs_without_a_key_and_says_what_to_install(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GRAPHSIGNAL_API_KEY", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert Graphsignal().unavailable_reason() == \
        "graphsignal-run is not on PATH (pip install graphsignal)"
    (tmp_path / "graphsignal-run").write_text("#!/bin/sh\n")
    (tmp_path / "graphsignal-run").chmod(0o755)
    assert Graphsignal().unavailable_reason() is None


def test_the_profiler_reads_the_saved_payload(tmp_path: Path) -> None:
    wrapped = Graphsignal().wrap(Command(("./bench", "--work", "1.0"), tmp_path, {"A": "1"}),
                                 Path("profile"))
    argv = list(wrapped.argv)
    assert argv[:2] == ["sh", "-c"] and "graphsignal-run --listen-port" in argv[2]
    assert "--cuda-graph-trace node" in argv[2]
    assert argv[4] == str(Path("profile").absolute()) and 0 < int(argv[5]) < 65536
    assert argv[6] == sys.executable and argv[7:] == ["./bench", "--work", "1.0"]
    assert wrapped.env == {"A": "1", "GRAPHSIGNAL_DISABLE_VERSION_CHECK": "1"}
    assert Graphsignal().parse(tmp_path) == {
        "error": "graphsignal-run's watcher served no /signals payload"}
    (tmp_path / GRAPHSIGNAL_PAYLOAD).write_bytes(FIXTURE.read_bytes())
    parsed = Graphsignal().parse(tmp_path)
    assert parsed["tool"] == "graphsignal" and parsed["kernels"][0]["mean_us"] == 235.11
    assert parsed["activity_us"]["memcpy"] == 5400.0
    payload = json.loads(FIXTURE.read_text())
    payload["metrics"] = [m for m in payload["metrics"] if "kernels" not in m["name"]]
    (tmp_path / GRAPHSIGNAL_PAYLOAD).write_text(json.dumps(payload))
    assert "CUPTI was not injected" in Graphsignal().parse(tmp_path)["error"]


FAKE_RUN = """#!{python}
# stands in for graphsignal-run: serves {payload} at /signals while the workload runs
import http.server, subprocess, sys, threading, time
args = sys.argv[1:]
flags = {{}}
while args and args[0].startswith("--"):
    flags[args[0]], args = args[1], args[2:]
body = open({payload!r}, "rb").read()
answered = threading.Event()
class Signals(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        answered.set()
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", int(flags["--listen-port"])), Signals)
threading.Thread(target=server.serve_forever, daemon=True).start()
rc = subprocess.call(args)
answered.wait(30)  # as the real watcher serves its last read after the workload: once at least
server.shutdown()
sys.exit(rc)
"""


def test_the_wrapped_bench_keeps_its_exit_status_and_leaves_the_payload(tmp_path: Path) -> None:
    bin_dir, out = tmp_path / "bin", tmp_path / "profile"
    bin_dir.mkdir()
    out.mkdir()
    fake = bin_dir / "graphsignal-run"
    fake.write_text(FAKE_RUN.format(python=sys.executable, payload=str(FIXTURE)))
    fake.chmod(0o755)
    (out / GRAPHSIGNAL_DONE).touch()  # a former run's, removed first
    (out / GRAPHSIGNAL_PAYLOAD).write_text("{}")
    bench = Command(("sh", "-c", "sleep 0.5; exit 7"), tmp_path, timeout_s=60)
    wrapped = Graphsignal().wrap(bench, out)
    result = run(Command(wrapped.argv, tmp_path, {
        **wrapped.env, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}, timeout_s=60))
    assert result.returncode == 7 and result.seconds < 10, result.tail()
    assert (out / GRAPHSIGNAL_DONE).exists() and "/signals payload(s) served" in result.stderr
    assert (out / GRAPHSIGNAL_PAYLOAD).read_bytes() == FIXTURE.read_bytes()


def test_the_poller_keeps_the_last_payload_with_metrics_and_stops(tmp_path: Path) -> None:
    bodies = [FIXTURE.read_bytes(), b'{"metrics": []}', b"not json"]
    answered: list[int] = []
    last_served = threading.Event()  # every body answered once: the bench may end

    class Signals(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = bodies[min(len(answered), len(bodies) - 1)]
            answered.append(1)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            if len(answered) >= len(bodies):
                last_served.set()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Signals)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def finish() -> None:  # the bench exits once the poller has read every body, then the watcher
        last_served.wait(30)
        (tmp_path / GRAPHSIGNAL_DONE).touch()
        server.shutdown()
        server.server_close()

    threading.Thread(target=finish, daemon=True).start()
    assert poll_signals([str(server.server_address[1]), str(tmp_path)]) == 0
    # the payload with metrics is kept: neither the empty one nor the broken one replaced it
    assert (tmp_path / GRAPHSIGNAL_PAYLOAD).read_bytes() == FIXTURE.read_bytes()
    # a watcher that never came up: the poller gives up never_up_s after the bench
    (tmp_path / GRAPHSIGNAL_PAYLOAD).unlink()
    start = time.monotonic()
    assert poll_signals([str(server.server_address[1]), str(tmp_path)], never_up_s=0.2) == 0
    assert time.monotonic() - start >= 0.2 and not (tmp_path / GRAPHSIGNAL_PAYLOAD).exists()


def test_payloads_recorded_on_the_h200_parse() -> None:
    """graphsignal-run 1.1.2 on the H200 (bench/graphsignal_record.sh, 2026-12-01): a torch loop
    (matmul, softmax, add for 6 s) and bench/ncu_multikernel at 6000 steps through
    `kernelopt profile --profiler graphsignal`."""
    torch_loop = parsers.graphsignal_signals(
        (FIXTURE.parent / "graphsignal-signals-h200-torch.json").read_text())
    assert [k.launches for k in torch_loop] == [12819, 12818, 12818, 3]
    assert torch_loop[0].name.startswith("void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128")
    assert torch_loop[0].total_us == pytest.approx(4356347.6, abs=0.1)
    multikernel = parsers.graphsignal_signals(
        (FIXTURE.parent / "graphsignal-signals-h200-multikernel.json").read_text())
    assert [(k.name.split("(")[0], k.launches) for k in multikernel] == [
        ("scale_add", 11651), ("row_max", 5825), ("tiny_bias", 5825)]
    assert multikernel[1].mean_us == pytest.approx(120.09, abs=0.01)
    # the same kernels the ncu capture of this program ranks: scale_add, row_max, tiny_bias
    rows = profile_view.ranking(profile_view.annotate(
        {"kernels": [k.to_json() for k in multikernel]}, {"row_max": "multikernel.cu"}))
    assert rows[1][4] == "multikernel.cu" and rows[0][0].startswith("80.")
