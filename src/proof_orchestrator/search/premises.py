"""BM25 over premises (name and statement), for any prover.

:class:`PremiseIndex` is rank-bm25's Okapi BM25 with an inverted index: the
scores and the order, ties included, are those of ``BM25Okapi.get_scores``
over the whole corpus, but ranking touches only the premises that share a
word with the goal, and a cached library index can be extended with a file's
premises without counting the library's words again. Which premises are
visible at a hole is the prover's business (``coq/strategies/retrieval.py`` for
Coq, ``lean/strategies/premises.py`` for Lean); words are cut the way the
prover's :class:`~.features.GoalSyntax` says.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from rank_bm25 import BM25Okapi  # type: ignore[import-untyped]

from .features import GoalSyntax

__all__ = ["Premise", "PremiseIndex", "tokens"]


@dataclass(frozen=True, slots=True)
class Premise:
    name: str
    statement: str
    #: the module that declares it ("" for the file itself)
    module: str = ""
    #: the declaring keyword where it matters ("def": unfold it rather than rewrite with it)
    kind: str = ""


def tokens(text: str, syntax: GoalSyntax) -> list[str]:
    """Identifier pieces of ``text``, lower-cased (``Nat.add_comm`` -> nat, add, comm), then
    its operators where the syntax reads them (``<=``, ``~~``)."""
    out: list[str] = []
    for word in syntax.word.findall(text):
        out.extend(part.lower() for part in syntax.word_breaks.split(word) if len(part) > 1)
    if syntax.symbol is not None:
        out.extend(syntax.symbol.findall(text))
    return out


class _Okapi(BM25Okapi):  # type: ignore[misc]
    """rank-bm25's Okapi BM25 over term counts that are already made.

    ``BM25Okapi(corpus)`` counts every document's words again; here the counts
    of a cached library index are extended with a file's few premises, and the
    library computes the IDF (with its epsilon floor) as usual. The statistics
    are exactly those ``BM25Okapi`` builds from the same corpus.
    """

    def __init__(
        self, doc_freqs: list[dict[str, int]], doc_len: list[int], nd: dict[str, int]
    ) -> None:
        self.k1, self.b, self.epsilon = 1.5, 0.75, 0.25
        self.tokenizer = None
        self.doc_freqs = doc_freqs
        self.doc_len = doc_len
        self.corpus_size = len(doc_len)
        self.avgdl = sum(doc_len) / self.corpus_size
        self.idf: dict[str, float] = {}
        self._calc_idf(nd)


def _counts(words: Sequence[str]) -> dict[str, int]:
    frequencies: dict[str, int] = {}
    for word in words:
        frequencies[word] = frequencies.get(word, 0) + 1
    return frequencies


#: word -> (indices of the premises that hold it, how many times each holds it)
_Postings = dict[str, tuple["np.ndarray[Any, Any]", "np.ndarray[Any, Any]"]]


class PremiseIndex:
    """BM25 over premises (name and statement).

    ``base`` (the index of the loaded library modules, cached and shared by
    every hole that loads them) is extended with ``premises`` without counting
    its words again. Ranking scores only the premises that share a word with
    the goal (an inverted index); the scores and the order, ties included, are
    those of rank-bm25's ``get_scores`` over the whole corpus.
    """

    _names: set[str]
    syntax: GoalSyntax
    _doc_freqs: list[dict[str, int]]
    _doc_len: list[int]
    _nd: dict[str, int]

    def __init__(
        self,
        premises: Sequence[Premise],
        base: PremiseIndex | None = None,
        syntax: GoalSyntax | None = None,
    ) -> None:
        """``syntax`` is the premises' prover's (the ``base`` index's when there is one)."""
        if base is not None:
            syntax = base.syntax
        if syntax is None:
            raise TypeError("a premise index needs its prover's goal syntax (or a base index)")
        self.syntax = syntax
        if base is not None and any(p.name in base._names for p in premises):
            # a file's premise shadows a library one in its place: count everything again
            premises, base = [*base.premises, *premises], None
        # one premise per name: the file's own shadow the library's
        unique: dict[str, Premise] = {}
        for premise in premises:
            unique[premise.name] = premise
        own = list(unique.values())
        start = len(base.premises) if base is not None else 0
        self.premises: list[Premise] = [*(base.premises if base else ()), *own]
        self._names = {p.name for p in self.premises}
        doc_freqs: list[dict[str, int]] = list(base._doc_freqs) if base else []
        doc_len: list[int] = list(base._doc_len) if base else []
        nd: dict[str, int] = dict(base._nd) if base else {}
        grouped: dict[str, tuple[list[int], list[int]]] = {}
        for offset, premise in enumerate(own):
            words = tokens(premise.name, syntax) * 2 + tokens(premise.statement, syntax)
            frequencies = _counts(words)
            doc_freqs.append(frequencies)
            doc_len.append(sum(frequencies.values()))
            for word, count in frequencies.items():
                nd[word] = nd.get(word, 0) + 1
                ids, counts = grouped.setdefault(word, ([], []))
                ids.append(start + offset)
                counts.append(count)
        self._doc_freqs, self._doc_len, self._nd = doc_freqs, doc_len, nd
        self._doc_len_array = np.array(doc_len)
        #: the base's postings (shared, never changed) and this index's own
        self._base: _Postings = base._postings if base is not None else {}
        self._own: _Postings = {w: (np.array(i), np.array(c)) for w, (i, c) in grouped.items()}
        self._bm25 = _Okapi(doc_freqs, doc_len, nd) if self.premises else None

    @property
    def _postings(self) -> _Postings:
        """Every word's premises, the base's and this index's own together."""
        if not self._base:
            return self._own
        merged = dict(self._base)
        for word, (ids, counts) in self._own.items():
            if word in merged:
                old_ids, old_counts = merged[word]
                merged[word] = (
                    np.concatenate([old_ids, ids]),
                    np.concatenate([old_counts, counts]),
                )
            else:
                merged[word] = (ids, counts)
        return merged

    def scores(self, goal: str) -> np.ndarray[Any, Any]:
        """BM25 score of every premise against ``goal`` (rank-bm25's ``get_scores``)."""
        score = np.zeros(len(self.premises))
        bm25 = self._bm25
        if bm25 is None:
            return score
        k1, b, avgdl = bm25.k1, bm25.b, bm25.avgdl
        for word in tokens(goal, self.syntax):
            parts = [p for p in (self._base.get(word), self._own.get(word)) if p is not None]
            if not parts:
                continue  # a word no premise holds adds 0 to every score
            where = np.concatenate([ids for ids, _ in parts])
            q_freq = np.concatenate([counts for _, counts in parts])
            doc_len = self._doc_len_array[where]
            # rank-bm25's expression, on the premises that hold the word (0 elsewhere)
            score[where] += (bm25.idf.get(word) or 0) * (
                q_freq * (k1 + 1) / (q_freq + k1 * (1 - b + b * doc_len / avgdl))
            )
        return score

    def rank(self, goal: str, k: int = 8, exclude: Iterable[str] = ()) -> list[Premise]:
        if self._bm25 is None:
            return []
        banned = set(exclude)
        out: list[Premise] = []
        for i in np.argsort(-self.scores(goal), kind="stable"):
            premise = self.premises[i]
            if premise.name not in banned:
                out.append(premise)
                if len(out) == k:
                    break
        return out
