"""The strong strategies (Coq and Lean), built the same way on the driver and in an executor.

:func:`proof_orchestrator.run.worker.default_strategies` puts them in a profile's
lineup; :func:`proof_orchestrator.run.executors.make_strategies` builds every
strategy where an attempt runs (a Ray actor has no ledger).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..coq.strategies.hammer import HammerStrategy, SautoStrategy
from ..coq.strategies.knn import FileModels
from ..coq.strategies.search import SearchStrategy
from ..lean.strategies.knn import LeanModels
from ..lean.strategies.search import LeanSearchStrategy
from ..strategies.base import Strategy

__all__ = ["strong_strategies"]


def strong_strategies(
    proved: Sequence[tuple[str, Sequence[str]]] = (),
    allow_tactics_import: bool = False,
    lean_proved: Sequence[tuple[str, Sequence[str]]] = (),
) -> list[Strategy]:
    """Search, ``sauto`` and ``hammer`` (Coq); ``lean-search`` (Lean).

    ``proved`` / ``lean_proved`` (statement, script) pairs seed the searches'
    k-NN models with the proofs found before (the ledger's), besides the
    file's own earlier proofs.
    """
    return [
        SearchStrategy(FileModels(proved)),
        SautoStrategy(allow_tactics_import),
        HammerStrategy(allow_tactics_import),
        LeanSearchStrategy(LeanModels(lean_proved)),
    ]
