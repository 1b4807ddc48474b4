"""Writing proofs into files: splicing, and atomic replacement of the file.

A file is only ever replaced through a temporary file in the same directory
and ``os.replace``, after the caller has verified the new content and taken
the file's lock; a crash at any moment leaves either the old file or the new
one, never a mix. After the temporary file is written and before the rename,
the file on disk is compared with the text the proofs were found for: if the
user edited it meanwhile, nothing is written (:func:`write_atomic` says what
window is left).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import FileChangedError, FileWriteError

__all__ = ["Patch", "apply_patches", "write_atomic"]


@dataclass(frozen=True, slots=True)
class Patch:
    #: a hole of any backend (see :class:`~..provers.backend.Hole`)
    hole: Any
    sentences: tuple[str, ...]
    #: helper lemmas (whole declarations) inserted just before the hole's declaration
    helpers: tuple[str, ...] = ()
    #: imports the proof needs (allowed ones only: the backend places them), added once per file
    imports: tuple[str, ...] = ()

    def replacement(self) -> str:
        text: str = self.hole.replacement(self.sentences)
        return text

    def insertion(self, text: str) -> str:
        """The helpers' text as inserted before the declaration (with its indentation)."""
        if not self.helpers:
            return ""
        line_start = text.rfind("\n", 0, self.hole.statement_start) + 1
        indent = text[line_start : self.hole.statement_start]
        indent = indent if not indent.strip() else ""
        return "".join(f"{h}\n\n{indent}" for h in self.helpers)


def apply_patches(
    text: str, patches: Sequence[Patch], import_insertion: tuple[int, str] = (0, "")
) -> str:
    """Replace each patched hole's proof span (and insert its helpers before its declaration,
    and ``import_insertion``'s text at its offset, as the backend places the imports);
    every other byte stays as it was."""
    at, imports = import_insertion
    ordered = sorted(patches, key=lambda p: p.hole.proof_start, reverse=True)
    for earlier, later in zip(ordered[1:], ordered, strict=False):
        if earlier.hole.proof_end > later.hole.proof_start:
            raise ValueError("overlapping patches")
    for patch in ordered:
        if imports and patch.hole.proof_end <= at:
            # every patch below the imports is in: ``at`` still points where it did
            text, imports = text[:at] + imports + text[at:], ""
        insertion = patch.insertion(text)
        text = text[: patch.hole.proof_start] + patch.replacement() + text[patch.hole.proof_end :]
        if insertion:
            start = patch.hole.statement_start
            text = text[:start] + insertion + text[start:]
    return text[:at] + imports + text[at:]


#: what identifies a file's content on disk without reading it: a save by rename changes
#: the inode, a save in place the size or the times
_Identity = tuple[int, int, int, int, int]


def _identity(stat: os.stat_result) -> _Identity:
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


def _changed(path: Path) -> FileChangedError:
    return FileChangedError(
        f"{path} changed on disk while its proofs were searched and checked (an edit, or "
        "another writer); it was not overwritten. Its verified proofs stay in the ledger, "
        "not written: run the same command again to write them into the file as it is now."
    )


def _look(path: Path, expected: str) -> _Identity:
    """The identity of ``path`` if it holds ``expected`` (as read with universal newlines,
    or byte for byte); else :class:`FileChangedError`."""
    try:
        with open(path, "rb") as handle:
            seen = _identity(os.fstat(handle.fileno()))
            data = handle.read()
    except FileNotFoundError:
        raise _changed(path) from None
    current = data.decode("utf-8", errors="surrogateescape")
    if current != expected and current.replace("\r\n", "\n").replace("\r", "\n") != expected:
        raise _changed(path)
    return seen


def write_atomic(path: Path, new_text: str, expected_old: str) -> None:
    """Replace ``path``'s content with ``new_text`` if it still holds ``expected_old``.

    The caller holds the file's lock (:func:`.locks.file_lock`); every orch
    writer takes it, so no other orch process writes ``path`` meanwhile. An
    editor does not take it, hence, in order:

    1. the temporary file (same folder) is written and fsynced;
    2. ``path`` is read and compared with ``expected_old``, twice, its identity
       (inode, size, modification and change times) compared between the two;
    3. the temporary file and ``path`` are *exchanged* in one step (Linux's
       ``renameat2(RENAME_EXCHANGE)``): ``path`` holds the new text, and the
       temporary name holds the file exactly as it was at that instant;
    4. that file is compared with ``expected_old`` once more. If a save landed
       after step 2 (a rename over ``path``, or an in-place save that had
       started: its truncation shows), the exchange is undone, ``path`` holds
       the user's file again, and :class:`FileChangedError` is raised;
    5. the old text is removed and the folder fsynced.

    Residual window, stated honestly: an editor that opened the file before
    step 3 and truncates it only after step 4 (inside one ``open`` call), or
    that writes in place through a descriptor it opened long before, writes
    into the old file, which is then removed; a second save landing between
    the check and the undo of step 4 is lost. Where the exchange is not
    supported (not Linux, or a filesystem without it), step 3 is
    ``os.replace`` right after step 2, and a save landing between the two
    (a few system calls) or an in-place save straddling the rename is
    overwritten. A save after the replace replaces our text, as any later
    save does; the proofs are still in the ledger.

    A write that fails (``ENOSPC``, ``EIO``, a file size limit...) removes the
    temporary file and raises :class:`FileWriteError`: ``path`` keeps its bytes.
    """
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        raise _changed(path) from None
    tmp: Path | None = None
    try:
        fd, tmp_name = tempfile.mkstemp(
            prefix=f".{path.name}.", suffix=".orch-tmp", dir=path.parent
        )
        tmp = Path(tmp_name)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(new_text)
            handle.flush()
            os.fsync(handle.fileno())
            ours = os.fstat(handle.fileno()).st_ino
        os.chmod(tmp, mode)
        seen = _look(path, expected_old)
        # the last look: as little as possible between it and the exchange
        if _look(path, expected_old) != seen:
            raise _changed(path)
        if _exchange(tmp, path):
            _keep_or_undo(path, tmp, expected_old, ours)
            tmp.unlink()  # the old text
        else:
            os.replace(tmp, path)
        tmp = None
    except FileWriteError:
        raise  # the changed file could not be put back: it is the temporary file, kept
    except OSError as exc:
        _remove(tmp)
        raise FileWriteError(
            f"could not write {path}: {_describe(exc)}. The file is unchanged (the temporary "
            "file was removed). Free space on its filesystem or check the disk, then run the "
            "same command again: the verified proofs are in the ledger and are written "
            "without searching again.",
            exc.errno,
        ) from exc
    except BaseException:
        _remove(tmp)
        raise
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError as exc:
        raise FileWriteError(
            f"{path} was replaced with the verified proofs, but syncing its folder failed: "
            f"{_describe(exc)}. Check the disk.",
            exc.errno,
        ) from exc


def _keep_or_undo(path: Path, swapped: Path, expected: str, ours: int) -> None:
    """After the exchange: ``swapped`` names what ``path`` held. If that is not
    ``expected`` (a save landed), put it back at ``path`` and raise FileChangedError;
    ``swapped`` then names our text (removed by the caller's cleanup)."""
    try:
        _look(swapped, expected)
    except FileChangedError:
        if os.stat(path).st_ino == ours and not _exchange(swapped, path):  # pragma: no cover
            # it worked a moment ago
            raise FileWriteError(
                f"{path} was changed while the verified proofs were written, and putting "
                f"the changed file back failed: it is {swapped}. Move it back by hand.",
                None,
            ) from None
        # else a later save already replaced our text at ``path``: it stays
        raise _changed(path) from None


@functools.cache
def _renameat2() -> Any:
    """libc's ``renameat2`` (Linux, glibc 2.28 and later), or None."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:  # pragma: no cover - no C library to load
        return None
    return getattr(libc, "renameat2", None)


#: ``renameat2``'s flag that swaps two names atomically
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap the files named ``a`` and ``b`` in one step; False where that is not
    supported (then nothing happened)."""
    call = _renameat2()
    if call is None:
        return False
    if call(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def _remove(tmp: Path | None) -> None:
    if tmp is not None:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _describe(exc: OSError) -> str:
    """``No space left on device (ENOSPC)``: the message and the errno's name."""
    name = errno.errorcode.get(exc.errno, "") if exc.errno is not None else ""
    text = exc.strerror or str(exc)
    return f"{text} ({name})" if name else text
