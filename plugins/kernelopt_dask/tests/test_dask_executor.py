"""The ``dask`` executor against real Dask clusters on this host: the local cluster it starts
itself (one worker process per GPU slot), and a cluster started with the `dask scheduler` /
`dask worker` commands docs/scaling.md gives, as the "remote" scheduler.

Jobs are small Python children that record what they saw (CUDA_VISIBLE_DEVICES, pid, parent
pid, start and end) in files; the tests wait for those files, never for a sleep. No GPU is
needed: the slots are names, and what is checked is the environment each child was given.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import pytest
from kernelopt_dask.executor import DaskExecutor
from kernelopt_dask.options import DaskOptions

from kernelopt_core.api import EXIT_INTERNAL, Job, JobResult, Settings, UsageError

# what every job runs: argv = [out_dir, name, mode]
JOB = r'''
import json, os, sys, time
from pathlib import Path
out, name, mode = Path(sys.argv[1]), sys.argv[2], sys.argv[3]

def write(path, data):  # whole or absent: the test never reads half a file
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)

attempt = len(list(out.glob(name + ".started.*"))) + 1
info = {"gpu": os.environ.get("CUDA_VISIBLE_DEVICES"), "pid": os.getpid(),
        "parent": os.getppid(), "start": time.monotonic()}
write(out / f"{name}.started.{attempt}", info)
if mode == "fail":
    print("failing on purpose", file=sys.stderr)
    sys.exit(3)
if mode == "hang":
    time.sleep(300)  # until the test kills it; the sleep is only a safety net
if mode == "hang-first" and attempt == 1:
    # a `kernelopt run` spawns its builds and benches through the core: so does this one
    from kernelopt_core.api import Command, run_process
    grandchild = ("import json, os, sys, time; from pathlib import Path; p = Path(sys.argv[1]); "
                  "t = p.with_name(p.name + '.tmp'); t.write_text(json.dumps({'pid': os.getpid()})); "
                  "os.replace(t, p); time.sleep(300)")
    run_process(Command((sys.executable, "-c", grandchild, str(out / f"{name}.grandchild")),
                        out, timeout_s=600))
if mode == "hold":  # until the test releases it; the deadline only ends a broken test
    deadline = time.monotonic() + 120
    while not (out / f"{name}.release").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
time.sleep(0.2 if mode == "sleep" else 0)
info["end"] = time.monotonic()
write(out / f"{name}.done.{attempt}", info)
print(f"{name} done on {info['gpu']}")
'''

SAFETY_S = 60.0  # waits that only end a broken test; never the condition under test


def job(out: Path, name: str, mode: str = "sleep") -> Job:
    return Job(name, (sys.executable, "-c", JOB, str(out), name, mode), str(out), timeout_s=120)


def read(path: Path) -> dict:
    return json.loads(path.read_text())


def wait_for(path: Path) -> dict:
    """The file's JSON once it is whole (`dask scheduler` writes its file in place)."""
    deadline = time.monotonic() + SAFETY_S
    while True:
        try:
            return read(path)
        except (FileNotFoundError, ValueError):
            assert time.monotonic() < deadline, f"{path.name} never appeared whole"
            time.sleep(0.02)


def running(pid: int) -> bool:
    """Alive and not a zombie (a zombie holds no GPU; reaping it is its new parent's job)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_gone(*pids: int) -> None:
    deadline = time.monotonic() + SAFETY_S
    while any(running(p) for p in pids):
        assert time.monotonic() < deadline, f"still running: {[p for p in pids if running(p)]}"
        time.sleep(0.05)


def collect(executor: DaskExecutor, jobs: list[Job], gpus: list[str], log_dir: Path,
            on_each: object = None) -> list[JobResult]:
    results: list[JobResult] = []

    def on_result(result: JobResult) -> None:
        results.append(result)
        if callable(on_each):
            on_each(result)

    executor.run(jobs, gpus, on_result, log_dir)
    return results


def assert_no_overlap(out: Path) -> None:
    """Never two jobs on one slot at once: each slot's recorded intervals are disjoint."""
    by_gpu: dict[str, list[tuple[float, float]]] = {}
    for done in out.glob("*.done.*"):
        info = read(done)
        by_gpu.setdefault(info["gpu"], []).append((info["start"], info["end"]))
    for gpu, spans in by_gpu.items():
        spans.sort()
        for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
            assert end <= start, f"two jobs at once on GPU slot {gpu}: {spans}"


@pytest.fixture
def out(tmp_path: Path) -> Path:
    path = tmp_path / "out"
    path.mkdir()
    return path


# --------------------------------------------------------------------------- local cluster


@pytest.mark.slow
def test_local_jobs_each_see_their_workers_slot_one_at_a_time(out: Path, tmp_path: Path) -> None:
    jobs = [job(out, f"j{i}") for i in range(6)]
    results = collect(DaskExecutor(), jobs, ["0", "1"], tmp_path / "logs")

    assert sorted(r.key for r in results) == sorted(j.key for j in jobs)  # each once
    for r in results:
        (done,) = out.glob(f"{r.key}.done.*")  # ran once, to its end
        assert r.returncode == 0 and r.attempts == 1, r
        assert read(done)["gpu"] == r.gpu and r.worker == f"gpu-{r.gpu}", r
        assert f"{r.key} done on {r.gpu}" in r.output_tail
    assert {r.gpu for r in results} == {"0", "1"}
    assert_no_overlap(out)
    assert (tmp_path / "logs" / "j0.log").exists()


@pytest.mark.slow
def test_local_failing_jobs_return_their_codes(out: Path, tmp_path: Path) -> None:
    jobs = [job(out, "bad", "fail"), job(out, "good"),
            Job("missing", ("/nonexistent/kernelopt",), str(out))]
    results = {r.key: r for r in collect(DaskExecutor(), jobs, ["0", "1"], tmp_path / "logs")}

    assert sorted(results) == ["bad", "good", "missing"]
    assert results["bad"].returncode == 3 and "failing on purpose" in results["bad"].output_tail
    assert results["good"].returncode == 0
    assert results["missing"].returncode == 127
    assert "program not found" in results["missing"].output_tail


@pytest.mark.slow
def test_local_killed_worker_reruns_the_job_and_takes_its_children_along(
        out: Path, tmp_path: Path) -> None:
    victim = job(out, "victim", "hang-first")
    killed: dict[str, int] = {}

    def kill_the_worker() -> None:
        grandchild = wait_for(out / "victim.grandchild")["pid"]
        child = read(out / "victim.started.1")
        killed.update(child=child["pid"], grandchild=grandchild, worker=child["parent"])
        os.kill(child["parent"], signal.SIGKILL)  # the Dask worker process running the job

    killer = threading.Thread(target=kill_the_worker)
    killer.start()
    results = collect(DaskExecutor(), [victim, job(out, "other")], ["0", "1"],
                      tmp_path / "logs")
    killer.join()

    by_key = {r.key: r for r in results}
    assert sorted(by_key) == ["other", "victim"]  # each once
    r = by_key["victim"]
    assert r.returncode == 0 and r.attempts == 2, r
    assert read(out / "victim.done.2")["gpu"] == r.gpu and r.worker == f"gpu-{r.gpu}"
    assert read(out / "victim.done.2")["parent"] != killed["worker"]
    wait_gone(killed["child"], killed["grandchild"])  # no orphan left on the GPU
    assert_no_overlap(out)


@pytest.mark.slow
def test_local_job_out_of_allowed_failures_is_a_failed_result(out: Path, tmp_path: Path) -> None:
    import dask
    import distributed  # noqa: F401  its config defaults in place before dask.config.set:
    # set() deletes on exit every key absent at entry, so importing distributed inside the
    # block would leave this worker process's config without "distributed" (a later test in
    # the same xdist worker then failed with KeyError: 'distributed')

    def kill_the_worker() -> None:
        wait_for(out / "victim.grandchild")
        os.kill(read(out / "victim.started.1")["parent"], signal.SIGKILL)

    killer = threading.Thread(target=kill_the_worker)
    killer.start()
    # the local cluster's scheduler is in this process: Dask's config here is its config
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        results = collect(DaskExecutor(), [job(out, "victim", "hang-first")], ["0", "1"],
                          tmp_path / "logs")
    killer.join()

    (r,) = results
    assert r.returncode == EXIT_INTERNAL and r.attempts == 1, r
    assert "KilledWorker" in r.output_tail
    assert not list(out.glob("victim.started.2"))


@pytest.mark.slow
def test_local_interrupt_stops_the_running_jobs(out: Path, tmp_path: Path) -> None:
    def interrupt(_result: JobResult) -> None:
        wait_for(out / "hang.started.1")  # the other job is running now
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        collect(DaskExecutor(), [job(out, "quick"), job(out, "hang", "hang")], ["0", "1"],
                tmp_path / "logs", on_each=interrupt)
    wait_gone(read(out / "hang.started.1")["pid"])
    assert not list(out.glob("hang.done.*"))


def test_no_gpu_slot_is_a_usage_error(out: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no GPU slot"):
        DaskExecutor().run([job(out, "a")], [], lambda r: None, tmp_path / "logs")


# --------------------------------------------------------------------------- remote scheduler


def dask_cli() -> str:
    beside = Path(sys.executable).parent / "dask"  # the environment's own, not a shim
    return str(beside) if beside.exists() else "dask"


@attrs.define
class Remote:
    address: str
    workers: dict[str, subprocess.Popen[bytes]]  # name -> `dask worker` (its own group)


def start_worker(address: str, name: str, gpu: str, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": gpu}
    with open(log, "wb") as fh:
        return subprocess.Popen(
            [dask_cli(), "worker", address, "--nthreads", "1", "--resources", "GPU=1",
             "--name", name, "--no-dashboard", "--host", "127.0.0.1"],
            env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)


@contextlib.contextmanager
def dask_cluster(tmp_path: Path, gpus: tuple[str, ...]) -> Iterator[Remote]:
    """`dask scheduler` and a `dask worker` per GPU slot, as on a real cluster."""
    info = tmp_path / "scheduler.json"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with open(tmp_path / "scheduler.log", "wb") as fh:
            procs.append(subprocess.Popen(
                [dask_cli(), "scheduler", "--host", "127.0.0.1", "--port", "0",
                 "--no-dashboard", "--scheduler-file", str(info)],
                stdout=fh, stderr=subprocess.STDOUT, start_new_session=True))
        address = wait_for(info)["address"]
        workers = {f"w{gpu}": start_worker(address, f"w{gpu}", gpu, tmp_path / f"w{gpu}.log")
                   for gpu in gpus}
        procs += workers.values()
        from distributed import Client

        with Client(address, timeout=SAFETY_S) as client:  # every test starts from all of them
            client.wait_for_workers(len(gpus), timeout=SAFETY_S)
        yield Remote(address, workers)
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture
def remote(tmp_path: Path) -> Iterator[Remote]:
    """Two workers, GPU slots 0 and 1."""
    with dask_cluster(tmp_path, ("0", "1")) as cluster:
        yield cluster


@pytest.mark.slow
def test_jobs_start_in_the_campaigns_order_each_on_the_next_free_gpu(
        remote: Remote, out: Path, tmp_path: Path) -> None:
    """Two GPU workers, the first job holding one until the other five are done: those five
    run on the other GPU one after another in the order given (the campaign's priority),
    none waits behind the held one. (Dask alone hands every task to a worker at submission,
    in an order of its own: on an H200 a one-worker campaign ran its targets 1, 4, 3, 2.)"""
    jobs = [job(out, "p0", "hold")] + [job(out, f"p{i}", "instant") for i in range(1, 6)]
    failed: list[BaseException] = []

    def release_when_the_rest_are_done() -> None:
        try:
            for j in jobs[1:]:
                wait_for(out / f"{j.key}.done.1")
        except BaseException as exc:  # the test fails below, not in this thread
            failed.append(exc)
        finally:
            (out / "p0.release").touch()

    releaser = threading.Thread(target=release_when_the_rest_are_done)
    releaser.start()
    results = collect(DaskExecutor(DaskOptions(scheduler=remote.address)), jobs, ["ignored"],
                      tmp_path / "logs")
    releaser.join()

    assert not failed, f"the other jobs did not all end while p0 held its GPU: {failed}"
    assert sorted(r.key for r in results) == sorted(j.key for j in jobs)
    rest = [read(out / f"{j.key}.done.1") for j in jobs[1:]]
    assert len({info["gpu"] for info in rest}) == 1  # all on the GPU p0 did not hold
    assert read(out / "p0.done.1")["gpu"] != rest[0]["gpu"]
    assert [info["start"] for info in rest] == sorted(info["start"] for info in rest)
    assert_no_overlap(out)


def collect_while(cluster: Remote, jobs: list[Job], tmp_path: Path,
                  meanwhile: Callable[[list[subprocess.Popen[bytes]]], None],
                  on_each: Callable[[JobResult], None], release: Callable[[], None]
                  ) -> list[JobResult]:
    """The jobs on ``cluster`` while ``meanwhile(started)`` changes the cluster in a thread
    (the `dask worker`s it adds to ``started`` are killed after). An error there fails the
    test after the campaign, whose held jobs ``release`` lets go so that it ends."""
    started: list[subprocess.Popen[bytes]] = []
    failed: list[BaseException] = []

    def side() -> None:
        try:
            meanwhile(started)
        except BaseException as exc:
            failed.append(exc)
            release()

    thread = threading.Thread(target=side)
    thread.start()
    try:
        results = collect(DaskExecutor(DaskOptions(scheduler=cluster.address)), jobs,
                          ["ignored"], tmp_path / "logs", on_each=on_each)
    finally:
        thread.join()
        for proc in started:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert not failed, failed
    return results


@pytest.mark.slow
def test_a_worker_whose_setup_fails_is_given_no_more_jobs(out: Path, tmp_path: Path) -> None:
    """A worker without a GPU of its own (CUDA_VISIBLE_DEVICES empty) joins while the good
    one's first job holds its GPU: it fails the one job it is given, and every later job goes
    to the good one (an always-free broken worker would otherwise take most of the campaign).
    The held job is released only once that failure has been reported."""
    jobs = [job(out, f"s{i}", "hold") for i in range(6)]

    def release_all() -> None:
        for j in jobs:
            (out / f"{j.key}.release").touch()

    with dask_cluster(tmp_path, ("0",)) as cluster:
        def join_when_s0_holds_the_gpu(started: list[subprocess.Popen[bytes]]) -> None:
            wait_for(out / "s0.started.1")
            started.append(start_worker(cluster.address, "wbroken", "", tmp_path / "wb.log"))

        results = collect_while(
            cluster, jobs, tmp_path, join_when_s0_holds_the_gpu, release=release_all,
            on_each=lambda r: release_all() if r.returncode == EXIT_INTERNAL else None)

    failed = [r for r in results if r.returncode != 0]
    assert [r.key for r in failed] == ["s1"], results
    assert "worker wbroken has CUDA_VISIBLE_DEVICES=''" in failed[0].output_tail
    ran = [read(done) for done in out.glob("*.done.*")]
    assert len(ran) == 5 and {info["gpu"] for info in ran} == {"0"}


@pytest.mark.slow
def test_a_pinned_job_whose_workers_are_all_gone_is_pinned_afresh(
        out: Path, tmp_path: Path) -> None:
    """After a setup failure later jobs are pinned to the good workers. When the only one a
    job was pinned to dies mid-job, Dask's rerun could never run (a restarted worker has a
    new address): the campaign takes the job back and pins it to the worker that has joined
    since, where it runs again."""
    jobs = [job(out, "s0", "hold"), job(out, "s1"), job(out, "s2", "hang-first"),
            job(out, "s3"), job(out, "s4")]

    def release_s0() -> None:
        (out / "s0.release").touch()

    with dask_cluster(tmp_path, ("0",)) as cluster:
        def break_and_replace(started: list[subprocess.Popen[bytes]]) -> None:
            from distributed import Client

            wait_for(out / "s0.started.1")
            started.append(start_worker(cluster.address, "wbroken", "", tmp_path / "wb.log"))
            wait_for(out / "s2.started.1")  # pinned to w0, holding its GPU
            started.append(start_worker(cluster.address, "w2", "2", tmp_path / "w2.log"))
            with Client(cluster.address, timeout=SAFETY_S) as watcher:
                watcher.wait_for_workers(3, timeout=SAFETY_S)
            os.killpg(cluster.workers["w0"].pid, signal.SIGKILL)

        results = collect_while(  # s1, on the broken worker, fails: then s0 may end
            cluster, jobs, tmp_path, break_and_replace, release=release_s0,
            on_each=lambda r: release_s0() if r.returncode == EXIT_INTERNAL else None)

    by_key = {r.key: r for r in results}
    assert sorted(by_key) == ["s0", "s1", "s2", "s3", "s4"]
    assert by_key["s1"].returncode == EXIT_INTERNAL and "wbroken" in by_key["s1"].output_tail
    assert all(by_key[k].returncode == 0 for k in ("s0", "s2", "s3", "s4")), results
    assert read(out / "s2.done.2")["gpu"] == "2"  # run again, on the worker that joined
    assert by_key["s2"].gpu == "2"


@pytest.mark.slow
def test_remote_lost_worker_host_job_runs_again_on_the_other(
        remote: Remote, out: Path, tmp_path: Path) -> None:
    executor = DaskExecutor(DaskOptions(scheduler=remote.address))
    killed: dict[str, int] = {}

    def kill_the_host() -> None:
        grandchild = wait_for(out / "victim.grandchild")["pid"]
        child = read(out / "victim.started.1")
        name = "w" + child["gpu"]
        killed.update(child=child["pid"], grandchild=grandchild)
        # the whole `dask worker` (nanny and worker process) at once, as a lost host: the
        # job's child is in its own session, so only its parent's death can take it along
        os.killpg(remote.workers[name].pid, signal.SIGKILL)
        killed["lost_gpu"] = int(child["gpu"])

    killer = threading.Thread(target=kill_the_host)
    killer.start()
    results = collect(executor, [job(out, "victim", "hang-first"), job(out, "a"), job(out, "b")],
                      ["ignored"], tmp_path / "logs")
    killer.join()

    by_key = {r.key: r for r in results}
    assert sorted(by_key) == ["a", "b", "victim"]
    r = by_key["victim"]
    assert r.returncode == 0 and r.attempts == 2, r
    assert r.gpu == str(1 - killed["lost_gpu"]) and r.worker == f"w{r.gpu}"  # the other one
    assert read(out / "victim.done.2")["gpu"] == r.gpu
    wait_gone(killed["child"], killed["grandchild"])
    assert_no_overlap(out)


@pytest.mark.slow
def test_remote_interrupt_restarts_the_workers_running_ours(
        remote: Remote, out: Path, tmp_path: Path) -> None:
    def interrupt(_result: JobResult) -> None:
        wait_for(out / "hang.started.1")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        collect(DaskExecutor(DaskOptions(scheduler=remote.address)),
                [job(out, "quick"), job(out, "hang", "hang")], [], tmp_path / "logs",
                on_each=interrupt)
    wait_gone(read(out / "hang.started.1")["pid"])  # a remote task cannot be cancelled in place
    assert all(w.poll() is None for w in remote.workers.values())  # restarted, not stopped


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_scheduler_is_a_usage_error(out: Path, tmp_path: Path) -> None:
    executor = DaskExecutor(DaskOptions(scheduler=f"tcp://127.0.0.1:{free_port()}",
                                        worker_wait_s=2))
    with pytest.raises(UsageError, match="cannot reach the Dask scheduler") as caught:
        executor.run([job(out, "a")], [], lambda r: None, tmp_path / "logs")
    assert "dask scheduler" in str(caught.value)


def test_bad_scheduler_address_is_a_usage_error(out: Path, tmp_path: Path) -> None:
    executor = DaskExecutor(DaskOptions(scheduler="nosuch://head:8786", worker_wait_s=2))
    with pytest.raises(UsageError, match="not a Dask address"):
        executor.run([job(out, "a")], [], lambda r: None, tmp_path / "logs")


def test_scheduler_without_a_gpu_worker_is_a_usage_error(out: Path, tmp_path: Path) -> None:
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, processes=False, dashboard_address=None) as cluster:
        executor = DaskExecutor(DaskOptions(scheduler=cluster.scheduler_address, worker_wait_s=1))
        with pytest.raises(UsageError, match="offers the resource GPU") as caught:
            executor.run([job(out, "a")], [], lambda r: None, tmp_path / "logs")
    assert "--resources GPU=1" in str(caught.value)


def test_worker_without_its_own_gpu_fails_the_job_not_the_campaign(
        out: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from distributed import LocalCluster

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)  # an in-process worker: ours
    with LocalCluster(n_workers=1, processes=False, threads_per_worker=1,
                      resources={"GPU": 1}, dashboard_address=None) as cluster:
        executor = DaskExecutor(DaskOptions(scheduler=cluster.scheduler_address))
        results = collect(executor, [job(out, "a"), job(out, "b")], [], tmp_path / "logs")
    assert sorted(r.key for r in results) == ["a", "b"]
    for r in results:
        assert r.returncode == EXIT_INTERNAL and "CUDA_VISIBLE_DEVICES" in r.output_tail, r
    assert not list(out.glob("*.started.*"))  # nothing ran with every GPU in sight


# --------------------------------------------------------------------------- the plugin


def test_the_plugin_registers_the_executor_and_its_options() -> None:
    from kernelopt_core.testing import plugin_host

    host = plugin_host(autoload=True)
    executor = host.registry("executors")["dask"]
    assert isinstance(executor, DaskExecutor)
    assert DaskOptions in host.option_tables()
    settings = Settings(tables={"dask": DaskOptions(scheduler="tcp://head:8786")})
    assert executor.configure(settings).options.scheduler == "tcp://head:8786"
    assert executor.options.scheduler == "local"  # the registered one is left as it was
