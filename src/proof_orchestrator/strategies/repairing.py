"""What repairing a broken proof needs whatever the prover (``orch repair``).

The provers' own parts (``coq/broken.py``, ``lean/broken.py`` and their
``strategies/repair.py``) read their prover's messages and scripts; the steps
that do not depend on the prover are here, once.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence

from ..goals import BreakKind

__all__ = ["apply_edits", "classify_error", "similar_names"]


def classify_error(error: str, kinds: Iterable[tuple[BreakKind, re.Pattern[str]]]) -> BreakKind:
    """The first of ``kinds`` whose pattern the error matches (``TACTIC_FAILURE`` when
    none does)."""
    for kind, pattern in kinds:
        if pattern.search(error):
            return kind
    return BreakKind.TACTIC_FAILURE


def similar_names(missing: str, names: Sequence[str], most: int) -> list[str]:
    """The names that may be what ``missing`` became: spelled like it (their last
    component against its), closest first, at most ``most``."""
    short = missing.rsplit(".", 1)[-1]

    def likeness(name: str) -> float:
        return difflib.SequenceMatcher(None, short, name.rsplit(".", 1)[-1]).ratio()

    close = [n for n in names if n not in (missing, short) and likeness(n) >= 0.5]
    return sorted(close, key=lambda n: -likeness(n))[:most]


def apply_edits(text: str, edits: Iterable[tuple[int, int, str]]) -> str:
    """``text`` with each ``(start, end, replacement)`` made (the spans do not overlap)."""
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text
