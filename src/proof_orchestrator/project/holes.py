"""Holes of any language: one type for the pipeline, one scanner by file suffix."""

from __future__ import annotations

from pathlib import Path

from ..coq.holes import CoqHole, scan_coq_text
from ..lean.holes import LeanHole, scan_lean_text

__all__ = ["SOURCE_SUFFIXES", "Hole", "language_of", "scan_text"]

Hole = CoqHole | LeanHole

#: file suffix -> language
SOURCE_SUFFIXES = {".v": "coq", ".lean": "lean"}


def language_of(path: Path) -> str:
    try:
        return SOURCE_SUFFIXES[path.suffix]
    except KeyError:
        raise ValueError(f"{path} is neither a Coq (.v) nor a Lean (.lean) file") from None


def scan_text(path: Path, text: str) -> list[Hole]:
    """The holes of ``text`` (the content of ``path``), in file order."""
    if language_of(path) == "lean":
        return list(scan_lean_text(path, text))
    return list(scan_coq_text(path, text))
