"""Scripts the whole-file check refused, per goal and file text, for one run or one ``orch bg``.

A script the check refused (it does not compile in the file, or the axiom
audit finds something new in it) is refused again as long as the file's text
is the same: the check is deterministic. A strategy that finds it again has
found nothing, so it is not a candidate, and the goal's pass goes on to the
other strategies. Without this, ``orch bg`` cycled without end on a goal
whose only proof the audit refuses (the ``cached`` strategy offered it again
at once, every cycle). The record is kept per file text, not in the ledger:
once the file changes (a neighbour is proved, an import is added), the same
script may pass. A run keeps its own (``orch bg`` one for all its cycles):
what the check refuses depends on the run's settings (``--strict-holes``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

__all__ = ["Refusals"]


def _key(fingerprint: str, text: str) -> tuple[str, str]:
    return fingerprint, hashlib.sha256(text.encode()).hexdigest()


def _script(sentences: Sequence[str]) -> str:
    return " ".join(" ".join(sentences).split())


class Refusals:
    """Per (goal fingerprint, file text): the scripts the whole-file check refused."""

    def __init__(self) -> None:
        self._refused: dict[tuple[str, str], set[str]] = {}

    def add(self, fingerprint: str, text: str, sentences: Sequence[str]) -> None:
        self._refused.setdefault(_key(fingerprint, text), set()).add(_script(sentences))

    def refused(self, fingerprint: str, text: str, sentences: Sequence[str]) -> bool:
        return _script(sentences) in self._refused.get(_key(fingerprint, text), ())

    def clear(self) -> None:
        self._refused.clear()
