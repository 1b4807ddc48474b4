"""The idle ``coqtop`` processes of one project, and what each has loaded.

A process remembers the sentences it loaded and the state after each, so a
session at the next hole of the same file (or any text with the same opening)
sends only what differs, after a ``BackTo``.

Which idle process a session gets matters for more than the sentences it
saves: a process keeps caches that survive ``BackTo``. The one that costs
most is CoqHammer's: its first ``hammer`` in a process spends about 7 CPU s
translating the environment for the ATPs; later calls in the same process,
even after backtracking past ``From Hammer Require Import Hammer``, start
their ATPs at once. The rules, each from a measured run:

* A process that built such a cache is marked warm
  (:meth:`ProcessPool.mark_warm`, with the library its users load) and goes
  only to sessions that load that library; other sessions start a process of
  their own rather than take it (plain sessions that took warm processes left
  the next hammer to read the library again elsewhere: six reads where two
  would do, on one file of the reals).
* Of the processes a session may have, it gets the one that has loaded most
  of the libraries its prefix requires (every ``Require`` it has ever run
  counts: they load again cheaply), then the one sharing the longest prefix
  with it, then the one with the fewest other libraries. A cold process at
  another file is not taken: the session starts its own, and that file's
  next goal finds its process (processes that went from file to file loaded
  two thirds of a draw's sentences).
* Warm and cold idle processes are kept up to counts of their own
  (``max_warm``, ``max_idle``), the cold ones also up to a memory budget
  (``idle_memory_mb``). Past them, the process to go is one whose file another
  idle process holds too, then the cheapest to load again (its loads' CPU),
  then the one with the fewest libraries, then the longest idle. Files whose
  goals come in turn so each keep a process: with two idle processes for
  eight files, processes went from file to file and sent most of the
  sentences loaded on a draw.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import PrefixError, SessionClosed
from ..provers.accounting import PROVER_PROCESSES
from ..provers.settings import CoqSettings
from .backto import back_to
from .coqtop import CoqTop

__all__ = ["ProcessPool"]

log = logging.getLogger(__name__)

#: seconds a cancelled request on a warm process gets to end (``CoqTop.salvage_seconds``)
WARM_SALVAGE_SECONDS = 3.0

#: seconds a cancelled session's load goes on, so that its process holds the file
FINISH_LOAD_SECONDS = 3.0

#: a sentence that loads a library (``Require Import X.``, ``From L Require X.``)
_LIBRARY_LOAD = re.compile(r"^(?:From\s+\S+\s+)?Require\b")


@dataclass(slots=True)
class _Loaded:
    """What a coqtop has loaded: sentence codes and the state after each."""

    base: int
    codes: list[str]
    states: list[int]
    uses: int = 0
    #: every library-loading sentence this process has run, backtracked or not
    libraries: set[str] = field(default_factory=set)
    #: it holds a cache that cost CPU to build (CoqHammer's ATP library), see ``mark_warm``
    warm: bool = False
    #: the library sentence of the sessions that use that cache (None: any session)
    wanted_by: str | None = None
    #: CPU seconds its loads took since it last held nothing of the prefix it holds:
    #: what it would cost to load again
    cost: float = 0.0
    #: resident size when it was last released
    rss: int = 0
    #: the file it holds (the key the last session gave, None: not known)
    text: object = None
    #: the project build's generation when it first loaded a library (see ``stale``)
    generation: int | None = None

    def elsewhere(self, text: object) -> bool:
        """This process holds another file than ``text`` (a key: the file's path; None
        when not known). Loading the file there would cost almost as much as in a new
        process (measured: 2.1 to 2.3 CPU s against 2.6 s for 1,035 sentences of std++'s
        ``sets``) and leave that file's next goal to load it again; a warm process is
        worth its cache, and one that holds nothing is free to take."""
        return (
            not self.warm
            and self.codes != []
            and None not in (text, self.text)
            and self.text != text
        )

    def covers(self, other: _Loaded) -> bool:
        """This process holds (nearly) all that ``other`` holds, libraries included:
        keeping both is keeping one file twice."""
        return other.libraries <= self.libraries and self.common(other.codes) >= 0.9 * len(
            other.codes
        )

    def stale(self, prefix: Sequence[str], generation: int) -> bool:
        """Loading ``prefix`` here would require a library after the project's ``.vo``
        files were rebuilt, while this process holds libraries from before: Coq keeps
        a library loaded (``BackTo`` does not unload it), so a rebuilt file that
        requires a changed one "makes inconsistent assumptions" over the copy held."""
        if self.generation is None or self.generation == generation:
            return False
        return any(_LIBRARY_LOAD.match(code) for code in prefix[self.common(prefix) :])

    def wants(self, libraries: set[str]) -> bool:
        """A session whose prefix loads ``libraries`` may have this process: a warm one
        only goes to the sessions that use its cache (a plain session that took it left
        the next hammer to read CoqHammer's library again in another process)."""
        return not self.warm or self.wanted_by is None or self.wanted_by in libraries

    def fit(self, prefix: Sequence[str], libraries: set[str]) -> tuple[bool, int, int, int]:
        """How well this process suits ``prefix``: it holds the cache the session uses
        (a warm process, for a session that loads its library), then the most of the
        prefix's ``libraries`` loaded before, then the longest prefix it holds (the
        same file), then the fewest other libraries (a process warmed for other work
        is kept for it). Without the first rule a hammer session took the cold
        process at its own file (more of its libraries) and read CoqHammer's library
        again: 22 warm processes evicted on a draw of 512 goals."""
        return (
            self.warm and (self.wanted_by is None or self.wanted_by in libraries),
            len(libraries & self.libraries),
            self.common(prefix),
            -len(self.libraries - libraries),
        )

    def common(self, prefix: Sequence[str]) -> int:
        """How many of ``prefix``'s first sentences this process holds."""
        common = 0
        for have, want in zip(self.codes, prefix, strict=False):
            if have != want:
                break
            common += 1
        return common


class ProcessPool:
    """Idle ``coqtop`` processes, handed out to sessions by how well they fit."""

    def __init__(
        self,
        settings: CoqSettings,
        start: Callable[[], Awaitable[CoqTop]],
        generation: Callable[[], int] | None = None,
    ) -> None:
        self.settings = settings
        self._start = start
        #: the project build's generation (it grows when a rebuild replaces ``.vo`` files)
        self._generation = generation or (lambda: 0)
        #: idle processes, the one idle the longest first
        self._idle: list[tuple[CoqTop, _Loaded]] = []
        self._loaded: dict[int, _Loaded] = {}
        self._closed = False
        #: processes started over the pool's life
        self.started = 0

    async def acquire(self, prefix: Sequence[str], text: object = None) -> CoqTop:
        """The idle process that fits ``prefix`` best, else a new one; ``text`` names the
        file the prefix comes from (a process at another file is kept for that one)."""
        if self._closed:
            raise SessionClosed("the Coq prover was closed")
        libraries = {code for code in prefix if _LIBRARY_LOAD.match(code)}
        while True:
            generation = self._generation()
            suitable = [
                i
                for i, (_, held) in enumerate(self._idle)
                if held.wants(libraries) and not held.stale(prefix, generation)
            ]
            if not suitable:
                break
            # on a tie, the process released last (the previous behaviour)
            best = max(suitable, key=lambda i: (self._idle[i][1].fit(prefix, libraries), i))
            if self._idle[best][1].elsewhere(text):
                break  # it is kept for its own file; this one gets a process of its own
            top, loaded = self._idle.pop(best)
            if top.alive:
                loaded.text = text
                self._loaded[id(top)] = loaded
                log.debug("coqtop %s reused (%d idle left)", top.pid, len(self._idle))
                return top
            await top.aclose()
        top = await self._start()
        self.started += 1
        log.debug("coqtop %s started for %d libraries", top.pid, len(libraries))
        self._loaded[id(top)] = _Loaded(base=top.current, codes=[], states=[], text=text)
        return top

    async def release(self, top: CoqTop) -> None:
        """Back to the pool, or closed when it is worn out, too big, or the pool is shut."""
        loaded = self._loaded.pop(id(top), None)
        if loaded is None or not top.alive or self._closed:
            if loaded is not None and not top.alive:
                log.debug("coqtop %s gone (warm %s): %s", top.pid, loaded.warm, top.fault)
            await top.aclose()
            return
        loaded.uses += 1
        rss = loaded.rss = top.rss_bytes()
        if loaded.uses >= self.settings.max_uses or rss > self.settings.rss_cap:
            log.debug(
                "coqtop %s retired (warm %s): %d uses, %.2f GiB",
                top.pid,
                loaded.warm,
                loaded.uses,
                rss / 1024**3,
            )
            await top.aclose()
            return
        self._idle.append((top, loaded))
        # warm and cold processes are kept up to their own counts: a warm one is not
        # evicted to keep a cold one, nor a cold one (which plain sessions need, now that
        # they do not take warm ones) to keep a warm one
        memory = self.settings.idle_memory_bytes()
        for warm, most in ((False, self.settings.max_idle), (True, self.settings.max_warm)):
            while True:
                kind = [i for i, (_, held) in enumerate(self._idle) if held.warm is warm]
                size = sum(self._idle[i][1].rss for i in kind)
                if len(kind) <= most and (warm or len(kind) <= 1 or size <= memory):
                    break
                gone, _ = self._idle.pop(self._cheapest(kind))
                log.debug(
                    "coqtop %s evicted (warm %s): %d idle of its kind, %.2f GiB",
                    gone.pid,
                    warm,
                    len(kind),
                    size / 1024**3,
                )
                await gone.aclose()

    def _cheapest(self, kind: list[int]) -> int:
        """Of the idle processes at ``kind``, the one to let go: one holding what another
        holds too, then the cheapest to load again (its loads' CPU, then the fewest
        libraries), then the longest idle. Files whose goals come in turn each keep a
        process: on a draw of eight files, processes that went from file to file sent
        90 % of the sentences loaded."""

        def worth(i: int) -> tuple[bool, float, int, int]:
            held = self._idle[i][1]
            return (not any(self._twice(i, j) for j in kind), held.cost, len(held.libraries), i)

        return min(kind, key=worth)

    def _twice(self, i: int, j: int) -> bool:
        """Idle process ``j`` holds what ``i`` holds, and is the one to keep of the two
        (it holds more, or as much at a higher cost, or was released later)."""
        if i == j:
            return False
        mine, theirs = self._idle[i][1], self._idle[j][1]
        if not theirs.covers(mine):
            return False
        return not mine.covers(theirs) or (theirs.cost, j) > (mine.cost, i)

    def mark_warm(self, top: CoqTop, wanted_by: str | None = None) -> None:
        """``top`` (in use) now holds a cache that cost CPU to build: sessions whose
        prefix loads ``wanted_by`` (None: any) get it first, sessions that do not
        load it get it last, and a full pool evicts it last."""
        loaded = self._loaded.get(id(top))
        if loaded is not None:
            loaded.warm = True
            loaded.wanted_by = wanted_by
        # a cancelled request (another strategy won, the goal's time is up) would
        # kill it: its helpers go instead, and it gets a moment to answer
        top.salvage_seconds = WARM_SALVAGE_SECONDS

    async def load(self, top: CoqTop, prefix: Sequence[str]) -> int:
        """Bring ``top`` to the state after ``prefix``, reusing what it already has."""
        loaded = self._loaded[id(top)]
        cpu_before = top.refresh_cpu()
        common = loaded.common(prefix)
        held = len(loaded.codes)
        cold = common == 0
        try:
            return await self._finish_on_cancel(self._load(top, loaded, prefix))
        finally:
            spent = max(top.refresh_cpu() - cpu_before, 0.0)
            loaded.cost = spent if cold else loaded.cost + spent
            log.debug(
                "coqtop %s loaded %d of %d sentences (held %d, warm %s) in %.3f CPU s: %.50r",
                top.pid,
                len(prefix) - common,
                len(prefix),
                held,
                loaded.warm,
                spent,
                prefix[0],
            )
            PROVER_PROCESSES.loads += 1
            PROVER_PROCESSES.load_cpu_seconds += spent
            if cold:
                PROVER_PROCESSES.cold_loads += 1
                PROVER_PROCESSES.cold_load_cpu_seconds += spent

    @staticmethod
    async def _finish_on_cancel(load: Coroutine[Any, Any, int]) -> int:
        """Run ``load``; cancelled, let it finish for ``FINISH_LOAD_SECONDS`` at most.

        A session is often cancelled while its process loads the file (its
        strategy lost the race): the sentences sent run anyway, and a load that
        ends is recorded, so the file's next goal finds the process there. One
        interrupted instead left the process at a state the pool did not know,
        and one that did not stop within the interrupt's 2 s was killed: std++'s
        ``sets`` was loaded again into a new process (2.5 CPU s) each time.
        """
        work = asyncio.ensure_future(load)
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            try:
                await asyncio.wait({work}, timeout=FINISH_LOAD_SECONDS)
            finally:
                if not work.done():
                    work.cancel()
                with contextlib.suppress(BaseException):
                    await work
            raise

    async def _load(self, top: CoqTop, loaded: _Loaded, prefix: Sequence[str]) -> int:
        common = loaded.common(prefix)
        target = loaded.states[common - 1] if common else loaded.base
        # forget the states past ``target`` before going back, not after: a request
        # cancelled on a warm process lives on (its reply is salvaged), so the
        # ``BackTo`` may have happened when the cancel reaches us here, and a record
        # that still listed the dropped states sent the next session to one of them
        # (``BackTo 5824 landed on state 1``)
        del loaded.codes[common:]
        del loaded.states[common:]
        if top.current != target:
            await back_to(top, target, self.settings.load_timeout)
        # the rest of the prefix goes in one write (one round trip, not one per sentence);
        # a sentence that fails leaves the state number where it was
        codes = prefix[common:]
        PROVER_PROCESSES.sentences_loaded += len(codes)
        replies = await top.send_many(codes, self.settings.load_timeout, measure=False)
        before = target
        for code, reply in zip(codes, replies, strict=True):
            if reply.state == before:
                raise PrefixError(
                    f"the file does not load up to the hole: {code[:80]!r} fails: "
                    f"{reply.output.strip()[-400:]}"
                )
            loaded.codes.append(code)
            loaded.states.append(reply.state)
            if _LIBRARY_LOAD.match(code):
                loaded.libraries.add(code)
                if loaded.generation is None:
                    loaded.generation = self._generation()
            before = reply.state
        return top.current

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for top, _ in idle:
            await top.aclose()
