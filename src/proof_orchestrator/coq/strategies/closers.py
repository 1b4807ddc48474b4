"""The project's own closing tactics: what it defines and what its finished proofs end with.

A development often has a solver of its own (stdpp's ``set_solver``,
``naive_solver``, ``done``; a user's ``crush``) that closes most of its easy
lemmas, and which no generic tactic list knows. Two sources name them, both
visible at the hole:

- the **zero-argument tactics the file defines above the hole**
  (``Ltac name :=``, ``Tactic Notation "name" :=``), the latest four first;
- the **one-sentence proofs** (``Proof. set_solver. Qed.``) of the ``Qed``
  lemmas above the hole and of the sources of the non-``Coq`` modules loaded
  there (``Print Libraries``; found through the project's ``-Q``/``-R`` flags
  and Coq's own load path), most frequent first. A sentence used once is a
  lemma's own proof, not a habit: only those used at least twice count.

Position-faithful: the file's sentences below the hole are never read, and a
loaded module is a dependency of the file, compiled before it.
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections import Counter, OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path

from ...errors import SourceSyntaxError
from ..project import loaded_modules, module_source
from ..script import passes_gate
from ..session import CoqSession
from ..syntax import split_sentences
from .knn import proofs_in_prefix

__all__ = [
    "PROJECT_CLOSERS",
    "defined_closers",
    "loaded_library_modules",
    "module_source",
    "one_sentence_proofs",
    "project_closers",
]

#: ``Ltac name :=`` or ``Tactic Notation (at level n)? "name" :=``, with no argument
_DEFINITION = re.compile(
    r"^(?:#\[[^\]]*\]\s*)?(?:(?:Local|Global|Export)\s+)*"
    r"(?:Ltac\s+(?P<ltac>[A-Za-z_][\w']*)|"
    r"Tactic\s+Notation\s+(?:\(\s*at\s+level\s+\d+\s*\)\s+)?\"(?P<notation>[A-Za-z_][\w']*)\")"
    r"\s*:="
)


def defined_closers(prefix: Sequence[str]) -> list[str]:
    """The zero-argument tactics the sentences define, latest first, as ``name.``."""
    names = [
        match.group("ltac") or match.group("notation")
        for code in prefix
        if (match := _DEFINITION.match(code))
    ]
    return [f"{name}." for name in dict.fromkeys(reversed(names))]


def one_sentence_proofs(codes: Sequence[str]) -> Counter[str]:
    """How often each tactic sentence is a whole ``Qed`` proof (``Proof.`` aside)."""
    counts: Counter[str] = Counter()
    for proof in proofs_in_prefix(codes):
        body = [s for s in proof.body if not s.startswith("Proof")]
        if len(body) == 1 and body[0][:1].islower():
            counts[body[0]] += 1
    return counts


@functools.cache
def _source_proofs(source: Path) -> Counter[str]:
    """:func:`one_sentence_proofs` of a source file (read once per process)."""
    try:
        text = source.read_text(encoding="utf-8")
        return one_sentence_proofs([s.code for s in split_sentences(text)])
    except (OSError, UnicodeDecodeError, SourceSyntaxError):
        return Counter()


def loaded_library_modules(print_libraries: str) -> list[str]:
    """The modules ``Print Libraries`` lists, less Coq's own (``Coq.*``)."""
    return [m for m in loaded_modules(print_libraries) if not m.startswith("Coq.")]


def rank_closers(
    defined: Sequence[str],
    used: Iterable[Counter[str]],
    limit: int,
    *,
    defined_limit: int = 4,
) -> list[str]:
    """At most ``limit`` closers: the latest ``defined_limit`` defined tactics, then
    the sentences used as a whole proof at least twice, most frequent first."""
    total: Counter[str] = Counter()
    for counts in used:
        total.update(counts)
    habits = [s for s, n in total.most_common() if n >= 2]
    ranked = [s for s in dict.fromkeys([*defined[:defined_limit], *habits]) if passes_gate(s)]
    return ranked[:limit]


class ProjectClosers:
    """The closers at each position (one ``Print Libraries`` per loaded prefix)."""

    def __init__(self, limit: int = 12, size: int = 64) -> None:
        self.limit = limit
        self.size = size
        self._cache: OrderedDict[tuple[object, ...], list[str]] = OrderedDict()

    async def at(self, session: CoqSession) -> list[str]:
        prover = session.prover
        key = (prover.flags, prover.cwd, session.prefix)
        found = self._cache.get(key)
        if found is not None:
            self._cache.move_to_end(key)
            return found
        modules = loaded_library_modules(await session.query("Print Libraries."))
        cwd = Path(prover.cwd) if prover.cwd else None
        prefix = session.prefix

        def read() -> list[str]:
            sources = [module_source(m, prover.flags, cwd) for m in modules]
            used = [_source_proofs(s) for s in sources if s is not None]
            return rank_closers(
                defined_closers(prefix),
                [one_sentence_proofs(prefix), *used],
                self.limit,
            )

        found = await asyncio.to_thread(read)
        self._cache[key] = found
        while len(self._cache) > self.size:
            self._cache.popitem(last=False)
        return found


#: the closers of every strategy of this process
PROJECT_CLOSERS = ProjectClosers()


async def project_closers(session: CoqSession) -> list[str]:
    """:class:`ProjectClosers` at ``session``'s hole."""
    return await PROJECT_CLOSERS.at(session)
