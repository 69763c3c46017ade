"""Time every op of a profiled llama.cpp model's top editable ones at the model's heaviest node,
with the plugin's own pieces and no search (one build for all of them):

1. ``LlamaCppBackend().discover`` with ``--top K --nodes FILE --e2e`` (the selection a campaign
   makes: top.json, each op's case written at its heaviest node, refusals from the source);
2. one copy of the tree whose tests/test-backend-ops.cpp carries every chosen op's written case
   (the harness's patch), built by the plugin's own build commands (test-backend-ops only);
3. per op, the plugin's bench command (``python -m kernelopt_llamacpp.tbo bench``): it pins the
   case that prints the node's values, profiles its launches under ncu (the dispatched kernels,
   kept in the pin) and times it, as a run's baseline does.

Then ``python -m kernelopt_llamacpp.coverage`` reads the pins. Usage (GPU machine):
    python3 bench/llamacpp_time_ops.py --repo TREE --state-root S --nodes NODES [--phase decode]
        --top 10 --out DIR
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from kernelopt_llamacpp import harness
from kernelopt_llamacpp.backend import LlamaCppBackend
from kernelopt_llamacpp.options import LlamaCppOptions

from kernelopt_core.api import Tree
from kernelopt_core.settings import Settings


def run(argv: tuple[str, ...], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int, str]:
    import os

    done = subprocess.run(argv, cwd=cwd, env={**os.environ, **env}, capture_output=True,
                          text=True, timeout=timeout, check=False)
    return done.returncode, done.stdout + done.stderr


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--state-root", type=Path, required=True)
    parser.add_argument("--nodes", required=True)
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--first", default="", help="OP,OP: bench these first (a short call)")
    parser.add_argument("--phase", choices=("prefill", "decode"),
                        help="the phase whose time ranks the ops (default: every phase's)")
    a = parser.parse_args()
    root = a.repo.resolve()
    # planner "agents": an op without knobs (MUL_MAT) is chosen too: timed, not searched
    settings = Settings(state_root=a.state_root, origins={"llamacpp.top": "flag"}, planner="agents",
                        tables={"llamacpp": LlamaCppOptions(e2e=True, top=a.top, nodes=a.nodes,
                                                           phase=a.phase)})
    backend = LlamaCppBackend()
    targets = backend.discover(root, settings)
    print(f"chosen: {[t.name for t in targets]}", flush=True)
    cases = tuple(dict.fromkeys(c for t in targets for c in t.data.written))  # as discover wrote
    patched = harness.patched_source((root / harness.FILE).read_bytes(), cases)
    if patched is None:
        print("the harness cannot patch this test-backend-ops.cpp", file=sys.stderr)
        return 1
    work = a.state_root / "time-ops"
    src, build = work / "src", work / "build"
    if not src.is_dir():
        shutil.copytree(root, src, symlinks=True,
                        ignore=lambda d, names: [n for n in names if n.endswith(".gguf")
                                                 or (Path(d) == root and n.startswith("build"))])
    (src / harness.FILE).write_text(patched, encoding="utf-8")
    tree = Tree("baseline", src, build)
    t0 = time.monotonic()
    for command in backend.build(targets[0], tree):
        code, out = run(command.argv, command.cwd, command.env, command.timeout_s)
        if code != 0:
            print(out[-3000:], file=sys.stderr)
            print(f"build step {command.label or command.argv[0]} exited {code}", file=sys.stderr)
            return 1
    print(f"built test-backend-ops with {len(cases)} written case(s) in "
          f"{time.monotonic() - t0:.0f} s", flush=True)
    results = []
    first = [op for op in a.first.split(",") if op]
    ordered = sorted(targets, key=lambda t: first.index(t.name) if t.name in first else len(first))
    for target in ordered:
        command = backend.bench(target, tree)
        assert command is not None
        t1 = time.monotonic()
        code, out = run(command.argv, command.cwd, command.env, 600)
        line = next((json.loads(x) for x in out.splitlines() if x.startswith('{"kernelopt_bench"')),
                    None)
        results.append({"op": target.name, "match": list(target.data.match or ()), "exit": code,
                        "bench": line, "seconds": round(time.monotonic() - t1, 1)})
        (a.out / f"bench-{target.name}.log").write_text(out[-20000:], encoding="utf-8")
        print(f"{target.name}: exit {code} {line}", flush=True)
        # after each op: a call cut short keeps what was timed
        (a.out / "time-ops.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0 if all(r["exit"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
