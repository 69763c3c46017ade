#!/usr/bin/env bash
# Graphsignal 1.x on the H200 without its service (no API key, no network): the watcher's
# GET /signals payload for the Graphsignal parser's fixture, and the `graphsignal` profiler end
# to end. From the repository root on the GPU machine, graphsignal installed beforehand:
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
#   export PYTHONPATH=/tmp/site; OUT=... bash bench/graphsignal_record.sh
#   1. what is installed: graphsignal's version, its dependencies, the GPU, and whether
#      graphsignal-run can inject CUPTI (graphsignal's own check, GRAPHSIGNAL_DEBUG=1)
#   2. a torch loop (matmul, softmax, add; 6 s) under the profiler's wrapped command
#      (kernelopt_core.profiling.builtin.Graphsignal.wrap): the saved payload is
#      $OUT/graphsignal-signals.json; beside it, once every 0.5 s, what /signals held
#      (timeline.txt) and the in-process writer's raw file (shm-<pid>-cupti.json)
#   3. `kernelopt profile --profiler graphsignal` of bench/ncu_multikernel at 6000 steps
#      (a copy, about 4 s), then as it is (3 steps, well under a second)
# Every step has a time limit; the whole script stops within 120 s. Logs: $OUT/*.out, *.err.
set -uo pipefail
REPO=$(pwd)
OUT=${OUT:-bench/results/out}; mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
START=$SECONDS LIMIT=112
# the repository's kernelopt first (a wheel in /tmp/site may predate it), graphsignal-run on PATH
export PYTHONPATH=$REPO:$REPO/plugins/kernelopt_cmake:/tmp/site${PYTHONPATH:+:$PYTHONPATH}
export PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
unset GRAPHSIGNAL_API_KEY

step() {  # step SECONDS NAME CMD...: CMD under min(SECONDS, time left), output in $OUT/NAME.*
  local limit=$1 name=$2 left; shift 2
  left=$((LIMIT - (SECONDS - START)))
  (( limit > left )) && limit=$left
  if (( limit < 5 )); then echo "== $name: skipped, out of time"; return 0; fi
  echo "== $(date -u +%T) $name (limit ${limit} s)"
  timeout --kill-after=5 "$limit" "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"
  local rc=$?
  echo "   exit $rc$( ((rc == 124)) && echo ' (timed out)')"
  return 0
}

cat > /tmp/gs_versions.py <<'EOF'
import importlib, json, os
from importlib import metadata
for dist in ("graphsignal", "psutil", "requests", "nvidia-ml-py", "prometheus-client", "xxhash",
             "protobuf", "torch", "nvidia-cuda-cupti", "nvidia-cuda-cupti-cu12"):
    try:
        print(f"{dist} {metadata.version(dist)}")
    except metadata.PackageNotFoundError:
        print(f"{dist} missing")
os.environ["GRAPHSIGNAL_DEBUG"] = "1"
from graphsignal.commands.graphsignal_run import _setup_logging
from graphsignal.profilers.cupti_profiler import CuptiProfiler, _detect_cuda_major
_setup_logging()
print("detected CUDA major:", _detect_cuda_major(), "CUDA_VERSION:", os.environ.get("CUDA_VERSION"))
print("CUPTI env set up:", CuptiProfiler.setup_env_vars())
for key in ("CUDA_INJECTION64_PATH", "LD_LIBRARY_PATH"):
    print(f"{key}={os.environ.get(key)}")
EOF

cat > /tmp/gs_workload.py <<'EOF'
import json, sys, time
import torch
seconds = float(sys.argv[1])
a, b = torch.randn(2048, 2048, device="cuda"), torch.randn(2048, 2048, device="cuda")
x = torch.randn(4096, 4096, device="cuda")
torch.cuda.synchronize()
print(json.dumps({"event": "cuda_ready", "t": time.time()}), flush=True)
n, t0 = 0, time.time()
while time.time() - t0 < seconds:
    c = a @ b
    y = torch.softmax(x, dim=-1)
    z = y + 1.0
    n += 1
    if n % 50 == 0:
        torch.cuda.synchronize()
torch.cuda.synchronize()
print(json.dumps({"event": "done", "t": time.time(), "iterations": n, "torch": torch.__version__,
                  "cuda": torch.version.cuda, "device": torch.cuda.get_device_name()}), flush=True)
EOF

cat > /tmp/gs_driver.py <<'EOF'
# The profiler's wrapped command, as kernelopt runs it, with a watch on /signals and /dev/shm.
import glob, json, os, shutil, signal, subprocess, sys, threading, time, urllib.request
from pathlib import Path
from kernelopt_core.profiling.builtin import GRAPHSIGNAL_PAYLOAD, Graphsignal
from kernelopt_core.target import Command
out, work = Path(sys.argv[1]), Path("/tmp/gs-profile")
shutil.rmtree(work, ignore_errors=True)
work.mkdir()
wrapped = Graphsignal().wrap(Command((sys.executable, "/tmp/gs_workload.py", "6"), Path.cwd()), work)
port = wrapped.argv[5]
print("wrapped:", " ".join(wrapped.argv[:3])[:60], "...", " ".join(wrapped.argv[3:]), flush=True)
stop, timeline, shm = threading.Event(), [], {}
start = time.time()

def watch():
    while not stop.is_set():
        row = {"t": round(time.time() - start, 2)}
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/signals", timeout=1) as r:
                p = json.load(r)
            frames = [f for m in p["metrics"] if m["name"] == "cuda_kernels_nanoseconds"
                      for f in m["stats"]["frames"]]
            row.update(metrics=len(p["metrics"]), kernels=len(frames),
                       launches=sum(f["samples"] for f in frames),
                       kernel_ms=round(sum(f["value"] for f in frames) / 1e6, 3))
        except Exception as exc:
            row["error"] = type(exc).__name__
        for path in glob.glob("/dev/shm/graphsignal_[0-9]*/*.json"):
            try:
                shm[path] = Path(path).read_text()
            except OSError:
                pass
        timeline.append(row)
        stop.wait(0.5)

watcher = threading.Thread(target=watch, daemon=True)
watcher.start()
env = {**os.environ, **wrapped.env}
with open(out / "workload.stdout", "wb") as so, open(out / "workload.stderr", "wb") as se:
    proc = subprocess.Popen(wrapped.argv, cwd=wrapped.cwd, env=env, stdout=so, stderr=se,
                            start_new_session=True)  # its own group, as kernelopt runs it

    def kill(*_):  # the step's time limit: take the wrapped command's group along
        os.killpg(proc.pid, signal.SIGKILL)
        sys.exit(124)

    signal.signal(signal.SIGTERM, kill)
    try:
        rc = proc.wait(timeout=35)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        rc = f"killed after 35 s ({proc.wait()})"
stop.set()
watcher.join(timeout=3)
print("wrapped command exit:", rc, "after", round(time.time() - start, 2), "s")
(out / "timeline.txt").write_text("".join(json.dumps(r) + "\n" for r in timeline))
for path, text in shm.items():
    (out / ("shm-" + path.split("graphsignal_")[1].replace("/", "-"))).write_text(text)
if (work / GRAPHSIGNAL_PAYLOAD).exists():
    shutil.copy(work / GRAPHSIGNAL_PAYLOAD, out / GRAPHSIGNAL_PAYLOAD)
parsed = Graphsignal().parse(work)
(out / "parsed.json").write_text(json.dumps(parsed, indent=1))
events = [json.loads(l) for l in (out / "workload.stdout").read_text().splitlines()
          if l.startswith('{"event"')]
print("workload:", events[-1] if events else "no line")
ready = next((e["t"] - start for e in events if e["event"] == "cuda_ready"), None)
first = next((r["t"] for r in timeline if r.get("kernels")), None)
served = next((r["t"] for r in timeline if "metrics" in r), None)
print(f"since launch: /signals first served {served} s, CUDA ready {ready and round(ready, 2)} s, "
      f"first kernels {first} s; last poll {timeline[-1] if timeline else None}")
print("shm files seen:", sorted(shm))
print("activity (us):", parsed.get("activity_us"), parsed.get("error", ""))
iterations = events[-1].get("iterations") if events else None
if iterations:  # matmul, softmax and add: one launch each per iteration, if nothing was lost
    print("launches per iteration:", [round(k["launches"] / iterations, 4)
                                      for k in parsed.get("kernels", [])[:4]])
for k in parsed.get("kernels", [])[:8]:
    print(f"  {k['launches']:>7} launches {k['total_us']:>12.1f} us {k['mean_us']:>9.2f} us/launch  {k['name'][:100]}")
EOF

echo "== $(date -u +%T) versions"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -m pip show graphsignal 2>&1 | head -3
  command -v graphsignal-run && graphsignal-run --version; } > "$OUT/versions.txt" 2>&1
step 20 cupti-check python3 /tmp/gs_versions.py
cat "$OUT/versions.txt" "$OUT/cupti-check.out"; tail -5 "$OUT/cupti-check.err"
if grep -q "CUPTI env set up: False" "$OUT/cupti-check.out"; then
  cuda=$(timeout 30 python3 -c "import torch; print(torch.version.cuda)" 2>/dev/null)
  export CUDA_VERSION=$cuda
  echo "   graphsignal-run finds no CUDA by itself: CUDA_VERSION=$cuda exported for what follows"
  step 20 cupti-check-2 python3 /tmp/gs_versions.py; tail -4 "$OUT/cupti-check-2.out"
fi

step 45 torch python3 /tmp/gs_driver.py "$OUT"
cat "$OUT/torch.out"; tail -5 "$OUT/torch.err"

mk() {  # mk NAME STEPS: bench/ncu_multikernel with STEPS steps, profiled by kernelopt
  local src=/tmp/gs-$1; rm -rf "$src" "/tmp/gs-kstate-$1"; cp -r bench/ncu_multikernel "$src"
  sed -i "s/step < 3;/step < $2;/" "$src/multikernel.cu"
  step 45 "kernelopt-$1" python3 -c "from kernelopt_core.cli import main; main()" profile "$src" \
    --profiler graphsignal --state-root "/tmp/gs-kstate-$1"
  tail -12 "$OUT/kernelopt-$1.out"; tail -5 "$OUT/kernelopt-$1.err"
  cp -r "/tmp/gs-kstate-$1/profiles" "$OUT/kernelopt-$1-profiles" 2>/dev/null
}
mk long 6000
mk short 3
echo "== $(date -u +%T) done in $((SECONDS - START)) s; files: $(ls "$OUT" | tr '\n' ' ')"
