"""What a Coq goal may learn from, and nothing else.

A goal sees three kinds of finished proofs:

* its own file's ``Qed``/``Defined`` proofs above it (the sentences its
  session loaded: never the hidden proof, never anything below);
* the proofs of the project files its file imports,
* the proofs of the libraries its own session loads, and
* the proofs found in this run for holes above it in its file or in the
  files it imports (:data:`~proof_orchestrator.learn.FOUND`), at once.

The last two are one thing to Coq: the modules ``Print Libraries`` lists in
the goal's session at its root, before any strategy loads more (a side
session's Lia or CoqHammer loads about 200 stdlib modules that the goal's
file does not). Each module is found by its logical name the way Coq finds
it, the session's ``-Q``/``-R`` flags first, then the standard library and
``user-contrib``, and its source (``.v`` beside it or in the project's
folder) is mined. So a copy of a library file in a project, loaded from the
project, learns from the project's other files and never from the installed
original: the original is not loaded.

Mining reads the source (no prover): every finished proof with its
statement. A module is mined once per version, keyed by the digests of its
source and its ``.vo`` (:class:`~proof_orchestrator.learn.ProofCache`, in the
user's cache folder), in a thread, so the event loop (the CPU governor,
cancellation) is never held up.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path
from typing import Protocol

from ..errors import OrchError, SourceSyntaxError
from ..learn import FOUND, MINING, Corpus, MiningStats, ProofCache, ProofExample, file_digest
from .display import COQ
from .holes import iter_proofs
from .project import loaded_modules, module_source
from .session import CoqSession
from .syntax import Sentence, split_sentences

__all__ = [
    "LEARNING",
    "Learning",
    "Visible",
    "VisibleSource",
    "loaded_libraries",
    "mine_sentences",
    "module_source",
    "prefix_examples",
]

_LOG = logging.getLogger(__name__)
#: proofs whose sentences mention these are not examples (they do not finish the proof)
_UNFINISHED = re.compile(r"\b(?:admit|Admitted|Abort|give_up)\b")
#: at most this many sentences of a proof are kept (longer proofs teach their openings)
MAX_SCRIPT = 40


def _script(proof: Sequence[Sentence]) -> tuple[str, ...] | None:
    """A finished proof's sentences without ``Proof.`` and the ender; None if unusable."""
    codes = [s.code for s in proof]
    if not codes or codes[-1].split()[0].rstrip(".") not in ("Qed", "Defined"):
        return None
    body = codes[:-1]
    if body and (body[0] == "Proof." or body[0].startswith("Proof using")):
        body = body[1:]
    elif body and body[0].startswith("Proof"):
        return None  # ``Proof with t``, ``Proof term``: the sentences mean something else alone
    if not body or any(_UNFINISHED.search(code) for code in body):
        return None
    return tuple(body[:MAX_SCRIPT])


def mine_sentences(sentences: list[Sentence], origin: str) -> list[ProofExample]:
    """Every finished proof among ``sentences``, with its statement."""
    found: list[ProofExample] = []
    for proof in iter_proofs(sentences):
        script = _script(proof.proof)
        if script is not None:
            found.append(ProofExample(proof.name, proof.statement.code, script, origin))
    return found


def prefix_examples(prefix: Sequence[str]) -> list[ProofExample]:
    """The finished proofs among a session's loaded sentences (the statement under proof,
    last, is not one)."""
    from .syntax import one_sentence

    sentences: list[Sentence] = []
    for code in prefix:
        try:
            sentences.append(one_sentence(code))
        except SourceSyntaxError:
            continue
    return mine_sentences(sentences, "")


async def loaded_libraries(session: CoqSession) -> list[str]:
    """The modules loaded at the session's root (``Print Libraries``)."""
    output = await session.query("Print Libraries.")
    return loaded_modules(output)


def _original_of(source: Path | None, file: Path, statement: str) -> bool:
    """Whether ``source`` is the original that ``file`` is a copy of: another file of
    the same name that declares the goal's statement. Its proofs are never seen, even
    when something loaded it (Lia and CoqHammer load some 200 stdlib modules)."""
    if source is None or source.name != file.name:
        return False
    try:
        if source.resolve() == file.resolve():
            return False
        written = " ".join(statement.split())
        return written in " ".join(source.read_text(encoding="utf-8").split())
    except OSError:
        return False


@dataclass(slots=True)
class Visible:
    """The examples visible at one hole: the loaded modules' and the file's own above it."""

    library: Corpus
    local: Corpus
    modules: tuple[str, ...] = ()

    def nearest(
        self,
        statement: str,
        k: int = 8,
        *,
        exclude: Sequence[str] = (),
        max_sentences: int | None = None,
    ) -> list[tuple[float, ProofExample]]:
        """The ``k`` nearest examples, the file's own and the loaded libraries' taking
        turns (the file's first): the two corpora score against their own term
        statistics, and a library's thousands of ``associative`` lemmas would
        otherwise push out the file's proofs about its own constants."""
        local = self.local.nearest(statement, k, exclude=exclude, max_sentences=max_sentences)
        library = self.library.nearest(statement, k, exclude=exclude, max_sentences=max_sentences)
        both = [pair for pairs in zip_longest(local, library) for pair in pairs if pair is not None]
        return both[:k]

    def __len__(self) -> int:
        return len(self.library) + len(self.local)


class Learning:
    """The visible examples per position, with the mined modules shared by every hole."""

    def __init__(
        self,
        cache: ProofCache | None = None,
        size: int = 64,
        stats: MiningStats | None = None,
    ) -> None:
        self.cache = cache if cache is not None else ProofCache()
        self.stats = stats if stats is not None else MiningStats()
        self.size = size
        self._modules: dict[tuple[str, str], list[ProofExample]] = {}
        self._libraries: OrderedDict[tuple[object, ...], Corpus] = OrderedDict()
        self._visible: OrderedDict[tuple[object, ...], Visible] = OrderedDict()
        #: the modules ``Print Libraries`` lists at a position
        self._loaded: dict[tuple[object, ...], tuple[str, ...]] = {}
        self._lock = asyncio.Lock()

    async def visible(self, session: CoqSession) -> Visible:
        """What the goal of ``session`` may learn from (cached per loaded prefix)."""
        prover = session.prover
        key = (prover.flags, prover.cwd, session.prefix, FOUND.version)
        found = self._visible.get(key)
        if found is not None:
            self._visible.move_to_end(key)
            return found
        cwd = Path(prover.cwd or ".")
        goal = session.goal
        at = key[:3]  # what is loaded at a position does not change with the proofs found
        loaded = self._loaded.get(at)
        if loaded is None:
            loaded = self._loaded[at] = tuple(await loaded_libraries(session))
            while len(self._loaded) > self.size:
                self._loaded.pop(next(iter(self._loaded)))
        modules = tuple(
            m
            for m in loaded
            if not _original_of(module_source(m, prover.flags, cwd), goal.file, goal.statement)
        )
        async with self._lock:
            library = await self._library(modules, prover.flags, cwd)
        imported = [s for m in modules if (s := module_source(m, prover.flags, cwd)) is not None]
        local = Corpus(
            COQ,
            [
                *prefix_examples(session.prefix[:-1]),
                *FOUND.visible(goal.file, goal.line, imported),
            ],
        )
        visible = Visible(library, local, modules)
        self._visible[key] = visible
        while len(self._visible) > self.size:
            self._visible.popitem(last=False)
        return visible

    async def _library(self, modules: tuple[str, ...], flags: tuple[str, ...], cwd: Path) -> Corpus:
        key = (modules, flags, str(cwd))
        corpus = self._libraries.get(key)
        if corpus is not None:
            self._libraries.move_to_end(key)
            return corpus
        sources = [(m, module_source(m, flags, cwd)) for m in modules]
        todo = [(m, s) for m, s in sources if s is not None and (m, str(s)) not in self._modules]
        if len(todo) > 20:
            _LOG.info("learning: reading the proofs of %d loaded modules", len(todo))
        started = time.process_time()
        for module, source in todo:
            assert source is not None
            self._modules[(module, str(source))] = await asyncio.to_thread(
                self._mine_module, module, source
            )
        self.stats.without_source += sum(1 for _, s in sources if s is None)
        examples = (e for m, s in sources if s is not None for e in self._modules[(m, str(s))])
        corpus = await asyncio.to_thread(Corpus, COQ, examples)
        self.stats.cpu_seconds += time.process_time() - started
        self.stats.examples = max(self.stats.examples, len(corpus))
        self._libraries[key] = corpus
        while len(self._libraries) > 8:
            self._libraries.popitem(last=False)
        return corpus

    def _mine_module(self, module: str, source: Path) -> list[ProofExample]:
        digests = [d for d in (file_digest(source), file_digest(source.with_suffix(".vo"))) if d]
        key = self.cache.key(module, digests)
        cached = self.cache.get(key)
        if cached is not None:
            self.stats.modules_cached += 1
            return cached
        try:
            found = mine_sentences(split_sentences(source.read_text(encoding="utf-8")), module)
        except (OSError, UnicodeDecodeError, SourceSyntaxError, OrchError):
            found = []
        self.stats.modules_mined += 1
        self.cache.put(key, found)
        return found


@functools.cache
def _shared() -> Learning:
    return Learning(stats=MINING)


class VisibleSource(Protocol):
    """What gives the examples visible at a session's hole (:data:`LEARNING`)."""

    async def visible(self, session: CoqSession) -> Visible: ...


class _Proxy:
    """The process's :class:`Learning`, made at first use (its cache folder is read then)."""

    async def visible(self, session: CoqSession) -> Visible:
        return await _shared().visible(session)

    @property
    def stats(self) -> MiningStats:
        return _shared().stats


#: the learning state shared by every strategy of this process
LEARNING = _Proxy()
