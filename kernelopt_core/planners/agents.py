"""The ``agents`` planner: Planner → Editor → Summarizer over an OpenAI-compatible API.

The Planner inspects the code with read-only tools and submits one plan; the Editor edits the
editable files (whole files, or unified patches with ``--edit-mode patch``); the loop builds,
tests and times the result like any other proposal; the Summarizer attributes the measured
outcome and updates the experience archive. A candidate that fails to build or test is handed
back to the Editor with the error (and, for compile errors, doc lookups of the symbols it
names) up to ``--retries`` times. Malformed replies go back to the model a bounded number of
times; then the candidate fails — never the run.
"""

from __future__ import annotations

import json
import re
import time
from importlib import resources
from typing import Any

import attrs

from kernelopt_core import events
from kernelopt_core.errors import BudgetExhausted, PlannerError
from kernelopt_core.experience import Experience
from kernelopt_core.hookspecs import hookimpl
from kernelopt_core.llm.client import ChatClient, LLMUnreachable, load_prices
from kernelopt_core.llm.tools import ToolBox, ToolError
from kernelopt_core.planners.agent_options import AgentOptions
from kernelopt_core.planners.base import Outcome, PlanContext, Proposal
from kernelopt_core.planners.tuner import screened_frontier, untried_proposals
from kernelopt_core.search import Node
from kernelopt_core.settings import Settings
from kernelopt_core.target import Target

UNANSWERED_LIMIT = 2  # attempts failed without one successful LLM call: the run cannot go on
UNDEFINED_SYMBOL = re.compile(
    r"identifier \"(\w+)\" is undefined|'(\w+)' was not declared|undeclared identifier '(\w+)'|"
    r"no member named '(\w+)'|undefined reference to `(\w+)")


def prompt(name: str) -> str:
    return resources.files("kernelopt_core.prompts").joinpath(f"{name}.md").read_text("utf-8")


def _language(target: Target) -> str:
    files = " ".join(target.editable)
    return "cuda" if ".cu" in files else "hip" if ".hip" in files else (
        "triton" if ".py" in files else "cpp")


class Agents:
    name = "agents"
    selection_rank = 50  # an LLM configured: the agents search, with the tuner as their bar
    host: Any = None  # the PluginHost (providers, docs, fragments), from use_plugins

    def use_plugins(self, host: Any) -> None:
        self.host = host

    def select(self, settings: Settings, target: Target) -> tuple[bool, str]:
        # wanted whenever installed; the core then asks unavailable_reason (no key: declined)
        return True, "an LLM is configured"

    def __init__(self) -> None:
        self.client: ChatClient | None = None
        self.pending: dict[int, dict[str, Any]] = {}  # id(proposal) -> plan, parent, attempts
        self.repairs: dict[str, dict[str, Any]] = {}  # parent id -> failed attempt to repair
        self.history: list[str] = []
        self.screened = False  # the tuner's frontier was screened (one agents per run)
        self.bar_accepted = False  # the tuner's candidate passed the candidate gates
        self.unanswered = 0  # planner attempts failed while no LLM call had succeeded

    # ------------------------------------------------------------------ provider
    def _provider(self, settings: Settings) -> tuple[str, str, str | None, str | None]:
        """(base_url, model, api key, key variable) from flags, env/.env and the registry."""
        return self._resolve(settings)[:4]

    def _resolve(self, settings: Settings) -> tuple[str, str, str | None, str | None,
                                                    dict[str, str]]:
        options = settings.section(AgentOptions)
        name = options.provider or "opencode-go"
        providers = self.host.registry("llm_providers") if self.host is not None else {}
        record = providers.get(name)
        if record is None and not options.base_url:
            known = ", ".join(sorted(providers)) or "none installed"
            raise PlannerError(f"unknown LLM provider {name!r} (known: {known})")
        base_url = options.base_url or (record.base_url if record is not None else "")
        model = options.model or (record.default_model if record else "default")
        key_env = record.api_key_env if record else None
        headers = dict(record.headers) if record else {}
        return base_url, model, settings.env(key_env) if key_env else None, key_env, headers

    def check_provider(self, settings: Settings) -> str | None:
        """One cheap request to the configured provider (``kernelopt init``): None without a
        key, else what answered; one that never answers raises LLMUnreachable (exit 3)."""
        base_url, model, key, key_env, headers = self._resolve(settings)
        if key_env and not key:
            return None
        options = settings.section(AgentOptions)
        provider = options.provider or "opencode-go"
        client = ChatClient(provider=provider, key_env=key_env, base_url=base_url, api_key=key,
                            model=model, timeout_s=min(options.llm_timeout_s, 60.0), retries=1,
                            backoff_s=options.llm_backoff_s,
                            headers={k: v.replace("{session}", "kernelopt-check")
                                     for k, v in headers.items()})
        started = time.monotonic()
        try:
            client.complete([{"role": "user", "content": "Reply with the word OK."}], None,
                            "check")
        finally:
            client.close()
        return f"{provider}: model {model} answered in {time.monotonic() - started:.1f} s"

    def unavailable_reason(self, settings: Settings, target: Target) -> str | None:
        try:
            _url, _model, key, key_env = self._provider(settings)
        except PlannerError as exc:
            return str(exc)
        if key_env and not key:
            return f"no LLM key configured ({key_env} is not set in the environment or .env)"
        return None

    def _client(self, ctx: PlanContext) -> ChatClient:
        if self.client is None:
            s = ctx.settings.section(AgentOptions)
            base_url, model, key, key_env, headers = self._resolve(ctx.settings)
            session = ctx.run_id
            self.client = ChatClient(
                provider=s.provider or "opencode-go",
                key_env=key_env,
                headers={k: v.replace("{session}", session) for k, v in headers.items()},
                base_url=base_url, api_key=key, model=model, journal=ctx.journal,
                timeout_s=s.llm_timeout_s,
                reasoning_effort=s.reasoning_effort, prices=load_prices(s.prices),
                max_calls=s.budget_llm_calls, max_cost=s.budget_cost,
                backoff_s=s.llm_backoff_s,
                calls_before=ctx.budget.llm_calls_before, cost_before=ctx.budget.llm_cost_before,
            )
        return self.client

    # ------------------------------------------------------------------ agent turns
    def _converse(self, ctx: PlanContext, role: str, system: str, user: str,
                  toolbox: ToolBox) -> str:
        """Run one agent until it finishes; returns its final text."""
        client = self._client(ctx)
        messages: list[dict[str, Any]] = [{"role": "system", "content": system},
                                          {"role": "user", "content": user}]
        strikes = 0
        for _turn in range(ctx.settings.section(AgentOptions).max_turns):
            reply = client.complete(messages, toolbox.schemas(), role)
            calls = reply.get("tool_calls") or []
            messages.append({"role": "assistant", "content": reply.get("content") or "",
                             **({"tool_calls": calls} if calls else {})})
            if not calls:
                text = (reply.get("content") or "").strip()
                if role == "planner" and toolbox.plan is None:
                    strikes += 1
                    messages.append({"role": "user", "content": "Finish by calling submit_plan "
                                     "with your plan." if text else "Your reply was empty. Use "
                                     "the tools, then call submit_plan."})
                elif role == "editor" and not toolbox.edits:
                    strikes += 1
                    messages.append({"role": "user", "content": "You have not changed any file. "
                                     "Make the change with your tools."})
                else:
                    return text
            for call in calls:
                function = call.get("function") or {}
                try:
                    result = toolbox.call(str(function.get("name")), function.get("arguments")
                                          or "{}")
                except ToolError as exc:
                    strikes += 1
                    result = f"error: {exc}"
                messages.append({"role": "tool", "tool_call_id": call.get("id", ""),
                                 "content": result})
            if role == "planner" and toolbox.plan is not None:
                return toolbox.plan
            if strikes > ctx.settings.section(AgentOptions).max_malformed:
                raise PlannerError(f"the model produced no usable {'plan' if role == 'planner' else 'edit'}: "
                                   f"the {role} made {strikes} malformed or refused moves")
        turns = ctx.settings.section(AgentOptions).max_turns
        raise PlannerError(f"the {role} did not finish in {turns} turns")

    def _fill(self, template: str, ctx: PlanContext, **extra: str) -> str:
        t = ctx.target
        fragments = "\n".join(self.host.prompt_fragments(t.backend, extra.get("role", ""))
                              if self.host is not None else [])
        values = {
            "target": t.name, "backend": t.backend, "shape": t.shape or "unpinned",
            "baseline_ms": f"{ctx.baseline_ms:.4g} ms" if ctx.baseline_ms else "(no bench)",
            "roofline": f", {t.bytes_moved} bytes moved" if t.bytes_moved else "",
            "editable": ", ".join(t.editable), "context": ", ".join(t.context) or "none",
            "rules": prompt("rules"), "fragments": fragments, "history": "", **extra,
        }
        return template.format(**values)

    def _plan(self, ctx: PlanContext, parent: Node) -> str:
        files = {**ctx.files, **parent.edits}
        memory = Experience(ctx.settings.state_root)
        toolbox = ToolBox(files, ctx.target.editable, "planner", profile=ctx.profile.view(),
                          memory_search=lambda q: memory.search(q, ctx.target.backend))
        history = ""
        if self.history:
            history = "Earlier candidates in this run:\n" + "\n".join(self.history[-6:])
            if _converged(self.history[-3:]):
                history += ("\nThe last plans converged on one direction without a win: "
                            "choose a clearly different one.")
        start = "the baseline" if parent.id == "baseline" else \
            f"candidate {parent.id} ({parent.description}, {parent.speedup:.3f}× faster)"
        system = self._fill(prompt("planner"), ctx, role="planner", history=history)
        return self._converse(ctx, "planner", system, f"Start from {start}. Plan one change.",
                              toolbox)

    def _execute(self, ctx: PlanContext, files: dict[str, bytes], plan: str,
                 repair: str | None) -> dict[str, bytes]:
        mode = ctx.settings.section(AgentOptions).edit_mode
        toolbox = ToolBox(dict(files), ctx.target.editable, "editor", edit_mode=mode)
        instruction = ("write_file with the whole new content of each file you change"
                       if mode == "file" else "apply_patch with a unified diff")
        system = self._fill(prompt("editor"), ctx, role="editor", plan=plan,
                            edit_instruction=instruction)
        self._converse(ctx, "editor", system, repair or "Make the change.", toolbox)
        return toolbox.edits

    # ------------------------------------------------------------------ planner protocol
    def _tuner_first(self, ctx: PlanContext) -> list[Proposal]:
        """Once per run, where the target can screen its knobs: the built-in tuner's best
        screened configuration goes through the gates first, so the run holds the bar an LLM
        edit must beat (and the LLM can build on it); its frontier is in get_profile."""
        if self.screened:
            return []
        self.screened = True
        frontier = screened_frontier(ctx, dict(ctx.baseline_knobs)) or []
        return [attrs.evolve(p, description=f"tuner's best screened: {p.description}")
                for p in untried_proposals(ctx, frontier, 1, "tuner")]

    def propose(self, ctx: PlanContext, parent: Node, count: int) -> list[Proposal]:
        first = self._tuner_first(ctx)
        if first:
            return first
        try:
            return self._propose(ctx, parent, count)
        except LLMUnreachable as exc:
            if self.bar_accepted:  # the tuner's candidate still faces the final gates
                raise BudgetExhausted(f"the LLM is unusable ({exc}); the search ends and the "
                                      "tuner's candidate goes on") from exc
            raise
        except PlannerError as exc:
            if self.client is not None and not self.client.usage.calls:
                self.unanswered += 1
                if self.unanswered >= UNANSWERED_LIMIT:  # no call of the run ever succeeded
                    raise LLMUnreachable(
                        f"no LLM call of this run succeeded in {self.unanswered} attempts; "
                        f"last: {exc}", hint="check the server's log and docs/providers.md"
                    ) from exc
            raise

    def _propose(self, ctx: PlanContext, parent: Node, count: int) -> list[Proposal]:
        out = []
        for _ in range(count):
            repair = self.repairs.pop(parent.id, None)
            files = {**ctx.files, **parent.edits}
            if repair is not None:
                plan, attempts = repair["plan"], repair["attempts"]
                files.update(repair["edits"])
                edits = self._execute(ctx, files, plan, self._repair_text(ctx, repair))
            else:
                plan, attempts = self._plan(ctx, parent), 0
                edits = self._execute(ctx, files, plan, None)
            merged = {**parent.edits, **(repair["edits"] if repair else {}), **edits}
            merged = {p: d for p, d in merged.items() if ctx.files.get(p) != d}
            if not merged:
                raise PlannerError("the editor left every file as it was")
            title = plan.strip().splitlines()[0][:100] if plan.strip() else "agent edit"
            proposal = Proposal(("repair: " if repair else "") + title, merged, planner=self.name)
            self.pending[id(proposal)] = {"plan": plan, "parent": parent.id, "attempts": attempts}
            out.append(proposal)
        return out

    def _repair_text(self, ctx: PlanContext, repair: dict[str, Any]) -> str:
        outcome: Outcome = repair["outcome"]
        log = outcome.log_tail[-3000:]
        docs = []
        if outcome.failed_gate == "build" and self.host is not None:
            symbols = {next(g for g in m.groups() if g) for m in UNDEFINED_SYMBOL.finditer(log)}
            for symbol in sorted(symbols)[:3]:
                for hit in self.host.doc_lookup(symbol, _language(ctx.target))[:2]:
                    docs.append(f"{symbol} — {hit.source}:{hit.line}\n{hit.text}")
        return prompt("repair").format(
            files=", ".join(sorted(repair["edits"])), gate=outcome.failed_gate,
            reason=outcome.reason, log=f"Output:\n{log}" if log else "",
            docs=("Documentation found for symbols in the error:\n" + "\n\n".join(docs))
            if docs else "")

    def observe(self, ctx: PlanContext, proposal: Proposal, outcome: Outcome) -> None:
        meta = self.pending.pop(id(proposal), None)
        if meta is None:
            if proposal.planner == "tuner":  # the bar: the planner sees how the tuner did
                if outcome.accepted:
                    self.bar_accepted = True
                    self.history.append(f"- {proposal.description} → accepted, screen "
                                        f"{outcome.speedup or 1.0:.3f}× (to beat)")
                else:
                    self.history.append(f"- {proposal.description} → rejected at "
                                        f"{outcome.failed_gate}")
            return
        gate = outcome.failed_gate
        verdict = "accepted" if outcome.accepted else f"rejected at {gate}"
        self.history.append(f"- {proposal.description} → {verdict}, "
                            f"screen {outcome.speedup or 1.0:.3f}×")
        if gate in ("build", "correctness") and meta["attempts"] < ctx.settings.section(AgentOptions).retries:
            self.repairs[meta["parent"]] = {"plan": meta["plan"], "edits": proposal.edits,
                                            "outcome": outcome, "attempts": meta["attempts"] + 1}
        self._summarize(ctx, proposal, meta["plan"], outcome)

    def _summarize(self, ctx: PlanContext, proposal: Proposal, plan: str,
                   outcome: Outcome) -> None:
        diff = outcome.diff[:6000]
        text = prompt("summarizer").format(plan=plan, diff=diff, outcome=json.dumps(
            {"accepted": outcome.accepted, "speedup": outcome.speedup,
             "failed_gate": outcome.failed_gate, "reason": outcome.reason}))
        try:
            reply = self._client(ctx).complete([{"role": "user", "content": text}], None,
                                               "summarizer")
        except PlannerError:
            return  # no summary is no reason to fail anything
        match = re.search(r"\{.*\}", reply.get("content") or "", re.S)
        try:
            data = json.loads(match.group(0)) if match else {}
        except json.JSONDecodeError:
            data = {}
        if not isinstance(data, dict) or data.get("action") not in ("append", "replace", "skip"):
            return
        Experience(ctx.settings.state_root).update(
            data["action"], str(data.get("strategy", "")), str(data.get("lesson", "")),
            ctx.target.backend, ctx.target.name, outcome.accepted, outcome.speedup)
        ctx.journal.record(events.Experience(strategy=data.get("strategy"),
                                             lesson=data.get("lesson"), action=data["action"]))


def _converged(lines: list[str]) -> bool:
    """Three recent plans that share most of their words and none of which won."""
    if len(lines) < 3 or any("accepted" in line for line in lines):
        return False
    words = [set(re.findall(r"[a-z]{4,}", line.lower())) for line in lines]
    common = set.intersection(*words)
    return len(common) >= 0.6 * min(len(w) for w in words if w)


@hookimpl
def kernelopt_register_planners() -> list[object]:
    return [Agents]  # a class: the core makes a fresh one per run


@hookimpl
def kernelopt_option_tables() -> list[type]:
    return [AgentOptions]
