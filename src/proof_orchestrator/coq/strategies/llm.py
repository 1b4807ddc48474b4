"""The ``llm`` strategies: a language model proposes, the prover decides.

* ``llm`` (whole proofs): the model writes ``samples`` complete scripts for
  the goal; each goes through the script gate and is run in the session, and
  the first that closes the goal is the candidate (then, like every
  candidate, it is verified with the whole file and the axiom audit).
* ``llm-search`` (next tactics): the best-first search of :mod:`.search`,
  with the model's next-tactic proposals added to each expansion beside the
  k-NN suggestions.

A model failure (timeout, 429, 5xx, malformed reply, spent budget) ends the
attempt as FAILED with the reason in its message. Model calls hold no CPU
slot (``uses_slot = False``); they wait on the client's own concurrency
limit. Tokens, cost and model time travel on the result to the ledger.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ...errors import ModelError, ModelUnavailable, ScriptRejected
from ...goals import Budget, Goal, Outcome
from ...ledger import Ledger
from ...llm.client import LLMClient, Sample
from ...llm.providers import make_provider
from ...llm.settings import (
    LLMMode,
    LLMSettings,
    llm_off_reason,
    load_llm_settings,
    probe,
)
from ...provers.base import TacticStatus
from ...strategies.base import Strategy, StrategyDefaults, StrategyResult
from ..script import check_script
from ..session import CoqSession
from .context import GoalContext, gather_context
from .knn import FileModels
from .llm_prompt import (
    NEXT_SYSTEM,
    WHOLE_SYSTEM,
    PromptContext,
    next_tactic_prompt,
    parse_script,
    parse_tactics,
    whole_proof_prompt,
)
from .search import SearchStrategy

__all__ = ["LLMChecks", "LLMSearchStrategy", "LLMStrategy", "llm_strategies"]

log = logging.getLogger(__name__)


def _prompt_context(context: GoalContext) -> PromptContext:
    return PromptContext(
        context.statement,
        context.goal,
        tuple(f"{name} : {statement}" for name, statement in context.premises),
        context.neighbours,
        tuple((script, message) for _, script, message in context.errors if script),
    )


@dataclass(slots=True)
class LLMChecks:
    """What the model cost in one attempt and what became of its replies.

    Recorded on the attempt (``llm_checks``) so that a run can say how many
    replies held a script, which the gate refused and why, and how many the
    prover checked. For ``llm-search`` a "script" is a reply that held
    tactics, each tactic is gated, and ``checked`` counts those handed to the
    search (which runs them in the session when it expands the node).
    """

    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0
    #: HTTP requests made (0 for a reply served from the cache) and each one's seconds
    requests: int = 0
    request_seconds: list[float] = field(default_factory=list)
    #: samples asked for that the cache answered
    cached: int = 0
    #: replies received (from the model or the cache)
    replies: int = 0
    #: replies that held a parsable script (whole) or at least one tactic (next)
    scripts: int = 0
    #: candidates the script gate refused, by kind (``coq.script.GateRefusal``)
    refused: dict[str, int] = field(default_factory=dict)
    #: candidates the prover ran (whole) or that were handed to the search (next)
    checked: int = 0
    #: candidates that closed the goal in the session
    closed: int = 0

    def add(self, sample: Sample) -> None:
        self.tokens_in += sample.tokens_in
        self.tokens_out += sample.tokens_out
        self.cost_usd += sample.cost_usd
        self.seconds += sample.latency_seconds
        self.requests += sample.requests
        self.request_seconds += sample.request_seconds
        self.cached += int(sample.cached)
        self.replies += len(sample.texts)

    def refuse(self, error: ScriptRejected) -> None:
        self.refused[error.kind] = self.refused.get(error.kind, 0) + 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "request_seconds": [round(s, 3) for s in self.request_seconds],
            "cached": self.cached,
            "replies": self.replies,
            "scripts": self.scripts,
            "refused": dict(self.refused),
            "checked": self.checked,
            "closed": self.closed,
        }

    def on(self, result: StrategyResult) -> StrategyResult:
        return replace(
            result,
            tokens_in=self.tokens_in,
            tokens_out=self.tokens_out,
            cost_usd=self.cost_usd,
            llm_seconds=self.seconds,
            llm_checks=self.as_dict(),
        )


def _skipped(reason: str) -> StrategyResult:
    return StrategyResult(Outcome.SKIPPED, message=reason)


class LLMStrategy(StrategyDefaults):
    """Whole proofs sampled from a model, each checked by the prover."""

    name = "llm"
    weight = "light"
    language = "coq"
    #: model calls wait on the client's limit, not on a CPU slot
    uses_slot = False
    #: the client caches in the ledger: run where the ledger is (not on a Ray worker)
    needs_ledger = True

    def __init__(
        self,
        client: LLMClient,
        ledger: Ledger,
        proved: Sequence[tuple[str, Sequence[str]]] = (),
        *,
        samples: int | None = None,
    ) -> None:
        self.client = client
        self.ledger = ledger
        self.proved = list(proved)
        self.samples = samples or client.settings.samples

    def off_reason(self) -> str:
        """Why the strategy skips every goal from now on ("" while the server answers)."""
        return self.client.down

    async def prove(self, session: CoqSession, goal: Goal, budget: Budget) -> StrategyResult:
        if self.client.down:
            return _skipped(self.client.down)
        started = time.monotonic()
        cpu_start = session.cpu_seconds()
        checks = LLMChecks()
        tried = 0
        seconds = max(1.0, budget.tactic_seconds)

        def result(
            outcome: Outcome, script: Sequence[str] = (), message: str = ""
        ) -> StrategyResult:
            return checks.on(
                StrategyResult(
                    outcome,
                    tuple(script),
                    tried,
                    session.cpu_seconds() - cpu_start,
                    time.monotonic() - started,
                    message,
                )
            )

        context = await gather_context(
            session,
            goal,
            self.proved,
            self.ledger.attempt_errors(goal.fingerprint),
            seconds=seconds,
        )
        try:
            sample = await self.client.sample(
                WHOLE_SYSTEM, whole_proof_prompt(_prompt_context(context)), self.samples
            )
        except ModelUnavailable as exc:
            return _skipped(str(exc))
        except ModelError as exc:
            checks.requests += exc.requests
            return result(Outcome.FAILED, message=f"model {exc.reason}: {exc}")
        checks.add(sample)
        errors: list[str] = []
        for text in sample.texts:
            if session.cpu_seconds() - cpu_start >= budget.cpu_seconds:
                return result(Outcome.TIMEOUT, message="; ".join(errors))
            sentences = parse_script(text)
            if not sentences:
                errors.append("a reply with no proof script")
                continue
            checks.scripts += 1
            try:
                sentences = check_script(sentences)
            except ScriptRejected as exc:
                checks.refuse(exc)
                errors.append(f"gate: {exc}")
                continue
            tried += 1
            checks.checked += 1
            ran = await session.run_script(sentences, session.root, timeout=seconds)
            if ran.status is TacticStatus.COMPLETE:
                checks.closed += 1
                return result(Outcome.CANDIDATE, sentences)
            errors.append(f"{' '.join(sentences)[:200]}: {ran.message.strip()[:300] or ran.status}")
        return result(Outcome.FAILED, message="; ".join(errors)[-3000:])


class _NextTactics:
    """The model's next-tactic proposals for the search, gated, with their cost counted."""

    def __init__(self, client: LLMClient, context: PromptContext, k: int, calls: int) -> None:
        self.client = client
        self.context = context
        self.k = k
        self.calls_left = calls
        self.checks = LLMChecks()
        self.failure = ""
        #: every tactic the model proposed that passed the gate
        self.proposed: set[str] = set()

    async def __call__(
        self, session: Any, goal_text: str, steps: Sequence[str]
    ) -> list[tuple[str, float]]:
        del session
        if self.calls_left <= 0 or self.failure:
            return []
        self.calls_left -= 1
        prompt = next_tactic_prompt(self.context, steps, goal_text, self.k)
        try:
            sample = await self.client.sample(NEXT_SYSTEM.format(k=self.k), prompt, 1)
        except ModelError as exc:
            self.checks.requests += exc.requests
            self.failure = f"model {exc.reason}: {exc}"
            return []
        self.checks.add(sample)
        tactics = parse_tactics(sample.texts[0], self.k) if sample.texts else []
        if tactics:
            self.checks.scripts += 1
        passed: list[str] = []
        for tactic in tactics:
            try:
                passed.append(check_script([tactic])[0])
            except ScriptRejected as exc:
                self.checks.refuse(exc)
        self.checks.checked += len(passed)
        self.proposed.update(passed)
        # the model's first choice ranks like a confident k-NN suggestion
        return [(t, 1.0 - i / (2 * self.k)) for i, t in enumerate(passed)]


class LLMSearchStrategy(StrategyDefaults):
    """Best-first search whose expansions include the model's next tactics."""

    name = "llm-search"
    weight = "heavy"
    language = "coq"
    uses_slot = True
    needs_ledger = True

    def __init__(
        self,
        client: LLMClient,
        ledger: Ledger,
        proved: Sequence[tuple[str, Sequence[str]]] = (),
        *,
        k: int = 4,
        calls: int = 8,
    ) -> None:
        self.client = client
        self.ledger = ledger
        self.proved = list(proved)
        self.models = FileModels(proved)
        self.k = k
        self.calls = calls

    def off_reason(self) -> str:
        """Why the strategy skips every goal from now on ("" while the server answers)."""
        return self.client.down

    async def prove(self, session: CoqSession, goal: Goal, budget: Budget) -> StrategyResult:
        if self.client.down:
            return _skipped(self.client.down)
        context = await gather_context(
            session,
            goal,
            self.proved,
            self.ledger.attempt_errors(goal.fingerprint),
            seconds=max(1.0, budget.tactic_seconds),
        )
        suggest = _NextTactics(self.client, _prompt_context(context), self.k, self.calls)
        search = SearchStrategy(self.models, suggest=suggest)
        found = await search.prove(session, goal, budget)
        if found.outcome is not Outcome.CANDIDATE and suggest.failure:
            found = replace(found, message=suggest.failure)
        if found.outcome is Outcome.CANDIDATE and set(found.sentences) & suggest.proposed:
            suggest.checks.closed += 1
        return suggest.checks.on(found)


def llm_strategies(
    ledger: Ledger,
    root: Path | None,
    *,
    budget_usd: float = 0.0,
    settings: LLMSettings | None = None,
) -> list[Strategy]:
    """The llm strategies the settings allow; none when no model is configured."""
    settings = settings or load_llm_settings(root)
    if budget_usd > 0:
        settings = replace(settings, budget_usd=budget_usd)
    reason = llm_off_reason(settings) or probe(settings)
    if reason is not None:
        log.warning("the llm strategies are off: %s (orch doctor tells more)", reason)
        return []
    client = LLMClient(settings, make_provider(settings), ledger)
    proved = ledger.proved_statements()
    strategies: list[Strategy] = []
    if settings.mode in (LLMMode.WHOLE, LLMMode.BOTH):
        strategies.append(LLMStrategy(client, ledger, proved))
    if settings.mode in (LLMMode.NEXT, LLMMode.BOTH):
        strategies.append(LLMSearchStrategy(client, ledger, proved))
    return strategies
