"""Model calls with a cache, a USD budget and their own concurrency limit.

Replies are cached in the ledger by (provider, model, prompt hash, sampling
settings): asking again costs nothing and makes no request. Before each
request the run's spend is compared with its cap; past it no request is
made (:class:`~proof_orchestrator.errors.ModelBudgetExhausted`). Requests
wait on a semaphore of their own, never on a CPU slot of the governor.

A server that cannot be connected to after the retries (it was stopped, it
crashed) is down for the rest of the run: one warning line says so, and
every later call raises :class:`~proof_orchestrator.errors.ModelUnavailable`
at once, without a request (the strategies then skip their goals).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from dataclasses import dataclass

from ..errors import ModelBudgetExhausted, ModelError, ModelUnavailable
from ..ledger import Ledger
from .providers import Provider
from .settings import LLMSettings

__all__ = ["LLMClient", "Sample", "prompt_hash"]

log = logging.getLogger(__name__)


def prompt_hash(system: str, prompt: str) -> str:
    """The cache key of a request: its system text and prompt."""
    return hashlib.sha256(f"{system}\x00{prompt}".encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Sample:
    """Replies to one prompt, and what they cost this time (zero when cached)."""

    texts: tuple[str, ...]
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    latency_seconds: float = 0.0
    cached: bool = False
    #: HTTP requests made for it (0 when cached), and the seconds of each that succeeded
    requests: int = 0
    request_seconds: tuple[float, ...] = ()


class LLMClient:
    """One provider, the cache in the ledger, the budget and the concurrency limit."""

    def __init__(self, settings: LLMSettings, provider: Provider, ledger: Ledger) -> None:
        self.settings = settings
        self.provider = provider
        self.ledger = ledger
        self.spent_usd = 0.0
        #: requests this client sent (cache hits send none)
        self.requests = 0
        #: why the model server is off for the rest of the run ("" while it answers)
        self.down = ""
        self._limit = asyncio.Semaphore(settings.concurrency)

    def _went_down(self, error: ModelError) -> None:
        if self.down:
            return
        where = self.settings.base_url or f"the {self.provider.kind} API"
        self.down = (
            f"the model server at {where} stopped answering ({error.reason}); "
            "the llm strategies are off for the rest of this run"
        )
        log.warning("%s", self.down)

    def cache_key(self, system: str, prompt: str, n: int) -> tuple[str, str, dict[str, object]]:
        sampling: dict[str, object] = {
            "n": n,
            "temperature": self.settings.temperature,
            "max_tokens": self.settings.max_tokens,
        }
        digest = prompt_hash(system, prompt)
        key = hashlib.sha256(
            json.dumps([self.provider.kind, self.provider.model, digest, sampling]).encode()
        ).hexdigest()
        return key, digest, sampling

    async def aclose(self) -> None:
        """Close the provider's connections."""
        await self.provider.aclose()

    @property
    def exhausted(self) -> bool:
        cap = self.settings.budget_usd
        return cap > 0 and self.spent_usd >= cap

    async def sample(self, system: str, prompt: str, n: int) -> Sample:
        """``n`` replies to ``prompt``: from the cache, or from the model within the budget."""
        key, digest, sampling = self.cache_key(system, prompt, n)
        cached = self.ledger.llm_response(key)
        if cached is not None:
            return Sample(tuple(cached.texts), cached=True)
        if self.down:
            raise ModelUnavailable(self.down)
        async with self._limit:
            if self.down:
                raise ModelUnavailable(self.down)
            if self.exhausted:
                raise ModelBudgetExhausted(
                    f"the model budget of ${self.settings.budget_usd:.4f} is spent "
                    f"(${self.spent_usd:.4f}); no further request is made"
                )
            try:
                done = await self.provider.complete(
                    system,
                    prompt,
                    n=n,
                    temperature=self.settings.temperature,
                    max_tokens=self.settings.max_tokens,
                )
            except ModelError as exc:
                if exc.reason == "connection":
                    self._went_down(exc)
                raise
            self.requests += done.requests
            cost = self.settings.cost(done.tokens_in, done.tokens_out)
            self.spent_usd += cost
        self.ledger.store_llm_response(
            key=key,
            provider=self.provider.kind,
            model=self.provider.model,
            prompt_hash=digest,
            settings=sampling,
            texts=done.texts,
            tokens_in=done.tokens_in,
            tokens_out=done.tokens_out,
            cost_usd=cost,
            latency_seconds=done.latency_seconds,
        )
        return Sample(
            done.texts,
            done.tokens_in,
            done.tokens_out,
            cost,
            done.latency_seconds,
            cached=False,
            requests=done.requests,
            request_seconds=done.request_seconds,
        )
