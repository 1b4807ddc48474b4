"""The strong strategies, built the same way on the driver and in an executor.

:func:`proof_orchestrator.worker.default_strategies` puts them in a profile's
lineup; :func:`proof_orchestrator.executors.make_strategies` builds every
strategy where an attempt runs (a Ray actor has no ledger).
"""

from __future__ import annotations

from collections.abc import Sequence

from .strategies.base import Strategy
from .strategies.hammer import HammerStrategy, SautoStrategy
from .strategies.knn import FileModels
from .strategies.search import SearchStrategy

__all__ = ["strong_strategies"]


def strong_strategies(
    proved: Sequence[tuple[str, Sequence[str]]] = (), allow_tactics_import: bool = False
) -> list[Strategy]:
    """Search, ``sauto`` and ``hammer``.

    ``proved`` (statement, script) pairs seed the search's k-NN model with the
    proofs found before (the ledger's), besides the file's own earlier proofs.
    """
    return [
        SearchStrategy(FileModels(proved)),
        SautoStrategy(allow_tactics_import),
        HammerStrategy(allow_tactics_import),
    ]
