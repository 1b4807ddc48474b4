"""The strategy lineup: the one function that builds a profile's strategies.

Every command builds its strategies here (``fill``, ``bg``, ``bank``, the
portfolio arm of ``eval``, the MCP server, and the executors, where attempts
run away from the ledger), so that they all run the same lineup. Each backend
contributes its language's strategies (:meth:`Backend.strategies`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..backends import backends
from ..config import Settings
from ..ledger import Ledger
from ..provers.backend import LineupInputs
from ..strategies.base import Strategy

__all__ = ["build_lineup"]


def build_lineup(
    settings: Settings,
    ledger: Ledger | None,
    *,
    root: Path | None = None,
    popular: Sequence[str] | None = None,
) -> list[Strategy]:
    """The strategies of ``settings.profile`` for every language, in the a-priori order.

    With a ledger, the k-NN models and the ``cached`` strategy start from the
    proofs it holds, and the strategies that keep state there (the market, the
    LLM cache) are in. Without one (an executor), ``popular`` feeds ``cached``
    and those strategies are left out.
    """
    if popular is None:
        popular = ledger.popular_scripts() if ledger is not None else ()
    lineup: list[Strategy] = []
    for backend in backends():
        inputs = LineupInputs(
            profile=settings.profile,
            proved=ledger.proved_statements(backend.language) if ledger is not None else (),
            popular=tuple(popular),
            allowed_imports=settings.allowed_imports,
            ledger=ledger,
            root=root,
            use_llm=settings.use_llm,
            llm_budget_usd=settings.llm_budget_usd,
        )
        lineup += backend.strategies(inputs)
    return lineup
