"""The prover-neutral search core: proof-state interface, best-first search, features, BM25.

Nothing here imports a prover: Coq and Lean plug in through
:class:`~.proofstate.ProofStates` and the :class:`~.features.GoalSyntax` of their
goal displays.
"""

from .bestfirst import Expander, SearchEnd, SearchFound, best_first
from .features import GoalSyntax, TacticModel, features, similarity
from .memory import GoalMemory, SearchMemory
from .premises import Premise, PremiseIndex, tokens
from .proofstate import Hypothesis, ProofStates, hypotheses

__all__ = [
    "Expander",
    "GoalMemory",
    "GoalSyntax",
    "Hypothesis",
    "Premise",
    "PremiseIndex",
    "ProofStates",
    "SearchEnd",
    "SearchFound",
    "SearchMemory",
    "TacticModel",
    "best_first",
    "features",
    "hypotheses",
    "similarity",
    "tokens",
]
