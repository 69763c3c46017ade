"""An OpenAI-compatible chat-completions client over httpx: tools, timeouts, retries with
backoff, accounting. The API key is sent in a header and never written anywhere else."""

from __future__ import annotations

import json
import time
from typing import Any

import attrs
import httpx

from kernelopt_core import events
from kernelopt_core.errors import BudgetExhausted, PlannerError, PrerequisiteError
from kernelopt_core.gates.base import EventLog

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}

# USD per million tokens (input, output). Data, not code: override with --prices FILE (JSON
# {"model": [in, out]}). Unknown models cost 0 and the report says the price is unknown.
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-5": (1.25, 10.0),
    "gpt-5-mini": (0.25, 2.0),
    "gpt-4.1": (2.0, 8.0),
    "gpt-4.1-mini": (0.4, 1.6),
}


class LLMUnreachable(PrerequisiteError):
    """No LLM call of the run succeeded and none can: the run cannot use its planner (exit 3)."""


@attrs.define
class Usage:
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    cost: float = 0.0
    unpriced_calls: int = 0


@attrs.define
class ChatClient:
    base_url: str
    api_key: str | None
    model: str
    journal: EventLog | None = None
    timeout_s: float = 120.0
    retries: int = 4
    backoff_s: float = 1.0
    reasoning_effort: str | None = None
    prices: dict[str, tuple[float, float]] = attrs.field(factory=lambda: dict(DEFAULT_PRICES))
    headers: dict[str, str] = attrs.field(factory=dict)  # provider-specific extra headers
    max_calls: int | None = None
    max_cost: float | None = None
    # calls and cost of a resumed run's earlier attempts: the budgets are the run's
    calls_before: int = 0
    cost_before: float = 0.0
    provider: str = ""  # for messages: which configured provider this is
    key_env: str | None = None  # the variable the key came from, for messages
    usage: Usage = attrs.field(factory=Usage)
    _http: httpx.Client | None = None

    def _client(self) -> httpx.Client:
        if self._http is None:
            headers = {"Content-Type": "application/json", **self.headers}
            if self.api_key:
                headers["Authorization"] = f"Bearer {self.api_key}"
            self._http = httpx.Client(timeout=self.timeout_s, headers=headers)
        return self._http

    def _redact(self, text: str) -> str:
        return text.replace(self.api_key, "[redacted]") if self.api_key else text

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                 role: str) -> dict[str, Any]:
        """One assistant message. Retries 429/5xx/timeouts with exponential backoff (honouring
        Retry-After); other failures raise PlannerError (the candidate fails, not the run)."""
        if self.max_calls is not None and self.calls_before + self.usage.calls >= self.max_calls:
            raise BudgetExhausted(f"LLM call budget of {self.max_calls} calls is spent")
        if self.max_cost is not None and self.cost_before + self.usage.cost >= self.max_cost:
            raise BudgetExhausted(f"LLM cost budget of ${self.max_cost:g} is spent")
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:  # tool_choice is left at the API's default ("auto"): vLLM rejects it unless
            body["tools"] = tools  # started with its tool-calling flags
        if self.reasoning_effort:
            body["reasoning_effort"] = self.reasoning_effort
        url = self.base_url.rstrip("/") + "/chat/completions"
        last = ""
        refused = False  # every failure so far: nothing accepted the connection
        for attempt in range(self.retries + 1):
            start = time.perf_counter()
            wait = self.backoff_s * 2**attempt
            try:
                response = self._client().post(url, json=body)
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                refused = isinstance(exc, httpx.ConnectError) and (attempt == 0 or refused)
                last = f"{type(exc).__name__}: {self._redact(str(exc))}"
                self._log(role, attempt, None, time.perf_counter() - start, error=last)
            else:
                seconds = time.perf_counter() - start
                refused = False
                if response.status_code == 200:
                    return self._accept(response, role, attempt, seconds)
                last = f"HTTP {response.status_code}: {self._redact(response.text[:500])}"
                self._log(role, attempt, response.status_code, seconds, error=last)
                if response.status_code not in RETRY_STATUS:
                    self._never_answered(url, last, attempt + 1, response.status_code)
                    raise PlannerError(f"{url} refused the request: {last}")
                retry_after = response.headers.get("retry-after", "")
                if retry_after.replace(".", "", 1).isdigit():
                    wait = min(float(retry_after), 60.0)
            if attempt < self.retries:
                time.sleep(wait)
        if refused:
            self._never_answered(url, last, self.retries + 1, None)
        raise PlannerError(f"{url} failed {self.retries + 1} times; last: {last}")

    def _never_answered(self, url: str, last: str, attempts: int, status: int | None) -> None:
        """The first call of the run failed in a way no retry or candidate can fix: nothing
        listens at the URL, the key was rejected, or the model or endpoint does not exist."""
        if self.usage.calls or status not in (None, 401, 403, 404):
            return
        who = f"the {self.provider} provider" if self.provider else "the LLM provider"
        if status in (401, 403):
            what = "rejected the API key"
            hint = f"check the API key{f' in {self.key_env}' if self.key_env else ''}"
        elif status == 404:
            what = "does not know the model or the endpoint"
            hint = f"check --model ({self.model}) and --base-url ({self.base_url})"
        else:
            what = "refused the connection"
            hint = f"is an OpenAI-compatible server running at {self.base_url}? (--base-url)"
        raise LLMUnreachable(
            f"{who} {what}: {url} (model {self.model}): {last} ({attempts} "
            f"attempt{'s' if attempts != 1 else ''}; no LLM call of this run succeeded)",
            hint=hint)

    def _accept(self, response: httpx.Response, role: str, attempt: int,
                seconds: float) -> dict[str, Any]:
        try:
            data = response.json()
            message = data["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            self._log(role, attempt, 200, seconds, error="malformed response body")
            raise PlannerError(f"malformed chat-completions response: {exc!r}") from exc
        usage = data.get("usage") or {}
        tokens_in = int(usage.get("prompt_tokens") or 0)
        tokens_out = int(usage.get("completion_tokens") or 0)
        price = self.prices.get(self.model)
        cost = (tokens_in * price[0] + tokens_out * price[1]) / 1e6 if price else 0.0
        self.usage.calls += 1
        self.usage.tokens_in += tokens_in
        self.usage.tokens_out += tokens_out
        self.usage.latency_s += seconds
        self.usage.cost += cost
        self.usage.unpriced_calls += price is None
        self._log(role, attempt, 200, seconds, tokens_in=tokens_in, tokens_out=tokens_out,
                  cost=cost, priced=price is not None)
        return message

    def _log(self, role: str, attempt: int, status: int | None, seconds: float,
             **data: Any) -> None:
        if self.journal is not None:
            self.journal.record(events.LLMCall(role=role, model=self.model, attempt=attempt + 1,
                                               status=status, latency_s=round(seconds, 4),
                                               **data))

    def close(self) -> None:
        if self._http is not None:
            self._http.close()


def load_prices(path: str | None) -> dict[str, tuple[float, float]]:
    prices = dict(DEFAULT_PRICES)
    if path:
        with open(path, encoding="utf-8") as fh:
            for model, pair in json.load(fh).items():
                prices[model] = (float(pair[0]), float(pair[1]))
    return prices
