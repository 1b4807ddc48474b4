"""The Coq prover: sessions on the holes of one project, on pooled ``coqtop`` processes."""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from ..goals import Goal
from ..project.statedir import ScratchFolder
from ..provers.process import run_command
from ..provers.settings import CoqSettings
from .coqtop import CoqTop
from .pool import ProcessPool
from .session import NO_MICROMEGA_CACHE, CoqSession
from .syntax import Sentence, split_sentences

__all__ = ["CoqProver", "CoqSettings"]


class CoqProver:
    """Sessions on holes of one Coq project."""

    name = "coq"

    def __init__(
        self,
        flags: Sequence[str] = (),
        *,
        cwd: str | None = None,
        workdir: ScratchFolder | None = None,
        settings: CoqSettings | None = None,
        throttle: Callable[[], Awaitable[None]] | None = None,
        generation: Callable[[], int] | None = None,
    ) -> None:
        self.flags = tuple(flags)
        self.cwd = cwd
        #: where the processes run instead of ``cwd`` (made at the first one, removed
        #: at :meth:`aclose`): what coqtop writes where it runs stays in there
        self.workdir = workdir
        #: without a work folder, a temporary folder of our own is the processes' TMPDIR
        #: (made at the first one, removed at :meth:`aclose`)
        self._temp: str | None = None
        self.settings = settings or CoqSettings()
        #: awaited before every sentence sent (the CPU governor's gate)
        self.throttle = throttle
        #: the idle processes and what each has loaded
        #: (``generation``: the project build's, see :class:`ProcessPool`)
        self.pool = ProcessPool(self.settings, self._start, generation)
        #: sentences of recently used source texts
        self._split_cache: dict[str, list[Sentence]] = {}

    async def version(self) -> str:
        run = await run_command([self.settings.coqtop, "--version"], timeout=30)
        first = run.output.splitlines()[0] if run.output else ""
        match = re.search(r"version (\S+)", first)
        return match.group(1) if match else first

    def session(
        self, goal: Goal, source: str, prefix_end: int, statement_start: int | None = None
    ) -> AbstractAsyncContextManager[CoqSession]:
        """A session at ``goal``: ``source[:prefix_end]`` is loaded first.

        ``statement_start``, the offset of the goal's statement, lets the session
        open :meth:`CoqSession.side_session`.
        """
        codes = self._prefix_codes(source, prefix_end)
        index = None
        if statement_start is not None:
            index = sum(1 for s in self._split_cache[source] if s.end <= statement_start)
            codes = [*codes[:index], *NO_MICROMEGA_CACHE, *codes[index:]]
            index += len(NO_MICROMEGA_CACHE)
        return self.session_at(goal, codes, statement_index=index)

    @asynccontextmanager
    async def session_at(
        self, goal: Goal, prefix: Sequence[str], *, statement_index: int | None = None
    ) -> AsyncIterator[CoqSession]:
        """A session after the sentences ``prefix`` (the last one opens the goal)."""
        session = CoqSession(self, goal, prefix, statement_index)
        try:
            await session._open()
            yield session
        finally:
            await session.aclose()

    def _prefix_codes(self, source: str, prefix_end: int) -> list[str]:
        """Sentence codes of ``source`` up to ``prefix_end`` (the split is cached per text)."""
        sentences = self._split_cache.get(source)
        if sentences is None:
            if len(self._split_cache) >= 16:
                self._split_cache.pop(next(iter(self._split_cache)))
            sentences = self._split_cache[source] = split_sentences(source)
        return [s.code for s in sentences if s.end <= prefix_end]

    @property
    def started(self) -> int:
        """Processes started over the prover's life."""
        return self.pool.started

    async def aclose(self) -> None:
        await self.pool.aclose()
        if self.workdir is not None:
            self.workdir.close()
        if self._temp is not None:
            shutil.rmtree(self._temp, ignore_errors=True)
            self._temp = None

    async def _start(self) -> CoqTop:
        # in the work folder, which is also its TMPDIR: CoqHammer's temporary files
        # (``/tmp/predict*``), left behind when a timed-out process is killed, go with it
        workdir = str(self.workdir.path()) if self.workdir is not None else None
        if workdir is None and self._temp is None:
            self._temp = tempfile.mkdtemp(prefix="orch-coqtop-")
        top = CoqTop(
            self.flags,
            cwd=workdir or self.cwd,
            temp_dir=workdir or self._temp,
            executable=self.settings.coqtop,
            start_timeout=self.settings.start_timeout,
            throttle=self.throttle,
            memory_bytes=self.settings.memory_mb * 1024**2 if self.settings.memory_mb else None,
        )
        await top.start()
        return top
