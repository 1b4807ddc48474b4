"""The cache of model replies (an LLM is asked the same prompt once)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select

from ._core import LedgerCore, insert_ignore, retrying
from .models import LlmResponse, utcnow

__all__ = ["LlmCache"]


class LlmCache(LedgerCore):
    """Looking up and storing a model's replies by cache key."""

    @retrying
    def llm_response(self, key: str) -> LlmResponse | None:
        """The cached replies for a cache key, if any."""
        with self._session() as s:
            return s.scalar(select(LlmResponse).where(LlmResponse.key == key))

    @retrying
    def store_llm_response(
        self,
        *,
        key: str,
        provider: str,
        model: str,
        prompt_hash: str,
        settings: dict[str, object],
        texts: Sequence[str],
        tokens_in: int,
        tokens_out: int,
        cost_usd: float,
        latency_seconds: float,
    ) -> None:
        """Cache a model's replies (a key already cached keeps its first replies)."""
        with self._transaction() as connection:
            connection.execute(
                insert_ignore(connection, LlmResponse, ("key",)).values(
                    key=key,
                    provider=provider,
                    model=model,
                    prompt_hash=prompt_hash,
                    settings=settings,
                    texts=list(texts),
                    tokens_in=tokens_in,
                    tokens_out=tokens_out,
                    cost_usd=cost_usd,
                    latency_seconds=latency_seconds,
                    created_at=utcnow(),
                )
            )
