"""Reading a Coq project's layout: the ``_CoqProject`` file and its flags."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["CoqProject", "find_coqproject", "load_coqproject", "project_for"]


@dataclass(frozen=True, slots=True)
class CoqProject:
    """Where a project lives and the flags that ``coqc``/``coqtop`` need for it.

    ``flags`` holds ``-Q``/``-R``/``-I`` pairs with absolute directories and
    the options given through ``-arg``; ``files`` lists the ``.v`` files the
    ``_CoqProject`` names (empty when there is no ``_CoqProject``).
    """

    root: Path
    flags: tuple[str, ...] = ()
    files: tuple[Path, ...] = field(default=())
    coqproject: Path | None = None


def find_coqproject(start: Path) -> Path | None:
    """The nearest ``_CoqProject`` in ``start`` or one of its parents."""
    here = start if start.is_dir() else start.parent
    for folder in (here, *here.parents):
        candidate = folder / "_CoqProject"
        if candidate.is_file():
            return candidate
    return None


def load_coqproject(path: Path) -> CoqProject:
    """Parse a ``_CoqProject`` file (comments start with ``#``)."""
    root = path.parent.resolve()
    words: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0]
        words.extend(shlex.split(line))
    flags: list[str] = []
    files: list[Path] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word in ("-Q", "-R") and i + 2 < len(words):
            directory = (root / words[i + 1]).resolve()
            flags += [word, str(directory), words[i + 2]]
            i += 3
        elif word == "-I" and i + 1 < len(words):
            flags += ["-I", str((root / words[i + 1]).resolve())]
            i += 2
        elif word == "-arg" and i + 1 < len(words):
            flags += shlex.split(words[i + 1])
            i += 2
        elif word.endswith(".v"):
            files.append((root / word).resolve())
            i += 1
        else:
            i += 1  # other options (-docroot, .mlg files, ...) do not matter to us
    return CoqProject(root=root, flags=tuple(flags), files=tuple(files), coqproject=path)


def project_for(path: Path) -> CoqProject:
    """The project that ``path`` (a file or directory) belongs to."""
    found = find_coqproject(path.resolve())
    if found is not None:
        return load_coqproject(found)
    root = path.resolve() if path.is_dir() else path.resolve().parent
    return CoqProject(root=root)
