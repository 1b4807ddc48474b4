"""The Coq side of ``orch golf``: shorter scripts for finished proofs, checked in a session."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import ProverError
from ..provers.base import TacticStatus
from .holes import qed_proofs
from .session import CoqSession
from .strategies.micro import GENERIC_TACTICS, expand
from .syntax import one_sentence

__all__ = ["CoqGolf", "script_length", "shorten"]

#: tactics that call a program outside Coq
EXTERNAL = ("hammer",)


def script_length(sentences: Sequence[str]) -> int:
    return len(" ".join(s.strip() for s in sentences))


def external(sentences: Sequence[str]) -> bool:
    return any(word in s.split() for s in sentences for word in EXTERNAL)


async def _closes(session: CoqSession, sentences: Sequence[str], timeout: float) -> bool:
    try:
        result = await session.run_script(sentences, session.root, timeout=timeout)
    except (ProverError, ValueError):
        return False
    return result.status is TacticStatus.COMPLETE


async def shorten(
    session: CoqSession, sentences: tuple[str, ...], tactic_seconds: float
) -> tuple[str, ...]:
    """The shortest script found that still closes the goal (``sentences`` if none)."""
    best = sentences
    lia = await session.locate_ltac("Coq.micromega.Lia.lia")
    singles = sorted(expand(GENERIC_TACTICS, lia), key=len)
    for single in singles:
        if len(single) >= script_length(best):
            break
        if await _closes(session, [single], tactic_seconds) and (
            not external([single]) or external(best)
        ):
            best = (single,)
            break
    if len(best) > 1:
        for index in range(len(best) - 1, -1, -1):
            if one_sentence(best[index]).is_bullet_or_brace:
                continue  # the proof's structure stays as it was
            trial = best[:index] + best[index + 1 :]
            if trial and await _closes(session, trial, tactic_seconds):
                best = trial
    return best


class CoqGolf:
    """What ``orch golf`` needs of Coq (the backend's ``golf`` feature)."""

    @staticmethod
    def finished_proofs(path: Path, text: str) -> list[tuple[Any, tuple[str, ...]]]:
        """(hole, proof sentences) of every ``Qed`` proof, in file order."""
        return list(qed_proofs(path, text))

    @staticmethod
    async def shorten(
        session: Any, sentences: tuple[str, ...], tactic_seconds: float
    ) -> tuple[str, ...]:
        return await shorten(session, sentences, tactic_seconds)

    script_length = staticmethod(script_length)
