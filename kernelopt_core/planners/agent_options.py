"""The agents planner's options, its own ``[agents]`` table (options.py): the LLM provider and
the budgets of the agents. ``KERNELOPT_PROVIDER``, ``--provider`` and ``[agents] provider``
are the same option."""

from __future__ import annotations

import attrs

from kernelopt_core.options import option, option_table

_positive = attrs.validators.gt(0)


@option_table("agents")
@attrs.frozen
class AgentOptions:
    provider: str | None = option(None, "LLM provider (docs/providers.md); opencode-go when unset.")
    model: str | None = option(None, "LLM model name; the provider's default when unset.")
    base_url: str | None = option(None, "OpenAI-compatible base URL (overrides the provider's).")
    reasoning_effort: str | None = option(None, "Passed to the model as reasoning_effort.")
    edit_mode: str = option("file", "How the editor edits: whole files or unified diffs.",
                            choices=("file", "patch"))
    retries: int = option(2, "Repair attempts after a build or test failure.",
                          validator=attrs.validators.ge(0))
    budget_llm_calls: int | None = option(
        None, "Stop the search after N LLM calls.",
        validator=attrs.validators.optional(attrs.validators.ge(1)))
    budget_cost: float | None = option(None, "Stop the search after this many USD.",
                                       validator=attrs.validators.optional(_positive))
    prices: str | None = option(None, "JSON price table {model: [in, out] USD per Mtok}.")
    llm_timeout_s: float = option(120.0, "Seconds one LLM request may take.", validator=_positive)
    llm_backoff_s: float = option(1.0, "First retry delay after a failed LLM request (doubles).",
                                  validator=attrs.validators.ge(0))
    max_turns: int = option(16, "Tool-calling turns per agent per candidate.",
                            validator=attrs.validators.ge(1))
    max_malformed: int = option(3, "Malformed or refused tool calls before a candidate fails.",
                                validator=attrs.validators.ge(1))
