"""Cheap features of a goal display, for nearest-neighbour tactic suggestion.

The identifiers of the conclusion and of the hypotheses (kept apart), the
conclusion's head and shape, and identifier bigrams of the conclusion, hashed
into integers and normalised. What an identifier is, where the hypotheses end
and which symbols mark a shape depend on the prover's goal display: a
:class:`GoalSyntax` says it, and each backend has its own
(:attr:`~..provers.backend.Backend.goal_syntax`: Coq's hypotheses above
``=====``, Lean's above ``⊢``). Nothing here assumes one.
"""

from __future__ import annotations

import itertools
import math
import zlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..provers.syntax import GoalSyntax

__all__ = ["GoalSyntax", "TacticModel", "features", "nearest_first", "similarity"]


def _hash(text: str) -> int:
    return zlib.crc32(text.encode()) & 0xFFFFF


def features(goal_text: str, syntax: GoalSyntax) -> dict[int, float]:
    """Hashed features of a goal display (hypotheses above the separator, conclusion below)."""
    above, found, below = goal_text.rpartition(syntax.separator)
    below = below.lstrip(syntax.separator[0])
    if not found:
        above, below = "", goal_text
    conclusion = syntax.ident.findall(below)
    counts: Counter[int] = Counter()
    for word in conclusion:
        counts[_hash("c:" + word)] += 2
    for left, right in itertools.pairwise(conclusion):
        counts[_hash(f"b:{left}>{right}")] += 1
    for line in above.splitlines():
        _, colon, kind = line.partition(":")
        if colon:
            for word in syntax.ident.findall(kind):
                counts[_hash("h:" + word)] += 1
    stripped = below.strip()
    if conclusion:
        counts[_hash("head:" + conclusion[0])] += 3
    for shape in syntax.shapes:
        if shape in stripped:
            counts[_hash("s:" + shape)] += 1
    norm = math.sqrt(sum(v * v for v in counts.values())) or 1.0
    return {k: v / norm for k, v in counts.items()}


def similarity(a: dict[int, float], b: dict[int, float]) -> float:
    """Cosine similarity of two feature vectors from :func:`features`."""
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(k, 0.0) for k, v in a.items())


@dataclass(slots=True)
class TacticModel:
    """Stored (state features, tactic) pairs and the nearest-neighbour suggestion."""

    #: how the goals are displayed (the backend's)
    syntax: GoalSyntax
    pairs: list[tuple[dict[int, float], str]] = field(default_factory=list)

    def add(self, goal_text: str, tactic: str) -> None:
        self.pairs.append((features(goal_text, self.syntax), tactic))

    def __len__(self) -> int:
        return len(self.pairs)

    def suggest(self, goal_text: str, k: int = 8, neighbours: int = 24) -> list[tuple[str, float]]:
        """Up to ``k`` tactics with scores, from the ``neighbours`` most similar states."""
        if not self.pairs:
            return []
        query = features(goal_text, self.syntax)
        scored = sorted(
            ((similarity(query, f), tactic) for f, tactic in self.pairs), key=lambda p: -p[0]
        )[:neighbours]
        votes: dict[str, float] = {}
        for score, tactic in scored:
            if score > 0:
                votes[tactic] = votes.get(tactic, 0.0) + score
        return sorted(votes.items(), key=lambda p: -p[1])[:k]


def nearest_first(
    statement: str,
    proved: Sequence[tuple[str, Sequence[str]]],
    popular: Sequence[str],
    syntax: GoalSyntax,
    k: int = 6,
) -> list[str]:
    """The one-sentence proofs of the ``k`` most similar proved statements, then ``popular``."""
    query = features(statement, syntax)
    ranked = sorted(
        (
            (similarity(query, features(text, syntax)), script)
            for text, script in proved
            if len(script) == 1
        ),
        key=lambda pair: -pair[0],
    )
    near = [script[0] for score, script in ranked[:k] if score > 0]
    return list(dict.fromkeys([*near, *popular]))
