"""Finished proofs as examples to learn from, and the nearest ones to a goal.

A :class:`ProofExample` is one finished proof: the declared name, the
statement as written, the proof's sentences, and where it comes from (the
file's own text above the hole, a project file the file imports, or a library
module its session loads). What a goal may see is decided by the backend
(``coq/learning.py``); this module only stores and ranks.

:class:`Corpus` ranks examples by the cosine similarity of the k-NN model's
hashed statement features (:func:`~proof_orchestrator.search.features.features`),
through an inverted index: a query touches only the examples that share a
feature with it (numpy adds the scores), so a corpus of the stdlib and
mathcomp (tens of thousands of proofs) answers in milliseconds.
"""

from __future__ import annotations

import functools
import math
import re
import zlib
from collections import OrderedDict, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..search.features import GoalSyntax, features

__all__ = ["Corpus", "ProofExample", "statement_features"]

#: the keyword and name that open a declaration (``Lemma foo``): not part of what it states
_HEADER = re.compile(r"^\s*(?:#\[[^\]]*\]\s*)?(?:[A-Z][a-z]+\s+)*?[A-Z][a-z]+\s+[\w'.]+\s*")
#: a run of symbols: a notation's pieces (``:&:``, ``++``, ``\in``) say much about a statement
_SYMBOLS = re.compile(r"\\\w+|[^\w\s()\[\]{},.;'\"\\]+")


def statement_features(statement: str, syntax: GoalSyntax) -> dict[int, float]:
    """The k-NN features of what a declaration states, with its notations' symbols.

    The declaration's keyword and name are left out, and every run of symbols
    (``:|:``, ``++``, ``\\subset``) counts as a word: two statements about
    ``:&:`` and ``:|:`` differ there, where identifiers alone would not see it.
    (Kept per statement: a file's proofs above a hole are read again for every
    hole of the file and each time a proof is found; do not change the result.)
    """
    return _statement_features(statement, syntax)


@functools.lru_cache(maxsize=1 << 16)
def _statement_features(statement: str, syntax: GoalSyntax) -> dict[int, float]:
    body = _HEADER.sub("", statement, count=1)
    found = dict(features(body, syntax))
    symbols = [s for s in _SYMBOLS.findall(body) if s not in (":", "=>")]
    if symbols:
        scale = 1.0 / math.sqrt(len(symbols))
        for symbol in symbols:
            key = zlib.crc32(("sym:" + symbol).encode()) & 0xFFFFF
            found[key] = found.get(key, 0.0) + scale
    norm = math.sqrt(sum(v * v for v in found.values())) or 1.0
    return {k: v / norm for k, v in found.items()}


@dataclass(frozen=True, slots=True)
class ProofExample:
    """One finished proof that a goal may learn from."""

    name: str
    #: the statement as written (the declaration's sentence, without its keyword's modifiers)
    statement: str
    #: the proof's sentences, ``Proof.`` and the closing ``Qed.`` left out
    script: tuple[str, ...]
    #: where it was read: a module's logical name, or "" for the goal's own file
    origin: str = ""

    @property
    def is_one_sentence(self) -> bool:
        return len(self.script) == 1


#: statements whose ranking a corpus keeps
RANKINGS_KEPT = 64


class Corpus:
    """Examples, ranked against a goal by statement similarity."""

    def __init__(self, syntax: GoalSyntax, examples: Iterable[ProofExample] = ()) -> None:
        self.syntax = syntax
        self.examples: list[ProofExample] = []
        #: feature -> (the examples that have it, its weight in each)
        self._postings: defaultdict[int, tuple[list[int], list[float]]] = defaultdict(
            lambda: ([], [])
        )
        #: the postings as arrays, made at first use (dropped when a feature gains examples)
        self._arrays: dict[int, tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]] = {}
        #: the ranking of recent statements (every strategy asks about the same goal)
        self._ranked: OrderedDict[str, list[tuple[int, float]]] = OrderedDict()
        self.extend(examples)

    def __len__(self) -> int:
        return len(self.examples)

    def extend(self, examples: Iterable[ProofExample]) -> None:
        """Add examples; the kept rankings take them in (a proof found in the run is
        ranked at once, without ranking the whole corpus again)."""
        added: list[tuple[int, dict[int, float]]] = []
        for example in examples:
            index = len(self.examples)
            self.examples.append(example)
            found = statement_features(example.statement, self.syntax)
            for key, weight in found.items():
                ids, weights = self._postings[key]
                ids.append(index)
                weights.append(weight)
                self._arrays.pop(key, None)
            added.append((index, found))
        if not added:
            return
        for statement, ranked in self._ranked.items():
            query = statement_features(statement, self.syntax)
            extra = [
                (index, score)
                for index, found in added
                if (score := sum(w * found[k] for k, w in query.items() if k in found))
            ]
            if extra:
                # the order of a ranking from scratch: best first, then by index
                ranked.extend(extra)
                ranked.sort(key=lambda pair: (-pair[1], pair[0]))

    def nearest(
        self,
        statement: str,
        k: int = 8,
        *,
        exclude: Sequence[str] = (),
        max_sentences: int | None = None,
    ) -> list[tuple[float, ProofExample]]:
        """The ``k`` examples whose statements are most like ``statement``, best first.

        ``exclude`` names examples never returned (the goal's own name: a
        library copy may declare it too); ``max_sentences`` keeps short proofs only.
        """
        ranked = self._ranking(statement)
        found: list[tuple[float, ProofExample]] = []
        seen: set[tuple[str, tuple[str, ...]]] = set()
        for index, score in ranked:
            example = self.examples[index]
            if example.name in exclude or score <= 0:
                continue
            if max_sentences is not None and len(example.script) > max_sentences:
                continue
            same = (example.statement, example.script)
            if same in seen:
                continue
            seen.add(same)
            found.append((score, example))
            if len(found) >= k:
                break
        return found

    def _ranking(self, statement: str) -> list[tuple[int, float]]:
        """Every example with a shared feature, as (index, score), best first; the
        last :data:`RANKINGS_KEPT` statements' rankings are kept."""
        ranked = self._ranked.get(statement)
        if ranked is not None:
            self._ranked.move_to_end(statement)
            return ranked
        scores = np.zeros(len(self.examples))
        for key, weight in statement_features(statement, self.syntax).items():
            posting = self._posting(key)
            if posting is not None:
                ids, weights = posting  # an example holds a feature once: no repeated ids
                scores[ids] += weight * weights
        hit = np.flatnonzero(scores)
        order = hit[np.lexsort((hit, -scores[hit]))]  # best first, then by index
        ranked = list(zip(order.tolist(), scores[order].tolist(), strict=True))
        self._ranked[statement] = ranked
        if len(self._ranked) > RANKINGS_KEPT:
            self._ranked.popitem(last=False)
        return ranked

    def _posting(self, key: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]] | None:
        arrays = self._arrays.get(key)
        if arrays is None:
            posting = self._postings.get(key)
            if posting is None:
                return None
            arrays = self._arrays[key] = (np.array(posting[0]), np.array(posting[1]))
        return arrays
