"""The orchestrator's own folder in a project (``.orch/``), kept out of version control.

It also holds the *scratch folders* of running processes: verification
compiles candidate files in ``.orch/tmp/verify-<pid>-<random>/``. A scratch
folder is removed on every way out of the process that Python sees (normal
end, exception, asyncio cancellation, which is what SIGINT and SIGTERM become
in the CLI, and interpreter exit). A process killed outright (``kill -9``, the
OOM killer) cannot clean up: its folder carries its pid, and the next process
that makes a scratch folder in the project removes the folders of processes
that are no longer alive (:func:`sweep_scratch`).

When the project's disk is nearly full (or ``.orch/`` cannot be written), the
scratch folder goes to the system's temporary folder instead, named
``orch-verify-<pid>-<random>`` and swept the same way.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import tempfile
import weakref
from collections.abc import Iterator
from pathlib import Path

import psutil

__all__ = [
    "BUILD_DIR",
    "MIN_FREE_BYTES",
    "SCRATCH_DIR",
    "STATE_DIR",
    "ScratchFolder",
    "build_root",
    "in_state_dir",
    "make_state_dir",
    "new_scratch",
    "scratch_dir",
    "scratch_root",
    "sweep_scratch",
]

#: name of the folder that holds the ledger, PR bodies and other state of ``orch``
STATE_DIR = ".orch"
#: the folder inside :data:`STATE_DIR` that holds scratch folders
SCRATCH_DIR = "tmp"
#: the folder inside :data:`STATE_DIR` that holds what orch compiles of a project
BUILD_DIR = "build"
#: below this many free bytes on the project's disk, scratch folders go to the system temp folder
MIN_FREE_BYTES = 256 * 1024**2
#: a scratch folder's name: its kind, the pid of the process that made it, 8 random hex digits
_SCRATCH_NAME = re.compile(r"(?P<kind>[a-z]+)-(?P<pid>[0-9]+)-[0-9a-f]{8}")
#: what scratch folders in the system temp folder are prefixed with
_TEMP_PREFIX = "orch-"
#: the places this process already swept (each is swept once per process)
_swept: set[Path] = set()


def make_state_dir(folder: Path) -> Path:
    """Create ``folder`` (and its parents) and, if it is an ``.orch`` folder, its ``.gitignore``.

    The ``.gitignore`` holds ``*``, as pytest, mypy and ruff do for their caches,
    so ``git status`` stays clean in a project where ``orch`` ran. An existing
    ``.gitignore`` is left as the user made it.
    """
    folder.mkdir(parents=True, exist_ok=True)
    for part in (folder, *folder.parents):
        if part.name == STATE_DIR:
            ignore = part / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# made by orch: its state stays out of version control\n*\n")
            break
    return folder


def in_state_dir(path: str | Path) -> bool:
    """Is ``path`` inside some ``.orch`` folder (state and scratch files, never the user's)?"""
    return STATE_DIR in Path(path).parts


def build_root(project_root: Path) -> Path:
    """Where orch compiles a project's files, ``<project>/.orch/build`` (the user's tree
    mirrored: ``theories/x.v`` is compiled to ``.orch/build/theories/x.vo``)."""
    return project_root / STATE_DIR / BUILD_DIR


def scratch_root(project_root: Path) -> Path:
    """The folder that holds the project's scratch folders, ``<project>/.orch/tmp``."""
    return project_root / STATE_DIR / SCRATCH_DIR


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    return pid > 0 and psutil.pid_exists(pid)


def _places(project_root: Path | None) -> list[tuple[Path, str]]:
    """(folder, name prefix) of every place scratch folders of ``project_root`` may be."""
    places = [(scratch_root(project_root), "")] if project_root is not None else []
    places.append((Path(tempfile.gettempdir()), _TEMP_PREFIX))
    return places


def sweep_scratch(project_root: Path | None = None) -> list[Path]:
    """Remove the scratch folders of processes that are no longer alive; the removed ones.

    Looks in ``project_root``'s ``.orch/tmp`` and in the system temp folder
    (``orch-<kind>-<pid>-<random>``). Folders of live processes (this one
    included) and anything not named like a scratch folder are left alone.
    """
    removed: list[Path] = []
    for folder, prefix in _places(project_root):
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if not entry.name.startswith(prefix):
                continue
            found = _SCRATCH_NAME.fullmatch(entry.name.removeprefix(prefix))
            if found is None or _alive(int(found["pid"])):
                continue
            with contextlib.suppress(OSError):
                if not entry.is_dir(follow_symlinks=False):
                    continue
            shutil.rmtree(entry.path, ignore_errors=True)
            if not os.path.lexists(entry.path):
                removed.append(Path(entry.path))
    return removed


def _sweep_once(project_root: Path | None) -> None:
    """:func:`sweep_scratch`, the first time this process makes scratch space there."""
    key = project_root.resolve() if project_root is not None else Path(tempfile.gettempdir())
    if key not in _swept:
        _swept.add(key)
        sweep_scratch(project_root)


def _roomy(folder: Path) -> bool:
    try:
        return shutil.disk_usage(folder).free >= MIN_FREE_BYTES
    except OSError:
        return False


def new_scratch(project_root: Path | None, kind: str = "verify") -> Path:
    """A new, empty scratch folder of this process; the caller removes it.

    It is ``<project_root>/.orch/tmp/<kind>-<pid>-<random>`` unless there is
    no project root, its disk has less than :data:`MIN_FREE_BYTES` free, or
    ``.orch`` cannot be written: then ``<system temp>/orch-<kind>-<pid>-<random>``.
    Dead processes' folders are swept first (once per process and project).
    """
    if _SCRATCH_NAME.fullmatch(f"{kind}-1-00000000") is None:
        raise ValueError(f"a scratch folder's kind is lowercase letters, not {kind!r}")
    _sweep_once(project_root)
    name = f"{kind}-{os.getpid()}-{secrets.token_hex(4)}"
    if project_root is not None and _roomy(project_root):
        try:
            folder = make_state_dir(scratch_root(project_root)) / name
            folder.mkdir()
            return folder
        except OSError:
            pass  # a read-only project, say: the system temp folder will do
    folder = Path(tempfile.gettempdir()) / f"{_TEMP_PREFIX}{name}"
    folder.mkdir(mode=0o700)
    return folder


@contextlib.contextmanager
def scratch_dir(project_root: Path | None, kind: str = "verify") -> Iterator[Path]:
    """A scratch folder (:func:`new_scratch`) for the block, removed however the block ends."""
    folder = new_scratch(project_root, kind)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class ScratchFolder:
    """A scratch folder kept for an object's lifetime: made on first use, removed by :meth:`close`.

    If :meth:`close` is never called (the owner is dropped, the interpreter
    exits with it alive), a finalizer removes the folder then.
    """

    def __init__(self, project_root: Path | None = None, kind: str = "verify") -> None:
        self.project_root = project_root
        self.kind = kind
        self._path: Path | None = None
        self._finalizer: weakref.finalize[[str], ScratchFolder] | None = None
        if project_root is not None:
            _sweep_once(project_root)  # what a killed process left goes at the start

    def path(self, project_root: Path | None = None) -> Path:
        """The folder, made now if needed (in ``project_root`` if none was given at creation)."""
        if self._path is None:
            self._path = new_scratch(self.project_root or project_root, self.kind)
            self._finalizer = weakref.finalize(self, _remove, str(self._path))
        return self._path

    def subfolder(self, prefix: str = "", project_root: Path | None = None) -> Path:
        """A new folder inside :meth:`path` (removed with it)."""
        return Path(tempfile.mkdtemp(prefix=prefix, dir=self.path(project_root)))

    def close(self) -> None:
        """Remove the folder and everything in it (it is made again if used again)."""
        finalizer, self._finalizer, self._path = self._finalizer, None, None
        if finalizer is not None:
            finalizer()


def _remove(folder: str) -> None:
    shutil.rmtree(folder, ignore_errors=True)
