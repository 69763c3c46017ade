"""Test helpers for kernelopt and for third-party plugin authors.

A pytest plugin (entry point ``pytest11``, installed with kernelopt): the fixtures below are
there in any test run, no conftest line needed.

* ``plugin_host(*plugins)`` / fixture ``kernelopt_host``: a fresh plugin host (no autoload
  unless asked) with extra in-process plugins registered, as a run would see them.
* ``write_chunk_project(root)`` / fixture ``chunk_project``: a tiny real project — a Python
  "kernel" whose ``CHUNK`` knob changes its cost — with a real build step, a seeded
  correctness test, a bench printing kernelopt's JSON line, and a kernelopt.toml for the cmake
  backend (``build.commands`` form, so no compiler is needed). Its bench reads the
  deterministic ``COUNTED_CLOCK`` (operations counted, not timed), so a verdict over it does
  not depend on the machine's load.
* ``ScriptedBackend``: a backend plugin over the same project, for tests that want a backend
  without any descriptor.
* ``git_repo(path)``: make ``path`` a git repository with a commit, a staged change, an
  unstaged change and a stash, to prove that nothing of the user's is ever written.
* ``run_kernelopt(*args, cwd=...)``: the real ``kernelopt`` CLI in a child process, as a user
  runs it (every installed plugin loaded from its entry point); ``last_summary(state_root)``:
  the newest run's summary.json.
* ``settings_with(*options)``: a ``Settings`` holding plugins' option objects, as a run would
  hand them to a plugin (``settings.section(MyOptions)``).
* ``ScriptedLLMServer``: a real OpenAI-compatible HTTP server replaying scripted replies.

Install it with ``pip install kernelopt[testing]`` (pytest).
"""

from __future__ import annotations

import hashlib
import http.server
import json as _json
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kernelopt_core import process
from kernelopt_core.hookspecs import hookimpl
from kernelopt_core.plugins import PluginHost
from kernelopt_core.settings import Settings
from kernelopt_core.target import BenchSpec, Command, Knob, Target, Tree

KERNEL = '''"""A Python 'kernel': the sum of a list, walked CHUNK items at a time."""
CHUNK = {chunk}


def total(xs):
    acc = 0.0
    for start in range(0, len(xs), CHUNK):
        acc += sum(xs[start:start + CHUNK])
    return acc
'''

CHECK = '''import argparse, importlib.util, math, random, sys
parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, required=True)
parser.add_argument("--build", required=True)
args = parser.parse_args()
spec = importlib.util.spec_from_file_location("kernel", args.build + "/kernel.py")
kernel = importlib.util.module_from_spec(spec); spec.loader.exec_module(kernel)
rng = random.Random(args.seed)
for n in (1, 7, 1000, 20000):  # 20000 is the benched shape
    xs = [rng.uniform(-1.0, 1.0) for _ in range(n)]
    want = math.fsum(xs)
    got = kernel.total(list(xs))
    if not math.isfinite(got) or abs(got - want) > 1e-9 * max(1.0, math.fsum(abs(x) for x in xs)):
        print(f"mismatch at n={n}: want {want!r} got {got!r}", file=sys.stderr)
        sys.exit(1)
print("ok")
'''

# A deterministic clock for the test kernels: 1 µs for every trace event of the kernel's run
# (each Python call, line and return, each builtin call), plus 10 ns an input item.
# Counted, not timed: the loop, its gates and verdicts are what these projects test, and
# machine load must not flip a verdict (on the 2-core CI a wall clock did, once in a few
# runs). Noise handling (A/A floors, retaken rounds) is proven with real clocks: the CPU
# example's tests and the H200 runs. Embedded as source in the scripts the projects run
# (they import nothing of ours).
COUNTED_CLOCK = '''def counted_ms(fn, *args):
    import sys
    events = [0]
    def trace(frame, event, arg):
        events[0] += 1
        return trace
    def profile(frame, event, arg):
        if event == "c_call":
            events[0] += 1
    sys.settrace(trace); sys.setprofile(profile)
    try:
        result = fn(*args)
    finally:
        sys.settrace(None); sys.setprofile(None)
    items = len(args[0]) if args and hasattr(args[0], "__len__") else 0
    return events[0] * 1e-3 + items * 1e-5, result
'''

BENCH = COUNTED_CLOCK + '''import importlib.util, json, random, sys
build = sys.argv[1]
work = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0  # gate self-test: do less work
spec = importlib.util.spec_from_file_location("kernel", build + "/kernel.py")
kernel = importlib.util.module_from_spec(spec); spec.loader.exec_module(kernel)
xs = [random.Random(0).uniform(-1, 1) for _ in range(20000)]
timed = xs[:max(1, round(work * len(xs)))]
time_ms, _ = counted_ms(kernel.total, list(timed))
checksum = kernel.total(xs)  # a verification call on the timed shape
print(json.dumps({"kernelopt_bench": 1, "time_ms": time_ms,
                  "shape": "f64[20000]", "bytes": 160000, "checksum": checksum}))
'''

# `python -S`: the project's scripts need only the standard library, and skipping `site` (its
# .pth files, editable installs' finders) saves ~0.1 s a process, ~20 processes a run
TOML = '''backend = "cmake"

[build]
commands = ["{python} -S -c \\"import shutil, sys; shutil.copy(sys.argv[1], sys.argv[2])\\" {{repo}}/kernel.py {{build}}/kernel.py"]

[[target]]
name = "chunk-sum"
editable = ["kernel.py"]
contract = ["check.py", "bench.py"]
test = "{python} -S {{repo}}/check.py --seed {{seed}} --build {{build}}"
bench = "{python} -S {{repo}}/bench.py {{build}} {{work}}"
shape = "f64[20000]"
bytes = 160000

[[target.knobs]]
name = "CHUNK"
values = [1, 2, 4, 8, 16, 32, 64, 128, 256]
pattern = "^CHUNK = (\\\\d+)$"
'''

CHUNK_VALUES = ("1", "2", "4", "8", "16", "32", "64", "128", "256")


def write_chunk_project(root: Path, *, chunk: int = 1, toml_extra: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "kernel.py").write_text(KERNEL.format(chunk=chunk))
    (root / "check.py").write_text(CHECK)
    (root / "bench.py").write_text(BENCH)
    (root / "kernelopt.toml").write_text(TOML.format(python=sys.executable) + toml_extra)
    return root


class ScriptedBackend:
    """A backend over a chunk project, with no descriptor: everything is in code."""

    name = "scripted"

    def detect(self, path: Path) -> float:
        return 0.3 if (path / "kernel.py").is_file() and (path / "bench.py").is_file() else 0.0

    def discover(self, path: Path, settings: Settings) -> list[Target]:
        knob = Knob("CHUNK", "kernel.py", CHUNK_VALUES, r"^CHUNK = (\d+)$")
        return [Target(self.name, "chunk-sum", path.resolve(), ("kernel.py",), knobs=(knob,),
                       shape="f64[20000]", bytes_moved=160000, bench=BenchSpec())]

    def build(self, target: Target, tree: Tree) -> list[Command]:
        code = "import shutil, sys; shutil.copy(sys.argv[1], sys.argv[2])"
        return [Command((sys.executable, "-S", "-c", code, str(tree.src / "kernel.py"),
                         str(tree.build / "kernel.py")), tree.src, timeout_s=60)]

    def check(self, target: Target, tree: Tree, seed: int) -> Command:
        return Command((sys.executable, "-S", str(tree.src / "check.py"), "--seed", str(seed),
                        "--build", str(tree.build)), tree.src, timeout_s=60)

    def bench(self, target: Target, tree: Tree) -> Command | None:
        return Command((sys.executable, "-S", str(tree.src / "bench.py"), str(tree.build)), tree.src,
                       timeout_s=60)

    def engine(self, target: Target, tree: Tree) -> Command | None:
        return None


class ScriptedBackendPlugin:
    @hookimpl
    def kernelopt_register_backends(self) -> list[object]:
        return [ScriptedBackend()]


def plugin_host(*plugins: object, autoload: bool = False) -> PluginHost:
    extra = [(f"test-plugin-{i}", p) for i, p in enumerate(plugins)]
    return PluginHost(autoload=autoload, disabled=(), strict=False, extra=extra)


def run_kernelopt(*args: str | Path, cwd: Path, env: dict[str, str] | None = None,
                  timeout_s: float = 600.0) -> process.ProcessResult:
    """``kernelopt ARGS`` in a child process of this interpreter, from ``cwd`` (runs land in
    ``cwd/.kernelopt`` unless ``--state-root`` is given; ``KERNELOPT_HOME`` is ignored)."""
    argv = (sys.executable, "-m", "kernelopt_core.cli", *(str(a) for a in args))
    return process.run(Command(argv, Path(cwd), env={"KERNELOPT_HOME": "", **(env or {})},
                               timeout_s=timeout_s, label="kernelopt (test)"))


def last_summary(state_root: Path) -> dict[str, Any]:
    """The summary.json of the newest run under ``state_root`` (e.g. ``project/.kernelopt``)."""
    runs = sorted((Path(state_root) / "runs").glob("*/summary.json"))
    if not runs:
        raise AssertionError(f"no finished run under {state_root}")
    return dict(_json.loads(runs[-1].read_text()))


def settings_with(*options: object, **values: Any) -> Settings:
    """Default settings holding these plugins' option objects (``option_table`` classes);
    ``values`` by flat name, as ``Settings.make`` takes them (``seeds=(1,), final_rounds=2``)."""
    from kernelopt_core.options import table_name

    return Settings.make(tables={table_name(type(o)): o for o in options}, **values)


def _git(cwd: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    result = process.run(Command(("git", *args), cwd, env=env, timeout_s=60))
    if not result.ok:
        raise RuntimeError(f"{result.describe()}: {result.tail()}")
    return result.stdout


def git_repo(path: Path) -> Path:
    """Commit everything, then leave a stash, a staged and an unstaged change behind."""
    _git(path, "init", "-q")
    _git(path, "add", "-A")
    _git(path, "commit", "-q", "-m", "initial")
    (path / "NOTES.txt").write_text("stashed\n")
    _git(path, "add", "NOTES.txt")
    _git(path, "stash", "-q")
    (path / "staged.txt").write_text("staged\n")
    _git(path, "add", "staged.txt")
    with open(path / "kernel.py", "a") as fh:  # an uncommitted edit the baseline must include
        fh.write("\n# uncommitted note\n")
    return path


def fingerprint(path: Path) -> dict[str, str]:
    """Every file under ``path`` (the .git directory included) by content hash."""
    out = {}
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            full = Path(dirpath) / name
            rel = full.relative_to(path).as_posix()
            if rel.startswith(".kernelopt/"):
                continue
            out[rel] = hashlib.sha256(full.read_bytes()).hexdigest()
    return out


@pytest.fixture
def kernelopt_host() -> PluginHost:
    return plugin_host(ScriptedBackendPlugin())


@pytest.fixture
def chunk_project(tmp_path: Path) -> Iterator[Path]:
    yield write_chunk_project(tmp_path / "project")


# --------------------------------------------------------------------------- scripted LLM

class ScriptedLLMServer:
    """A real OpenAI-compatible HTTP server on 127.0.0.1 that replays scripted replies.

    ``script`` maps an agent role (planner, editor, summarizer, or other: a request naming no
    agent, e.g. ``kernelopt init``'s provider check — recognised from the system
    or first message) to a list of steps, consumed in order. A step is one of:
    ``{"message": {...}}`` (a 200 reply with that assistant message), ``{"status": 429,
    "headers": {...}}`` (an error reply), ``{"sleep": 2.0, "then": step}`` (answer late).
    Every request is kept in ``requests`` (path, headers, JSON body) for assertions.
    """

    def __init__(self, script: dict[str, list[dict]]) -> None:
        unknown = set(script) - {"planner", "editor", "summarizer", "other"}
        if unknown:  # a role no request is recognised as would be answered with nothing
            raise ValueError(f"ScriptedLLMServer: unknown role(s) {sorted(unknown)}; the roles "
                             "are planner, editor (called executor before 2026-12-04), "
                             "summarizer and other")
        self.script = {role: list(steps) for role, steps in script.items()}
        self.requests: list[dict] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = _json.loads(self.rfile.read(length) or b"{}")
                server.requests.append({"path": self.path, "headers": dict(self.headers),
                                        "json": body})
                step = server._next(body)
                while "sleep" in step:
                    time.sleep(step["sleep"])
                    step = step.get("then", {"message": {"role": "assistant", "content": ""}})
                if "status" in step:
                    self.send_response(step["status"])
                    for key, value in step.get("headers", {}).items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(step.get("body", "scripted error").encode())
                    return
                payload = {
                    "id": "scripted", "object": "chat.completion", "model": body.get("model"),
                    "choices": [{"index": 0, "message": step["message"],
                                 "finish_reason": "tool_calls" if step["message"].get(
                                     "tool_calls") else "stop"}],
                    "usage": {"prompt_tokens": len(_json.dumps(body)) // 4,
                              "completion_tokens": len(_json.dumps(step["message"])) // 4},
                }
                data = _json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @staticmethod
    def role_of(body: dict) -> str:
        first = (body.get("messages") or [{}])[0].get("content") or ""
        for role in ("planner", "editor", "summarizer"):
            if f"You are the {role.capitalize()}" in first:
                return role
        return "other"

    def _next(self, body: dict) -> dict:
        steps = self.script.get(self.role_of(body)) or []
        if not steps:
            return {"message": {"role": "assistant", "content": ""}}
        return steps.pop(0)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> ScriptedLLMServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def tool_call(name: str, call_id: str | None = None, **arguments: object) -> dict:
    """A scripted assistant message calling one tool."""
    return {"message": {"role": "assistant", "content": None, "tool_calls": [{
        "id": call_id or f"call_{name}", "type": "function",
        "function": {"name": name, "arguments": _json.dumps(arguments)}}]}}


def say(text: str) -> dict:
    """A scripted assistant message with text and no tool call."""
    return {"message": {"role": "assistant", "content": text}}
