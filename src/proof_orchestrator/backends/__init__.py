"""The backend registry: which prover backend owns a file, chosen by its suffix.

The only module above the seam that imports the prover packages. Everything
else asks here (:func:`backend_for`, :func:`scan_text`, :func:`load_source`)
and talks to the :class:`~..provers.backend.Backend` it gets.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..config import ConfigError
from ..coq.backend import CoqBackend
from ..errors import SourceSyntaxError, UnreadableSource
from ..lean.backend import LeanBackend
from ..project.source import line_and_column, read_source
from ..provers.backend import Backend, Hole
from ..provers.build import ProjectBuilder

__all__ = [
    "SOURCE_SUFFIXES",
    "backend_for",
    "backend_named",
    "backends",
    "check_imports",
    "language_of",
    "load_source",
    "project_builders",
    "project_root",
    "register",
    "scan_text",
]

_BACKENDS: dict[str, Backend] = {}
#: file suffix -> language
SOURCE_SUFFIXES: dict[str, str] = {}


def register(backend: Backend) -> None:
    """Make ``backend`` own its suffixes (a later registration of a language replaces it)."""
    _BACKENDS[backend.language] = backend
    for suffix in backend.suffixes:
        SOURCE_SUFFIXES[suffix] = backend.language


def unregister(language: str) -> None:
    """Forget a backend (the tests' fakes)."""
    backend = _BACKENDS.pop(language, None)
    if backend is not None:
        for suffix in backend.suffixes:
            SOURCE_SUFFIXES.pop(suffix, None)


register(CoqBackend())
register(LeanBackend())


def backends() -> list[Backend]:
    return list(_BACKENDS.values())


def language_of(path: Path) -> str:
    try:
        return SOURCE_SUFFIXES[path.suffix]
    except KeyError:
        raise ValueError(f"{path} is neither a Coq (.v) nor a Lean (.lean) file") from None


def backend_for(path: Path) -> Backend:
    """The backend of ``path``'s language (ValueError for another suffix)."""
    return _BACKENDS[language_of(path)]


def backend_named(language: str) -> Backend:
    try:
        return _BACKENDS[language]
    except KeyError:
        raise ValueError(f"no backend for the language {language!r}") from None


def check_imports(names: Iterable[str]) -> None:
    """:class:`ConfigError` unless every backend-side import in ``names`` (``allow_import``)
    is one that some backend knows."""
    known = sorted({name for b in backends() for name in b.importable})
    unknown = sorted(set(names) - set(known))
    if unknown:
        raise ConfigError(
            f"allow_import: unknown import(s) {', '.join(unknown)}; known: {', '.join(known)}"
        )


def project_root(anchor: Path) -> Path:
    """The root of the project ``anchor`` (a file or a folder) belongs to, where its
    settings and ledger live. A source file: its own language's rule. Anything else:
    the nearest project description any language finds above it (a ``_CoqProject``,
    a ``lakefile``), else the folder itself."""
    if anchor.suffix in SOURCE_SUFFIXES and not anchor.is_dir():
        return backend_for(anchor).project_root(anchor)
    found = [root for b in backends() if (root := b.described_root(anchor)) is not None]
    if found:
        return max(found, key=lambda root: len(root.resolve().parts))
    start = anchor.resolve()
    return start if start.is_dir() else start.parent


def project_builders(anchor: Path, command: str = "") -> list[ProjectBuilder]:
    """The builders of the projects ``anchor`` (a file or a folder) is in: its own
    language's for a file, each language's that finds a project for a folder."""
    if anchor.is_file() and anchor.suffix in SOURCE_SUFFIXES:
        found = backend_for(anchor).builder(anchor, command)
        return [found] if found is not None else []
    return [b for b in (x.builder(anchor, command) for x in backends()) if b is not None]


def scan_text(path: Path, text: str) -> list[Hole]:
    """The holes of ``text`` (the content of ``path``), in file order."""
    return list(backend_for(path).scan(path, text))


def load_source(path: Path) -> tuple[str, list[Hole]]:
    """The text of ``path`` and its holes; :class:`UnreadableSource` names the file and place."""
    text = read_source(path)
    try:
        return text, scan_text(path, text)
    except SourceSyntaxError as exc:
        where = ""
        if exc.offset is not None:
            line, column = line_and_column(text, exc.offset)
            where = f" at line {line}, column {column}"
        raise UnreadableSource(f"{path}: {exc.reason}{where}") from exc
