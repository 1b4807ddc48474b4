"""The order in which goals are worked on.

``priority = user + 2.0 * dependents + 0.5 * min(stuck_hours, 24) - difficulty``

* ``user``: a priority the user gives (0 by default);
* ``dependents``: how many other declarations in the same file mention the
  goal's name after it (a lemma that others use goes first);
* ``stuck_hours``: hours since the goal was first seen in the ledger;
* ``difficulty = size / 80 + binders / 2 + 0.5 * types + 0.25 * failures``:
  statement length in characters, number of bound variables, inductive types
  mentioned (nat, list, bool, option and capitalised type names), and failed
  attempts on the same fingerprint in the ledger.

Higher priority first. Goals that failed and are revisited with a doubled
budget go back into the queue with ``-10`` per revisit, so new and cheap goals
are tried before old expensive ones.
"""

from __future__ import annotations

import heapq
import itertools
import re
from dataclasses import dataclass, field
from typing import Generic, TypeVar

__all__ = ["GoalQueue", "difficulty", "priority"]

T = TypeVar("T")

_BINDER = re.compile(r"\bforall\s+((?:\(?[A-Za-z_][\w']*\s*)+)")
_TYPE_WORDS = re.compile(r"\b(?:nat|list|bool|option|Z|N|positive|[A-Z][A-Za-z]+)\b")


def difficulty(statement: str, failures: int = 0) -> float:
    binders = sum(
        len(re.findall(r"[A-Za-z_][\w']*", m.group(1))) for m in _BINDER.finditer(statement)
    )
    types = len(set(_TYPE_WORDS.findall(statement)))
    return len(statement) / 80 + binders / 2 + 0.5 * types + 0.25 * failures


def priority(
    statement: str,
    *,
    user: float = 0.0,
    dependents: int = 0,
    stuck_hours: float = 0.0,
    failures: int = 0,
    revisits: int = 0,
) -> float:
    return (
        user
        + 2.0 * dependents
        + 0.5 * min(stuck_hours, 24.0)
        - difficulty(statement, failures)
        - 10.0 * revisits
    )


@dataclass(order=True)
class _Entry(Generic[T]):
    key: tuple[float, int]
    item: T = field(compare=False)


class GoalQueue(Generic[T]):
    """A max-priority queue, first-in first-out among equal priorities."""

    def __init__(self) -> None:
        self._heap: list[_Entry[T]] = []
        self._counter = itertools.count()

    def push(self, item: T, prio: float) -> None:
        heapq.heappush(self._heap, _Entry((-prio, next(self._counter)), item))

    def pop(self) -> T:
        return heapq.heappop(self._heap).item

    def __len__(self) -> int:
        return len(self._heap)
