"""Premise retrieval: rank the lemmas visible at a hole against its goal, and use the best.

Visible lemmas are (a) the file's own lemma-like declarations *before* the
hole, read from the sentences the session loaded (so never the lemma under
proof or anything after it), and (b) the lemmas of the library modules loaded
at that point (``Print Libraries``), read from their sources under Coq's
``theories`` folder. They are ranked against the goal with BM25 (rank-bm25)
over identifier tokens (names are split at ``_`` and ``.``), and the best
become templates: ``rewrite L``, ``rewrite <- L``, ``apply L``,
``eauto using L1, L2, L3``, and ``hauto use: L1, L2, L3`` where CoqHammer's
tactics are loaded.
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rank_bm25 import BM25Okapi  # type: ignore[import-untyped]

from ..coqsyntax import split_sentences
from ..errors import SourceSyntaxError
from ..project.coq_holes import LEMMA_KEYWORDS
from ..provers.coq import CoqSession
from .micro import _QuickTactics

__all__ = [
    "INDEXES",
    "Premise",
    "PremiseIndex",
    "PremiseIndexes",
    "RetrievalStrategy",
    "file_premises",
    "index_for",
    "library_index",
    "library_premises",
    "loaded_modules",
    "tokens",
]

#: declarations whose statement can serve as a premise
PREMISE_KEYWORDS = LEMMA_KEYWORDS | {"Axiom", "Hypothesis", "Conjecture"}
#: where Debian installs Coq's standard library sources
THEORIES = Path("/usr/lib/ocaml/coq/theories")
_DECLARATION = re.compile(
    r"^(?:#\[[^\]]*\]\s*)?(?:(?:Local|Global|Polymorphic|Program)\s+)*"
    r"(?P<kw>[A-Z][a-z]+)\s+(?P<name>[A-Za-z_][\w']*)\s*(?P<rest>.*)$",
    re.S,
)


@dataclass(frozen=True, slots=True)
class Premise:
    name: str
    statement: str
    #: the module that declares it ("" for the file itself)
    module: str = ""


def tokens(text: str) -> list[str]:
    """Identifier pieces of ``text``, lower-cased (``Nat.add_comm`` -> nat, add, comm)."""
    words = re.findall(r"[A-Za-z_][\w']*", text)
    out: list[str] = []
    for word in words:
        out.extend(part.lower() for part in re.split(r"[_.']", word) if len(part) > 1)
    return out


def _premises(codes: Iterable[str], module: str) -> list[Premise]:
    found: list[Premise] = []
    for code in codes:
        match = _DECLARATION.match(code)
        if match and match.group("kw") in PREMISE_KEYWORDS:
            found.append(
                Premise(match.group("name"), " ".join(match.group("rest").split()), module)
            )
    return found


def file_premises(prefix: Sequence[str]) -> list[Premise]:
    """Lemmas declared by the loaded sentences, minus the last one (the goal's statement)."""
    statement = next(
        (i for i in range(len(prefix) - 1, -1, -1) if _DECLARATION.match(prefix[i])), len(prefix)
    )
    return _premises(prefix[:statement], "")


@functools.cache
def _module_premises(module: str) -> tuple[Premise, ...]:
    if not module.startswith("Coq."):
        return ()
    source = THEORIES.joinpath(*module.removeprefix("Coq.").split(".")).with_suffix(".v")
    try:
        text = source.read_text(encoding="utf-8")
        sentences = split_sentences(text)
    except (OSError, UnicodeDecodeError, SourceSyntaxError):
        return ()
    return tuple(_premises((s.code for s in sentences), module))


def library_premises(modules: Iterable[str]) -> list[Premise]:
    return [p for module in modules for p in _module_premises(module)]


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
    _doc_freqs: list[dict[str, int]]
    _doc_len: list[int]
    _nd: dict[str, int]

    def __init__(self, premises: Sequence[Premise], base: PremiseIndex | None = None) -> None:
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
            frequencies = _counts(tokens(premise.name) * 2 + tokens(premise.statement))
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
        for word in tokens(goal):
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


@functools.lru_cache(maxsize=16)
def library_index(modules: tuple[str, ...]) -> PremiseIndex:
    """The index of the lemmas of ``modules`` (built once per set of loaded modules)."""
    return PremiseIndex(library_premises(modules))


async def loaded_modules(session: CoqSession) -> list[str]:
    """The library modules loaded at the session's position."""
    output = await session.query("Print Libraries.")
    return re.findall(r"\b(Coq(?:\.[A-Za-z_][\w']*)+)", output)


class PremiseIndexes:
    """Premise indexes per position: one per loaded prefix, not one per attempt.

    The key is the project's flags and folder and the sentences the session
    loaded (the statement under proof and its opener last), so every attempt
    on a hole, and every arm of ``orch eval`` on it, shares one index, while a
    hole elsewhere gets its own: the file's premises are always exactly those
    declared above the statement. The library part is shared by every position
    that loads the same modules (:func:`library_index`).
    """

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._indexes: OrderedDict[tuple[object, ...], PremiseIndex] = OrderedDict()
        #: indexes built (misses) and reused (hits), for tests and profiling
        self.built = 0
        self.reused = 0

    @staticmethod
    def key(session: CoqSession) -> tuple[object, ...]:
        return (session.prover.flags, session.prover.cwd, session.prefix)

    async def index_for(self, session: CoqSession) -> PremiseIndex:
        key = self.key(session)
        index = self._indexes.get(key)
        if index is not None:
            self.reused += 1
            self._indexes.move_to_end(key)
            return index
        modules = tuple(await loaded_modules(session))
        index = await asyncio.to_thread(
            lambda: PremiseIndex(file_premises(session.prefix), library_index(modules))
        )
        self.built += 1
        self._indexes[key] = index
        while len(self._indexes) > self.size:
            self._indexes.popitem(last=False)
        return index


#: the indexes shared by every strategy of this process
INDEXES = PremiseIndexes()


async def index_for(session: CoqSession) -> PremiseIndex:
    """The premises visible at ``session``'s hole, indexed (cached per position).

    Reading the library sources and counting their words takes seconds for a
    file that loads much of the stdlib, so a new index is built in a thread:
    the event loop (the CPU governor, cancellation on Ctrl-C) is never held up.
    """
    return await INDEXES.index_for(session)


class RetrievalStrategy(_QuickTactics):
    """Tactic templates over the premises that rank best against the goal."""

    name = "retrieval"

    def __init__(self, k: int = 6) -> None:
        self.k = k

    async def scripts(self, session: CoqSession) -> list[str]:
        index = await index_for(session)
        probe = await session.run_tactic("intros.", session.root, timeout=2)
        goal = probe.goals[0] if probe.ok and probe.goals else session.goal.statement
        await session.back_to(session.root)
        best = [p.name for p in index.rank(goal, self.k, exclude=[session.goal.name])]
        if not best:
            return []
        scripts: list[str] = []
        for name in best[:4]:
            scripts += [
                f"intros; rewrite {name}; auto.",
                f"intros; rewrite <- {name}; auto.",
                f"intros; apply {name}; auto.",
                f"intros; erewrite {name}; eauto.",
            ]
        group = ", ".join(best[:3])
        scripts.insert(0, f"intros; eauto using {group}.")
        if await session.locate_ltac("Hammer.Tactics.Tactics.sauto") is not None:
            scripts.insert(1, f"hauto use: {group}.")
            scripts.insert(2, f"sauto use: {group}.")
        return scripts
