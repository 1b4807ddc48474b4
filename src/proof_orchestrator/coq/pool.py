"""The idle ``coqtop`` processes of one project, and what each has loaded.

A process remembers the sentences it loaded and the state after each, so a
session at the next hole of the same file (or any text with the same opening)
sends only what differs, after a ``BackTo``.

Which idle process a session gets matters for more than the sentences it
saves: a process keeps caches that survive ``BackTo``. The one that costs
most is CoqHammer's: its first ``hammer`` in a process spends about 7 CPU s
translating the environment for the ATPs; later calls in the same process,
even after backtracking past ``From Hammer Require Import Hammer``, start
their ATPs at once. So a session goes to the idle process that has already
loaded most of the libraries its prefix requires (every ``Require``
sentence it has ever loaded counts), then to the one with the fewest other
libraries loaded (so that the goal's own session leaves the hammer process
to the next hammer), then to the one sharing the longest prefix; and when
the pool is full, the process that loaded the fewest libraries goes (the
longest idle of those): in a fill run, evicting the oldest sent the hammer
process away after almost every goal (128 library reads for 485 goals).

That was not enough: on 11 files whose goals came in turn, a file's plain
session took the hammer process (it had loaded the most of that file's
libraries), the hammer session then read the library again in another
process, and a full pool evicted whichever had fewer libraries (107 reads for
237 hammer attempts). So a process that built such a cache is marked
(:meth:`ProcessPool.mark_warm`, with the library its users load): sessions
that load that library get it first, others only when nothing else is idle,
and a full pool evicts it last.

Still, on one file of the reals at two hammers at once, six processes read
the library for one that two could serve: plain sessions took the warm
processes whenever only warm ones were idle, and one pool-wide count of idle
processes then evicted a warm one. Now a warm process goes only to sessions
that use its cache (others start a process of their own), and warm and cold
idle processes are kept up to counts of their own (``max_warm``,
``max_idle``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from ..errors import PrefixError, SessionClosed
from ..provers.accounting import PROVER_PROCESSES
from ..provers.settings import CoqSettings
from .backto import back_to
from .coqtop import CoqTop

__all__ = ["ProcessPool"]

log = logging.getLogger(__name__)

#: seconds a cancelled request on a warm process gets to end (``CoqTop.salvage_seconds``)
WARM_SALVAGE_SECONDS = 3.0

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

    def wants(self, libraries: set[str]) -> bool:
        """A session whose prefix loads ``libraries`` may have this process: a warm one
        only goes to the sessions that use its cache (a plain session that took it left
        the next hammer to read CoqHammer's library again in another process)."""
        return not self.warm or self.wanted_by is None or self.wanted_by in libraries

    def fit(self, prefix: Sequence[str], libraries: set[str]) -> tuple[int, int, int]:
        """How well this process suits ``prefix``: the most of the prefix's ``libraries``
        loaded before, then the fewest others (a process warmed for other work is
        kept for that work), then the longest prefix it holds."""
        return (
            len(libraries & self.libraries),
            -len(self.libraries - libraries),
            self.common(prefix),
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

    def __init__(self, settings: CoqSettings, start: Callable[[], Awaitable[CoqTop]]) -> None:
        self.settings = settings
        self._start = start
        #: idle processes, the one idle the longest first
        self._idle: list[tuple[CoqTop, _Loaded]] = []
        self._loaded: dict[int, _Loaded] = {}
        self._closed = False
        #: processes started over the pool's life
        self.started = 0

    async def acquire(self, prefix: Sequence[str]) -> CoqTop:
        """The idle process that fits ``prefix`` best, else a new one."""
        if self._closed:
            raise SessionClosed("the Coq prover was closed")
        libraries = {code for code in prefix if _LIBRARY_LOAD.match(code)}
        while True:
            suitable = [i for i, (_, held) in enumerate(self._idle) if held.wants(libraries)]
            if not suitable:
                break
            # on a tie, the process released last (the previous behaviour)
            best = max(suitable, key=lambda i: (self._idle[i][1].fit(prefix, libraries), i))
            top, loaded = self._idle.pop(best)
            if top.alive:
                self._loaded[id(top)] = loaded
                log.debug("coqtop %s reused (%d idle left)", top.pid, len(self._idle))
                return top
            await top.aclose()
        top = await self._start()
        self.started += 1
        log.debug("coqtop %s started for %d libraries", top.pid, len(libraries))
        self._loaded[id(top)] = _Loaded(base=top.current, codes=[], states=[])
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
        rss = top.rss_bytes()
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
        for warm, most in ((False, self.settings.max_idle), (True, self.settings.max_warm)):
            while True:
                kind = [i for i, (_, held) in enumerate(self._idle) if held.warm is warm]
                if len(kind) <= most:
                    break
                # the cheapest to make again goes: the fewest libraries loaded, then
                # the longest idle
                cheapest = min(kind, key=lambda i: len(self._idle[i][1].libraries))
                gone, _ = self._idle.pop(cheapest)
                log.debug("coqtop %s evicted (warm %s)", gone.pid, warm)
                await gone.aclose()

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
            return await self._load(top, loaded, prefix)
        finally:
            spent = max(top.refresh_cpu() - cpu_before, 0.0)
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
            before = reply.state
        return top.current

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for top, _ in idle:
            await top.aclose()
