"""Premise retrieval: rank the lemmas visible at a hole against its goal, and use the best.

Visible lemmas are (a) the file's own lemma-like declarations *before* the
hole, read from the sentences the session loaded (so never the lemma under
proof or anything after it), and (b) the lemmas of the modules loaded at that
point (``Print Libraries``): the standard library's, the libraries' in
``user-contrib`` and the project files the goal's file imports, read from
their sources, found as Coq finds them (:func:`..learning.module_source`).
They are ranked against the goal with BM25 (rank-bm25) over identifier tokens
(names are split at ``_`` and ``.``), and the best become templates:
``rewrite L``, ``rewrite <- L``, ``apply L``, ``eauto using L1, L2, L3``,
and ``hauto use: L1, L2, L3`` where CoqHammer's tactics are loaded.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import os
import re
import tempfile
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path

from ...config import cache_folder
from ...errors import SourceSyntaxError
from ...search.premises import Premise, PremiseIndex, tokens
from ..display import COQ
from ..holes import LEMMA_KEYWORDS
from ..learning import loaded_libraries, module_source
from ..session import CoqSession
from ..syntax import split_sentences
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


#: bump when what :func:`_premises` extracts changes: older cache files are then ignored
_CACHE_FORMAT = 1


def _cache_file(source: Path) -> Path | None:
    """Where the premises read from ``source`` are kept, for this version of the source."""
    try:
        stat = source.stat()
    except OSError:
        return None
    key = f"{_CACHE_FORMAT}\0{source.resolve()}\0{stat.st_mtime_ns}\0{stat.st_size}"
    return cache_folder("premises") / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".json")


def _read_cached(path: Path) -> tuple[Premise, ...] | None:
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
        return tuple(
            Premise(name, statement, module, kind) for name, statement, module, kind in rows
        )
    except (OSError, ValueError, TypeError):
        return None  # absent, unreadable or from another layout: read the source again


def _write_cached(path: Path, premises: Sequence[Premise]) -> None:
    """Write through a temporary file and a rename; a cache that cannot be written is skipped."""
    rows = [[p.name, p.statement, p.module, p.kind] for p in premises]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", encoding="utf-8", dir=path.parent, suffix=".tmp", delete=False
        ) as handle:
            json.dump(rows, handle)
        os.replace(handle.name, path)
    except OSError:
        with contextlib.suppress(OSError, UnboundLocalError):
            os.unlink(handle.name)


@functools.cache
def _module_premises(module: str, source: Path | None) -> tuple[Premise, ...]:
    """The premises a loaded module's source declares.

    Parsing a module's source is most of the cost of a first premise index
    (about 200 modules once ``Lia`` is loaded), so what it gives is kept in
    ``~/.cache/orch/premises``, keyed by the source's path, size and
    modification time: a changed or reinstalled library is read again.
    """
    if source is None:
        return ()
    cache = _cache_file(source)
    if cache is not None:
        cached = _read_cached(cache)
        if cached is not None:
            return cached
    try:
        text = source.read_text(encoding="utf-8")
        sentences = split_sentences(text)
    except (OSError, UnicodeDecodeError, SourceSyntaxError):
        return ()
    premises = tuple(_premises((s.code for s in sentences), module))
    if cache is not None:
        _write_cached(cache, premises)
    return premises


def library_premises(modules: Iterable[tuple[str, Path | None]]) -> list[Premise]:
    return [p for module, source in modules for p in _module_premises(module, source)]


@functools.lru_cache(maxsize=16)
def library_index(modules: tuple[tuple[str, Path | None], ...]) -> PremiseIndex:
    """The index of the lemmas of ``modules`` (built once per set of loaded modules)."""
    return PremiseIndex(library_premises(modules), syntax=COQ)


async def loaded_modules(session: CoqSession) -> list[tuple[str, Path | None]]:
    """The modules loaded at the session's position, each with its source: the
    standard library's, the libraries' in ``user-contrib`` and the project's own
    (the files the goal's file imports), found as Coq finds them."""
    prover = session.prover
    cwd = Path(prover.cwd) if prover.cwd else None
    return [(m, module_source(m, prover.flags, cwd)) for m in await loaded_libraries(session)]


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
            lambda: PremiseIndex(file_premises(session.prefix), library_index(modules), COQ)
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
