"""What the run's searches have learned about goals, reused by state.

A goal that runs out of budget is searched again at twice the budget, and the
same subgoals come up in sibling branches and in the lemmas of one file. Two
facts about a goal, as the prover prints it (hypotheses and conclusion), are
kept for the rest of the run:

- **closings**: the steps that closed it in some branch (the goal counts along
  the branch fall back below it). A later node whose first goal reads the same
  runs those steps first, as one move, and the search spends its time on the
  goals after it.
- **refutations**: a tactic that failed on it, left it as it was, or ran out of
  its time. A tactic's effect depends on the first goal alone, so a later node
  with that first goal skips the tactic instead of asking the prover again (a
  timeout, or a failure that took half the tactic's time, is skipped only while
  the tactic's time is no longer than the one it had). A tactic that names
  other goals (``all:``, ``2:``, Lean's ``all_goals``) is never refuted, and no
  closing is read across it.

Both are only ever suggestions and prunings: a reused closing runs in the
prover like any step, and a found proof is checked as always. Refutations are
kept per hole (a tactic that fails above a lemma may work below it); closings
per file, where another hole's subgoal may read the same. Keys are digests of
the goal's text (with the hole's or the file's name), and each kind is one
table of the most recent :data:`MAX_ENTRIES` (about 30 MB).
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["MAX_ENTRIES", "MEMORY_COUNTS", "GoalMemory", "MemoryCounts", "SearchMemory"]

_V = TypeVar("_V")

#: entries kept in each table of a :class:`SearchMemory` (the oldest go first)
MAX_ENTRIES = 200_000


@dataclass(slots=True)
class MemoryCounts:
    """How often the run's searches used what earlier ones learned (for benchmark results)."""

    #: candidate tactics not sent: refuted on the same goal before
    skipped: int = 0
    #: closings run at a node whose first goal one closed before
    closings_tried: int = 0
    #: those that closed the goal again
    closings_reused: int = 0

    def as_dict(self) -> dict[str, int]:
        return {
            "skipped": self.skipped,
            "closings_tried": self.closings_tried,
            "closings_reused": self.closings_reused,
        }


#: the process's counts, over every search it ran
MEMORY_COUNTS = MemoryCounts()


def _digest(*parts: str) -> bytes:
    return hashlib.blake2b("\x00".join(parts).encode(), digest_size=16).digest()


class _Table(Generic[_V]):
    """A dictionary that forgets its oldest entries past :data:`MAX_ENTRIES`."""

    def __init__(self, limit: int = MAX_ENTRIES) -> None:
        self._items: OrderedDict[bytes, _V] = OrderedDict()
        self._limit = limit

    def get(self, key: bytes) -> _V | None:
        return self._items.get(key)

    def put(self, key: bytes, value: _V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self._limit:
            self._items.popitem(last=False)

    def pop(self, key: bytes) -> None:
        self._items.pop(key, None)

    def __len__(self) -> int:
        return len(self._items)


class GoalMemory:
    """The view of a :class:`SearchMemory` that one search of one hole uses."""

    def __init__(
        self,
        refutations: _Table[float],
        closings: _Table[tuple[str, ...]],
        hole: str,
        file: str,
    ) -> None:
        self._refutations = refutations
        self._closings = closings
        self._hole = hole
        self._file = file

    def refuted(self, goal: str, tactic: str, seconds: float) -> bool:
        """``tactic`` failed on ``goal`` before, or ran out of at least ``seconds``."""
        within = self._refutations.get(_digest(self._hole, goal, tactic))
        return within is not None and within >= seconds

    def refute(self, goal: str, tactic: str, seconds: float = math.inf) -> None:
        """``tactic`` failed on ``goal`` (``seconds``: it ran out of that much time)."""
        key = _digest(self._hole, goal, tactic)
        self._refutations.put(key, max(seconds, self._refutations.get(key) or 0.0))

    def closing(self, goal: str) -> tuple[str, ...] | None:
        """Steps that closed ``goal`` in an earlier branch, if any."""
        return self._closings.get(_digest(self._file, goal))

    def closed(self, goal: str, steps: Sequence[str]) -> None:
        """``steps`` closed ``goal`` (the shortest known is kept)."""
        key = _digest(self._file, goal)
        known = self._closings.get(key)
        if known is None or len(steps) < len(known):
            self._closings.put(key, tuple(steps))

    def forget(self, goal: str) -> None:
        """``goal``'s closing did not close it again, or was part of a proof the kernel
        refused: it is not offered any more."""
        self._closings.pop(_digest(self._file, goal))


class SearchMemory:
    """Closings per file and refutations per hole, for one run (see the module's
    docstring); each kind in one table of at most ``limit`` entries."""

    def __init__(self, limit: int = MAX_ENTRIES) -> None:
        self._refutations: _Table[float] = _Table(limit)
        self._closings: _Table[tuple[str, ...]] = _Table(limit)

    def for_goal(self, file: str, hole: str) -> GoalMemory:
        """The memory a search of hole ``hole`` (a name unique in the run) in ``file`` uses."""
        return GoalMemory(self._refutations, self._closings, hole, file)
