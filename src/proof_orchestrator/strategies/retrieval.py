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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rank_bm25 import BM25Okapi  # type: ignore[import-untyped]

from ..coqsyntax import split_sentences
from ..errors import SourceSyntaxError
from ..project.coq_holes import LEMMA_KEYWORDS
from ..provers.coq import CoqSession
from .micro import _QuickTactics

__all__ = [
    "Premise",
    "PremiseIndex",
    "RetrievalStrategy",
    "file_premises",
    "library_premises",
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


class PremiseIndex:
    """BM25 over premises (name and statement)."""

    def __init__(self, premises: Sequence[Premise]) -> None:
        # one premise per name: the file's own shadow the library's
        unique: dict[str, Premise] = {}
        for premise in premises:
            unique[premise.name] = premise
        self.premises = list(unique.values())
        corpus = [tokens(p.name) * 2 + tokens(p.statement) for p in self.premises]
        self._bm25 = BM25Okapi(corpus) if corpus else None

    def rank(self, goal: str, k: int = 8, exclude: Iterable[str] = ()) -> list[Premise]:
        if self._bm25 is None:
            return []
        banned = set(exclude)
        scores = self._bm25.get_scores(tokens(goal))
        order = sorted(range(len(scores)), key=lambda i: -scores[i])
        return [self.premises[i] for i in order if self.premises[i].name not in banned][:k]


async def loaded_modules(session: CoqSession) -> list[str]:
    """The library modules loaded at the session's position."""
    output = await session.query("Print Libraries.")
    return re.findall(r"\b(Coq(?:\.[A-Za-z_][\w']*)+)", output)


async def index_for(session: CoqSession) -> PremiseIndex:
    """The premises visible at ``session``'s hole, indexed.

    Reading the library sources and building BM25 takes seconds for a file that
    loads much of the stdlib, so it runs in a thread: the event loop (the CPU
    governor, cancellation on Ctrl-C) is never held up by it.
    """
    modules = await loaded_modules(session)
    return await asyncio.to_thread(
        lambda: PremiseIndex(library_premises(modules) + file_premises(session.prefix))
    )


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
