"""What is known about a goal, gathered for an agent or a model.

The goal as the prover shows it (read in the session, nothing is changed),
the premises that retrieval ranks best, the nearest proved statements with
their proofs (from the file's own earlier ``Qed`` proofs and the ledger's
verified ones, by the k-NN features), and the errors of earlier attempts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...goals import Goal
from ...search.proofstate import show_goal
from ..display import COQ
from ..session import CoqSession
from .knn import features, proofs_in_prefix, similarity
from .retrieval import index_for

__all__ = ["GoalContext", "gather_context", "nearest_proofs", "show_goal"]


@dataclass(frozen=True, slots=True)
class GoalContext:
    statement: str
    #: the goal as coqtop prints it: hypotheses, the bar, the conclusion
    goal: str
    #: (name, statement) of the best-ranked premises
    premises: tuple[tuple[str, str], ...]
    #: (statement, proof script) of the nearest proved goals
    neighbours: tuple[tuple[str, str], ...]
    #: (strategy, script, message) of earlier failed attempts on this goal
    errors: tuple[tuple[str, str, str], ...]


def nearest_proofs(
    statement: str,
    prefix: Sequence[str],
    proved: Sequence[tuple[str, Sequence[str]]],
    k: int = 4,
) -> list[tuple[str, str]]:
    """The ``k`` proved statements most like ``statement``, with their proofs."""
    pool: list[tuple[str, str]] = []
    for proof in proofs_in_prefix(prefix[:-1]):
        body = [s for s in proof.body if s.strip() != "Proof."]
        pool.append((prefix[proof.statement], " ".join(body)))
    pool += [(s, " ".join(script)) for s, script in proved if script]
    query = features(statement, COQ)
    scored = sorted(
        ((similarity(query, features(s, COQ)), s, p) for s, p in dict.fromkeys(pool)),
        key=lambda t: -t[0],
    )
    return [(s, p) for score, s, p in scored[:k] if score > 0]


async def gather_context(
    session: CoqSession,
    goal: Goal,
    proved: Sequence[tuple[str, Sequence[str]]],
    errors: Sequence[tuple[str, str, str]],
    *,
    premises: int = 8,
    neighbours: int = 4,
    seconds: float = 2.0,
) -> GoalContext:
    display = await show_goal(session, seconds)
    index = await index_for(session)
    ranked = index.rank(display or goal.statement, premises, exclude=[goal.name])
    return GoalContext(
        goal.statement,
        display,
        tuple((p.name, p.statement) for p in ranked),
        tuple(nearest_proofs(goal.statement, session.prefix, proved, neighbours)),
        tuple(errors),
    )
