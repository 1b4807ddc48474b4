"""A lock per user file, across processes, held while a proof is verified and written.

Two agents (two ``orch mcp`` processes, or two clients of one) submitting to
the same file take turns: the second re-reads the file after the first wrote
it and finds its hole gone. The lock files live in the project's ``.orch``
folder, never beside the user's sources.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

__all__ = ["file_lock"]

_LOCAL: dict[str, asyncio.Lock] = {}


@asynccontextmanager
async def file_lock(path: Path, lock_dir: Path) -> AsyncIterator[None]:
    """Hold the lock of ``path`` (in this process and across processes) while the block runs."""
    key = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:32]
    local = _LOCAL.setdefault(key, asyncio.Lock())
    async with local:
        lock_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_dir / f"{key}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            await asyncio.to_thread(fcntl.flock, fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
