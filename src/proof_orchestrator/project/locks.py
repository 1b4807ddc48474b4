"""A lock per user file, across processes, taken by every orch writer of the file.

Every writer (``orch fill``, ``bg``, ``repair``, ``golf``, ``blueprint``
and the MCP tools) takes it around its commit step (:func:`~..run.writing.
commit`): the compare with the expected text and the replace happen under it,
so two orch writers never both replace a file they read before the other
wrote it. Two agents submitting to the same file take turns: the second
re-reads the file after the first wrote it and finds its hole gone.

Every process must find the same lock for a file whatever project root it
was started with (``orch mcp .`` and ``orch fill theories/x.v`` differ), so
the lock file is named after the file's resolved path and lives in one
folder per user on the machine (:func:`lock_folder`), never beside the
user's sources. An editor does not take it: :func:`~.patch.write_atomic`
compares the file under the lock for that.

The lock is re-entrant along one flow of control: a task that holds it (the
MCP tools hold it across their check) takes it again at once in the commit
step. The mark is a context variable, so a task started while the lock is
held inherits it: such a task must be awaited before the lock is released
(none of ours takes the lock).
"""

from __future__ import annotations

import asyncio
import contextvars
import fcntl
import hashlib
import os
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

__all__ = ["file_lock", "lock_folder"]

_LOCAL: dict[str, asyncio.Lock] = {}
#: the keys of the locks the current task (and what it awaits) holds
_HELD: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar(
    "orch_file_locks", default=frozenset()
)


def lock_folder() -> Path:
    """``<system temp>/orch-locks-<uid>``: where every orch process of this user locks files."""
    return Path(tempfile.gettempdir()) / f"orch-locks-{os.getuid()}"


@asynccontextmanager
async def file_lock(path: Path, lock_dir: Path | None = None) -> AsyncIterator[None]:
    """Hold the lock of ``path`` (in this process and across processes) while the block runs.

    ``lock_dir`` is for tests; every writer uses the default (:func:`lock_folder`).
    """
    key = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:32]
    if key in _HELD.get():
        yield
        return
    folder = lock_dir if lock_dir is not None else lock_folder()
    local = _LOCAL.setdefault(key, asyncio.Lock())
    async with local:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(folder / f"{key}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            await asyncio.to_thread(fcntl.flock, fd, fcntl.LOCK_EX)
            token = _HELD.set(_HELD.get() | {key})
            try:
                yield
            finally:
                _HELD.reset(token)
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
