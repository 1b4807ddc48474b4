"""The order in which goals are worked on.

``priority = user + 2.0 * dependents + 0.5 * min(stuck_hours, 24) - difficulty``

* ``user``: a priority the user gives (0 by default);
* ``dependents``: how many times the goal's name is mentioned in the same
  file after its proof (a lemma that others use goes first); counted with a
  :class:`Mentions` index built once per file, so a file of n declarations
  costs O(n) to index and O(log n) per goal, not a scan of the rest of the
  file per goal;
* ``stuck_hours``: hours since the goal was first seen in the ledger;
* ``difficulty = size / 80 + binders / 2 + 0.5 * types + 0.25 * failures``:
  statement length in characters, number of bound variables, inductive types
  mentioned (nat, list, bool, option and capitalised type names), and failed
  attempts on the same fingerprint in the ledger.

Higher priority first. Goals that failed and are revisited with a doubled
budget go back into the queue with ``-10`` per revisit, so new and cheap goals
are tried before old expensive ones.

A worker asks first for a goal of the file it worked on last, within a margin
of the highest priority (:meth:`GoalQueue.pop` with ``prefer``), the next one
down the file: a prover process holds one file's text, and goals that hop from
file to file make each process load another file (on an eight-file draw, two
thirds of the sentences loaded were loads of that kind), while goals taken out
of order in a long file made it send half the file again each time (std++'s
``sets``: 500 of its 1,080 sentences per goal).
"""

from __future__ import annotations

import array
import bisect
import heapq
import itertools
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

__all__ = ["GoalQueue", "Mentions", "difficulty", "priority"]

T = TypeVar("T")

_BINDER = re.compile(r"\bforall\s+((?:\(?[A-Za-z_][\w']*\s*)+)")
_TYPE_WORDS = re.compile(r"\b(?:nat|list|bool|option|Z|N|positive|[A-Z][A-Za-z]+)\b")


#: an identifier not preceded by an identifier character or a dot (``L.a`` is not ``a``)
_IDENTIFIER = re.compile(r"(?<![\w'.])[A-Za-z_][\w']*")
_SIMPLE_NAME = re.compile(r"[A-Za-z_][\w']*\Z")


def _whole(name: str) -> re.Pattern[str]:
    """``name`` not followed by an identifier character."""
    return re.compile(rf"{re.escape(name)}(?![\w'])")


class Mentions:
    """Where each identifier of a text occurs, to count later mentions of a name.

    ``after(name, offset)`` counts the whole-identifier occurrences of ``name``
    at or after ``offset``: the same as searching ``text[offset:]`` for
    ``name`` not preceded by an identifier character or a dot and not followed
    by an identifier character. The text is tokenised once; names that are not
    plain identifiers (``foo#2`` for the second ``sorry`` of a Lean
    declaration) are searched for in the text.
    """

    def __init__(self, text: str) -> None:
        self._text = text
        # arrays, not lists of ints: a few bytes per identifier of the file
        self._positions: defaultdict[str, array.array[int]] = defaultdict(lambda: array.array("q"))
        for match in _IDENTIFIER.finditer(text):
            self._positions[match.group()].append(match.start())

    def after(self, name: str, offset: int = 0) -> int:
        if not name:
            return 0
        if _SIMPLE_NAME.match(name):
            positions = self._positions.get(name, array.array("q"))
            first = bisect.bisect_left(positions, offset)
            count = len(positions) - first
            # the search starts at ``offset`` with nothing before it: a name there counts
            # even right after an identifier character or a dot
            at_offset = first < len(positions) and positions[first] == offset
            if offset > 0 and not at_offset and _whole(name).match(self._text, offset):
                count += 1
            return count
        pattern = rf"(?<![\w'.]){re.escape(name)}(?![\w'])"
        return sum(1 for _ in re.finditer(pattern, self._text[offset:]))


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

    def pop(self, prefer: Callable[[T], float | None] | None = None, margin: float = 0.0) -> T:
        """The item of highest priority; with ``prefer``, of the items within ``margin``
        of the highest priority that it ranks (not None), the one it ranks lowest
        (then the highest priority) instead: a linear scan."""
        if prefer is not None and self._heap:
            floor = self._heap[0].key[0] + margin  # keys hold the priority negated
            chosen: int | None = None
            best: tuple[float, tuple[float, int]] | None = None
            for index, entry in enumerate(self._heap):
                if entry.key[0] > floor:
                    continue
                rank = prefer(entry.item)
                if rank is not None and (best is None or (rank, entry.key) < best):
                    chosen, best = index, (rank, entry.key)
            if chosen is not None:
                entry = self._heap[chosen]
                last = self._heap.pop()
                if chosen < len(self._heap):
                    self._heap[chosen] = last
                    heapq.heapify(self._heap)
                return entry.item
        return heapq.heappop(self._heap).item

    def __len__(self) -> int:
        return len(self._heap)
