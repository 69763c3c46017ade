"""The one optimization loop. Every backend feeds it; no plugin owns a loop.

baseline build → test (must pass) → bench; then plan → edit → candidate gates (build,
correctness, screen by default) → accept or reject, until patience, target speedup, an
iteration or time budget, or the planner runs dry; then the best candidate faces the final
gates (confirm by default) against the baseline, and the verdict is journaled. Reports are
rebuilt from the journal.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import platform
import secrets
import time
import traceback
from pathlib import Path
from typing import Any

import attrs

from kernelopt_core import __version__, report
from kernelopt_core import knobs as knob_edit
from kernelopt_core.errors import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_NO_WIN,
    EXIT_OPTIMIZED,
    BenchFailed,
    BudgetExhausted,
    KerneloptError,
    PlannerError,
    PrerequisiteError,
    UsageError,
)
from kernelopt_core.gates.base import FALLBACK, MATCHED, UNVERIFIED, GateContext, GateResult
from kernelopt_core.hookspecs import Backend, Gate
from kernelopt_core.journal import Journal
from kernelopt_core.planners.base import PlanContext, Proposal
from kernelopt_core.plugins import PluginHost
from kernelopt_core.runner import Runner
from kernelopt_core.search import BeamSearch, Node
from kernelopt_core.settings import Settings
from kernelopt_core.target import Target
from kernelopt_core.workspace import Workspace

FINAL_ATTEMPTS = 3  # candidates that may face the final gates when better ones cheat


def new_run_id() -> str:
    """Sorts by time (UTC, to the millisecond) and is unique (random suffix)."""
    now = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now))
    return f"{stamp}{int(now * 1000) % 1000:03d}Z-{secrets.token_hex(3)}"


def prepare_state_root(state_root: Path) -> None:
    state_root.mkdir(parents=True, exist_ok=True)
    ignore = state_root / ".gitignore"
    if not ignore.exists():  # keep `git status` of a surrounding repository clean
        ignore.write_text("# created by kernelopt\n*\n", encoding="utf-8")


@attrs.define
class RunOutcome:
    run_id: str
    run_dir: Path
    status: str
    exit_code: int
    summary: dict[str, Any]


class Loop:
    def __init__(
        self,
        host: PluginHost,
        backend: Backend,
        target: Target,
        settings: Settings,
        listeners: list[Any] | None = None,
        argv: list[str] | None = None,
    ) -> None:
        self.host = host
        self.backend = backend
        self.target = target
        self.settings = settings
        self.listeners = listeners or []
        self.argv = argv or []
        self.run_id = new_run_id()
        self.run_dir = settings.state_root / "runs" / self.run_id
        self._seen: set[str] = set()
        self.rejections: dict[str, str] = {}
        self.last_outcome: dict[str, Any] = {}
        self.profile: dict[str, Any] = {}

    # ------------------------------------------------------------------ set-up
    def _gates(self, names: tuple[str, ...], phase: str) -> list[Gate]:
        known = self.host.registry("gates")
        gates = []
        for name in names:
            if name not in known:
                raise UsageError(
                    f"unknown {phase} gate {name!r} in the gate configuration "
                    f"(from {self.settings.origins.get(phase + '_gates', '?')})",
                    hint=f"known gates: {', '.join(sorted(known))}",
                )
            if known[name].phase != phase:
                raise UsageError(
                    f"gate {name!r} runs in the {known[name].phase!r} phase, not {phase!r}",
                    hint=f"move it to `{known[name].phase} = [...]` in [gates]",
                )
            gates.append(known[name])
        return gates

    def _planner(self) -> tuple[Any, str]:
        planners = self.host.registry("planners")
        for planner in planners.values():  # planners that use other plugins get the host
            if hasattr(planner, "host"):
                planner.host = self.host
        name = self.settings.planner
        if name is None and self.settings.candidates:
            name = "replay"
        if name is None:
            agents = planners.get("agents")
            reason = agents.unavailable_reason(self.settings, self.target) if agents else (
                "no LLM planner is installed"
            )
            if agents is not None and reason is None:
                return agents, "an LLM is configured"
            return planners["tuner"], f"using the built-in tuner: {reason}"
        if name not in planners:
            raise UsageError(
                f"unknown planner {name!r}", hint=f"known planners: {', '.join(sorted(planners))}"
            )
        reason = planners[name].unavailable_reason(self.settings, self.target)
        if reason is not None:
            raise PrerequisiteError(f"planner {name!r} cannot run: {reason}")
        return planners[name], "chosen by --planner"

    # ------------------------------------------------------------------ the run
    def run(self) -> RunOutcome:
        prepare_state_root(self.settings.state_root)
        self.journal = Journal(self.run_dir / "journal.jsonl")
        self.journal.listeners.extend(self.listeners)
        if self.target.preface:
            (self.run_dir / "preface.txt").write_text(self.target.preface)
        self.started = time.time()
        self.runner = Runner(self.backend, self.target, self.settings, self.journal)
        self.workspace = Workspace(self.settings.state_root, self.target)
        exit_code = EXIT_NO_WIN
        try:
            self._write_header()
            self.workspace.acquire()
            status = self._run()
            exit_code = EXIT_OPTIMIZED if status == "optimized" else EXIT_NO_WIN
        except KeyboardInterrupt:
            self.journal.write("interrupted", stage=getattr(self, "stage", ""))
            exit_code = EXIT_INTERRUPTED
        except KerneloptError as exc:
            self.journal.write(
                "error", kind=type(exc).__name__, message=str(exc), exit_code=exc.exit_code
            )
            exit_code = exc.exit_code
        except Exception as exc:
            log = self.run_dir / "error.log"
            log.write_text(traceback.format_exc(), encoding="utf-8")
            self.journal.write(
                "error", kind="internal", message=f"{type(exc).__name__}: {exc}",
                exit_code=EXIT_INTERNAL, log=str(log),
            )
            exit_code = EXIT_INTERNAL
        finally:
            self.journal.write(
                "end",
                exit_code=exit_code,
                wall_seconds=round(time.time() - self.started, 3),
                gpu_seconds=round(self.runner.gpu_seconds, 3),
                child_seconds=round(self.runner.child_seconds, 3),
            )
            self.runner.close_workers()
            self.journal.close()
            self.workspace.release()
        summary = report.write_all(self.run_dir)
        return RunOutcome(self.run_id, self.run_dir, summary["status"], exit_code, summary)

    def _write_header(self) -> None:
        t = self.target
        settings = {
            k: v for k, v in attrs.asdict(self.settings).items() if k not in ("dotenv", "origins")
        }
        self.journal.write(
            "run",
            schema=1,
            run_id=self.run_id,
            kernelopt=__version__,
            argv=self.argv,
            host=platform.node(),
            platform=platform.platform(),
            pid=os.getpid(),
            target={
                "backend": t.backend, "name": t.name, "root": str(t.root),
                "files": list(t.editable), "shape": t.shape, "bytes": t.bytes_moved,
                "flops": t.flops,
            },
            settings=settings,
            origins=self.settings.origins,
        )

    def _stage(self, stage: str, **data: Any) -> None:
        self.stage = stage
        self.journal.write("stage", stage=stage, **data)

    def _run(self) -> str:
        candidate_gates = self._gates(self.settings.candidate_gates, "candidate")
        final_gates = self._gates(self.settings.final_gates, "final")
        _check_gate_plan([g.name for g in candidate_gates], [g.name for g in final_gates])
        planner, why = self._planner()
        self.journal.write(
            "config",
            planner=planner.name,
            planner_reason=why,
            candidate_gates=[g.name for g in candidate_gates],
            final_gates=[g.name for g in final_gates],
        )
        self._stage("snapshot")
        baseline_commit = self.workspace.start(self.run_id)
        self.journal.write(
            "workspace", dir=str(self.workspace.dir), baseline_commit=baseline_commit.decode(),
            files=len(self.workspace.files),
        )
        files = self.workspace.files
        knobs = self.target.knobs or tuple(
            knob_edit.detect({p: files[p] for p in self.target.editable})
        )
        baseline_knobs = knob_edit.current_values(knobs, files, self.target.editable)
        if planner.name == "replay":  # replayed candidates must be editable files
            for spec in self.settings.candidates:
                from kernelopt_core.planners.replay import parse_candidate

                bad = [f for f in parse_candidate(spec) if f not in self.target.editable]
                if bad:
                    raise UsageError(f"--candidate {spec!r}: {', '.join(bad)} is not an "
                                     f"editable file of {self.target.name!r}",
                                     hint=f"editable: {', '.join(self.target.editable)}")
        if planner.name == "tuner" and not knobs:
            raise UsageError(
                f"target {self.target.name!r} declares no tuner knobs and none were found in "
                f"{', '.join(self.target.editable)}",
                hint="declare [[target.knobs]] in kernelopt.toml (docs/descriptor.md) or "
                "configure an LLM planner",
            )
        self.journal.write(
            "knobs", knobs=[{"name": k.name, "file": k.file, "values": list(k.values),
                             "baseline": baseline_knobs[k.name]} for k in knobs],
            declared=bool(self.target.knobs),
        )
        baseline_ms = self._baseline()
        self.profile = profile = self._profile()
        root = Node("baseline", {}, dict(baseline_knobs))
        search = BeamSearch(root, width=self.settings.beam)
        ctx = PlanContext(
            self.target, self.settings, files, knobs, baseline_knobs, search, self.journal,
            profile, host=self.host, baseline_ms=baseline_ms,
        )
        ctx.tried.add(tuple(sorted(baseline_knobs.items())))
        self._search(planner, ctx, candidate_gates, baseline_ms)
        return self._finish(search, final_gates, baseline_ms)

    def _baseline(self) -> float | None:
        tree = self.workspace.baseline_tree
        log_dir = self.run_dir / "baseline"
        self._stage("baseline build")
        result = self.runner.build(tree, log_dir / "build.log")
        if result is not None and not result.ok:
            raise UsageError(
                f"the baseline does not build: {result.describe()}\n{result.tail()}",
                hint=f"make the unmodified target build (full log: {log_dir / 'build.log'})",
            )
        self._stage("baseline test")
        failed = self.runner.check_all(tree, log_dir / "test.log")
        if failed is not None:
            which, result = failed
            raise UsageError(
                f"the baseline fails its own test ({which}): {result.describe()}\n"
                f"{result.tail()}",
                hint="kernelopt only optimizes a kernel whose unmodified test passes; fix "
                f"the test or the kernel first (full log: {log_dir / 'test.log'})",
            )
        if not self.runner.has_bench(tree):
            self.journal.write("baseline", ms=None, samples=[], note="no bench command")
            return None
        self._stage("baseline bench")
        try:
            samples = [
                self.runner.bench(tree, log_dir / "bench.log", "baseline").time_ms
                for _ in range(self.settings.screen_runs)
            ]
        except BenchFailed as exc:
            raise UsageError(f"the baseline's bench fails: {exc}") from exc
        ms = sorted(samples)[len(samples) // 2]
        self.journal.write("baseline", ms=ms, samples=samples)
        return ms

    def _profile(self) -> dict[str, Any]:
        name = self.settings.profiler
        if not name:
            return {}
        profilers = self.host.registry("profilers")
        if name not in profilers:
            raise UsageError(f"unknown profiler {name!r}",
                             hint=f"known profilers: {', '.join(sorted(profilers))}")
        profiler = profilers[name]
        reason = profiler.unavailable_reason()
        if reason:
            raise PrerequisiteError(f"profiler {name!r} is unavailable: {reason}")
        command = self.backend.bench(self.target, self.workspace.baseline_tree)
        if command is None:
            return {}
        self._stage("profile", profiler=name)
        out_dir = self.run_dir / "profile"
        out_dir.mkdir(parents=True, exist_ok=True)
        result, _held = self.runner.spawn_locked(
            profiler.wrap(command, out_dir), out_dir / f"{name}.log"
        )
        metrics = profiler.parse(out_dir) if result.ok else {"error": result.describe()}
        self.journal.write("profile", profiler=name, metrics=metrics)
        return metrics

    # ------------------------------------------------------------------ search
    def _search(
        self, planner: Any, ctx: PlanContext, gates: list[Gate], baseline_ms: float | None
    ) -> None:
        s = self.settings
        deadline = self.started + s.budget_minutes * 60 if s.budget_minutes else None
        evaluated = since_best = 0
        best = 1.0
        stop = "iterations"
        while True:
            if evaluated >= s.iterations:
                break
            if deadline is not None and time.time() >= deadline:
                stop = "time budget"
                break
            if since_best >= s.patience and not getattr(planner, "exhaustive", False):
                stop = "patience"
                break
            if s.target_speedup is not None and best >= s.target_speedup:
                stop = "target speedup reached"
                break
            parent = ctx.search.select()
            if parent is None:
                stop = "search space exhausted"
                break
            self._stage("plan", parent=parent.id)
            try:
                proposals = planner.propose(ctx, parent, min(s.plans, s.iterations - evaluated))
            except BudgetExhausted as exc:
                stop = str(exc)
                break
            except PlannerError as exc:  # this attempt fails; the run goes on
                evaluated += 1
                since_best += 1
                self.journal.write("planner_error", parent=parent.id, message=str(exc))
                continue
            proposals = [p for p in proposals if self._is_new(p)]
            if not proposals:  # nothing (new) to offer from this parent
                parent.exhausted = True
                continue
            for proposal in proposals:
                evaluated += 1
                node = self._evaluate(proposal, parent, gates, baseline_ms, evaluated)
                planner.observe(ctx, proposal, self.last_outcome)
                if node is not None:
                    ctx.search.add(node)
                if node is not None and node.speedup > best:
                    best, since_best = node.speedup, 0
                    self.journal.write("best", candidate=node.id, speedup=node.speedup)
                    self.runner.keep(self.workspace.candidate_tree)  # timed again at the end
                else:
                    since_best += 1
        self.journal.write("search_end", reason=stop, evaluated=evaluated)

    def _is_new(self, proposal: Proposal) -> bool:
        """The same content is never evaluated twice in a run (planners may repeat)."""
        key = hashlib.sha256(
            b"\0".join(p.encode() + b"\0" + proposal.edits[p] for p in sorted(proposal.edits))
        ).hexdigest()
        unchanged = all(self.workspace.files.get(p) == d for p, d in proposal.edits.items())
        if key in self._seen or unchanged:
            self.journal.write("duplicate", description=proposal.description)
            return False
        self._seen.add(key)
        return True

    def _evaluate(
        self, proposal: Proposal, parent: Node, gates: list[Gate], baseline_ms: float | None,
        number: int,
    ) -> Node | None:
        cid = f"c{number}"
        started, child_before = time.time(), self.runner.child_seconds
        log_dir = self.run_dir / "candidates" / cid
        log_dir.mkdir(parents=True, exist_ok=True)
        files = self.workspace.files
        bad = [p for p in proposal.edits if p not in self.target.editable]
        self.journal.write(
            "candidate", candidate=cid, parent=parent.id, planner=proposal.planner,
            description=proposal.description, knobs=proposal.knobs,
            files=sorted(proposal.edits),
        )
        (log_dir / "edit.diff").write_text(_text_diff(files, proposal.edits), encoding="utf-8")
        results: list[GateResult] = []
        if bad:
            results.append(GateResult("editable", False, f"edits non-editable files: {bad}"))
        else:
            self.workspace.use_candidate(proposal.edits)
            ctx = self._gate_context(cid, proposal.edits, log_dir, baseline_ms)
            for gate in gates:
                self._stage(gate.name, candidate=cid)
                result = gate.evaluate(ctx)
                results.append(result)
                self.journal.write(
                    "gate", candidate=cid, gate=gate.name, passed=result.passed,
                    skipped=result.skipped, reason=result.reason, metrics=result.metrics,
                )
                if not result.passed:
                    break
        accepted = all(r.passed for r in results)
        speedup = next(
            (r.metrics["speedup"] for r in results if "speedup" in r.metrics), 1.0
        )
        tag = None
        if accepted:
            _commit, tag = self.workspace.commit_candidate(
                self.run_id, cid, proposal.edits, f"{cid}: {proposal.description}"
            )
        failed = next((r for r in results if not r.passed), None)
        if failed is not None:
            self.rejections[cid] = failed.gate
        self.last_outcome = {
            "candidate": cid, "accepted": accepted, "speedup": speedup,
            "failed_gate": failed.gate if failed else None,
            "reason": failed.reason if failed else "passed every candidate gate",
            "log_tail": failed.metrics.get("log_tail", "") if failed else "",
            "diff": (log_dir / "edit.diff").read_text(encoding="utf-8"),
        }
        self.journal.write(
            "candidate_result", candidate=cid, accepted=accepted, speedup=speedup,
            failed_gate=failed.gate if failed else None,
            reason=failed.reason if failed else "passed every candidate gate",
            gates_passed=[r.gate for r in results if r.passed], tag=tag,
            wall_s=round(time.time() - started, 4),
            child_s=round(self.runner.child_seconds - child_before, 4),
        )
        if not accepted:
            return None
        return Node(cid, dict(proposal.edits), dict(proposal.knobs), proposal.description,
                    parent.id, speedup)

    # ------------------------------------------------------------------ verdict
    def _finish(self, search: BeamSearch, gates: list[Gate], baseline_ms: float | None) -> str:
        benched = baseline_ms is not None
        accepted = [n for n in search.nodes.values() if n.id != "baseline"]
        if not accepted:
            rejected = ", ".join(f"{c} at {g}" for c, g in self.rejections.items()) or "none"
            self.journal.write("verdict", status="fallback", candidate=None,
                               reason="no candidate passed every candidate gate; baseline kept "
                               f"(rejected: {rejected})")
            return "fallback"
        if benched:
            accepted.sort(key=lambda n: n.speedup, reverse=True)
        failures: list[GateResult] = []
        status, best = FALLBACK, accepted[0]
        # A candidate caught cheating or wrong on the measured shape gives the next best its
        # turn; one that is merely not proven faster ends the search (the rest are slower).
        for best in accepted[:FINAL_ATTEMPTS]:
            status, failures = self._final_gates(best, gates, baseline_ms)
            if status != FALLBACK:
                break
        winner = self.workspace.tags().get(f"kernelopt/{self.run_id}/{best.id}")
        diff = b""
        if status in ("optimized", "unverified") and winner is not None:
            diff = self.workspace.diff(self.workspace.baseline_commit, winner)
            self.workspace.tag(self.run_id, "winner", winner)
        (self.run_dir / "report.diff").write_bytes(diff)
        self.journal.write(
            "verdict",
            status=status,
            candidate=best.id,
            description=best.description,
            knobs=best.knobs,
            screen_speedup=best.speedup,
            winner_tag=f"kernelopt/{self.run_id}/winner" if diff else None,
            diff="report.diff" if diff else None,
            caught_by=[f.gate for f in failures],
            reason="; ".join(f"{f.gate}: {f.reason}" for f in failures) or "every final gate passed",
        )
        return status

    def _final_gates(
        self, node: Node, gates: list[Gate], baseline_ms: float | None
    ) -> tuple[str, list[GateResult]]:
        self._stage("final", candidate=node.id)
        self.workspace.use_candidate(node.edits)
        log_dir = self.run_dir / "candidates" / node.id
        rebuilt = self.runner.build(self.workspace.candidate_tree, log_dir / "final-build.log")
        ctx = self._gate_context(node.id, node.edits, log_dir, baseline_ms)
        results: list[GateResult] = []

        def record(result: GateResult) -> None:  # journaled as it happens
            self.journal.write(
                "gate", candidate=node.id, gate=result.gate, passed=result.passed, final=True,
                skipped=result.skipped, reason=result.reason, metrics=result.metrics,
                failed_verdict=None if result.passed else result.failed_verdict,
            )
            results.append(result)

        if rebuilt is not None and not rebuilt.ok:  # built during the search: flaky, disk full
            record(GateResult("build", False, f"no longer builds: {rebuilt.describe()}",
                              failed_verdict=FALLBACK))
            return FALLBACK, results  # the next best candidate gets its turn
        for gate in gates:
            self._stage(gate.name, candidate=node.id)
            record(gate.evaluate(ctx))
        caught = any(not r.passed and r.failed_verdict == FALLBACK for r in results)
        if self.runner.interpreted and not caught:
            # whatever gates ran, an interpreter's times never make a device speedup
            record(GateResult("timing", False, "the bench times come from an interpreter, not "
                              "the device: no speedup is claimed", failed_verdict=UNVERIFIED))
        elif baseline_ms is not None and not caught and "confirm" not in {g.name for g in gates}:
            # DESIGN §5.4: optimized only with every confirm round won; the screen alone is
            # three invocations, which noise passes (report.md shows "screen only")
            record(GateResult("protocol", False, "the confirm gate did not run (removed from the "
                              "final gates): no speedup is claimed without it",
                              failed_verdict=MATCHED))
        failures = [r for r in results if not r.passed]
        if baseline_ms is None:
            return (UNVERIFIED if not failures else FALLBACK), failures
        if not failures:
            return "optimized", failures
        verdicts = {f.failed_verdict for f in failures}
        if FALLBACK in verdicts:
            return FALLBACK, failures
        return (UNVERIFIED if UNVERIFIED in verdicts else MATCHED), failures

    def _gate_context(
        self, cid: str, edits: dict[str, bytes], log_dir: Path, baseline_ms: float | None
    ) -> GateContext:
        return GateContext(
            self.runner, self.settings, self.target, cid, self.workspace.candidate_tree,
            self.workspace.baseline_tree, log_dir, baseline_ms, edits=dict(edits),
            baseline_files=self.workspace.files, profile=self.profile,
        )


def _check_gate_plan(candidate: list[str], final: list[str]) -> None:
    """Gate lists a verdict cannot rest on: refuse them before any work is done."""
    if "correctness" not in candidate:
        raise UsageError("the candidate gates lack `correctness`: kernelopt never hands back a "
                         "kernel it has not checked", hint="keep correctness in --gates / [gates]")
    if "roofline" in final and ("confirm" not in final
                                or final.index("roofline") < final.index("confirm")):
        raise UsageError("the roofline gate bounds the confirmed time: it needs `confirm` "
                         "before it in the final gates", hint="e.g. --final-gates confirm,roofline")


def _text_diff(files: dict[str, bytes], edits: dict[str, bytes]) -> str:
    out: list[str] = []
    for path, new in sorted(edits.items()):
        old = files.get(path, b"").decode("utf-8", errors="replace").splitlines(keepends=True)
        out.extend(difflib.unified_diff(
            old, new.decode("utf-8", errors="replace").splitlines(keepends=True),
            f"a/{path}", f"b/{path}",
        ))
    return "".join(out)
