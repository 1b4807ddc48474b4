"""A cache of mined proofs that outlives runs, one entry per version of a file.

Mining a library module (reading its source, cutting it into sentences,
keeping every finished proof) is paid once per version of the module: the
entry's key is the digest of its compiled ``.vo`` and of its source, so a
rebuilt or changed library is mined again and an unchanged one never is. The
entries live in the user's cache folder (``$XDG_CACHE_HOME/orch/proofs``, else
``~/.cache/orch/proofs``), written through a temporary file and a rename; a
cache that cannot be written only costs the next run a second mining.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..config import cache_folder
from .examples import ProofExample

__all__ = ["CACHE_FORMAT", "ProofCache", "default_cache_folder", "file_digest"]

#: bump when what mining keeps changes: older entries are then ignored
CACHE_FORMAT = 1
_CHUNK = 1 << 20


def default_cache_folder() -> Path:
    return cache_folder("proofs")


_DIGESTS: dict[tuple[str, int, int], str] = {}


def file_digest(path: Path) -> str | None:
    """The SHA-256 of ``path``'s bytes (remembered per path, size and modification time)."""
    try:
        stat = path.stat()
    except OSError:
        return None
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    known = _DIGESTS.get(key)
    if known is not None:
        return known
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
    except OSError:
        return None
    _DIGESTS[key] = found = digest.hexdigest()
    return found


class ProofCache:
    """Mined proofs on disk, keyed by the digests of a module's files."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder if folder is not None else default_cache_folder()
        #: entries read back (hits) and written (misses that were mined)
        self.hits = 0
        self.writes = 0

    def key(self, module: str, digests: Sequence[str]) -> str:
        text = "\0".join((str(CACHE_FORMAT), module, *digests))
        return hashlib.sha256(text.encode()).hexdigest()[:40]

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> list[ProofExample] | None:
        try:
            rows = json.loads(self._path(key).read_text(encoding="utf-8"))
            found = [
                ProofExample(name, statement, tuple(script), origin)
                for name, statement, script, origin in rows
            ]
        except (OSError, ValueError, TypeError):
            return None  # absent, unreadable or of another layout: mine again
        self.hits += 1
        return found

    def put(self, key: str, examples: Sequence[ProofExample]) -> None:
        path = self._path(key)
        rows = [[e.name, e.statement, list(e.script), e.origin] for e in examples]
        handle_name = ""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(
                "w", encoding="utf-8", dir=path.parent, suffix=".tmp", delete=False
            ) as handle:
                handle_name = handle.name
                json.dump(rows, handle)
            os.replace(handle_name, path)
            self.writes += 1
        except OSError:
            if handle_name:
                with contextlib.suppress(OSError):
                    os.unlink(handle_name)
