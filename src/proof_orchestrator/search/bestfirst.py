"""Best-first search over proof states, written once for every prover.

Each node is a proof state reached by a list of tactics. A node is expanded
by asking every :data:`Expander` for candidate tactics on its first goal
(learned suggestions with the model's confidence, retrieved premises,
closing tactics, structural steps...), and running each from the node's
state. The priority of a new node is its depth plus half its open goals
minus twice the confidence of the tactic that led there, plus half a level
for each doubling of the goal's text; states with the same goals (up to the
names of their hypotheses) are merged (the first one reached is kept). The search stops at
the first tactic after which no goal remains, when ``max_expansions`` nodes
were expanded, or when the prover's CPU since the start reaches
``cpu_seconds``. Depth and expansions come from the caller (the budget's
:func:`search_limits`, shared by Coq's and Lean's searches).

With a :class:`~.memory.GoalMemory`, what the run learned before is reused by
state: a candidate refuted on the same first goal is not sent again, and a
node whose first goal an earlier branch closed runs that branch's steps first,
as one move. The search adds what it learns: every tactic that fails or times
out, and the steps that close a goal (the goal counts along a branch fall
below the count where the goal was first; tactics work on the first goal).
"""

from __future__ import annotations

import enum
import hashlib
import heapq
import itertools
import math
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from ..provers.base import ProofState, TacticResult, TacticStatus
from .memory import MEMORY_COUNTS, GoalMemory
from .proofstate import ProofStates

__all__ = [
    "DEPTH_BUDGET",
    "EXPANSIONS_PER_SECOND",
    "PROBE_CHUNK",
    "Accept",
    "Expander",
    "Probe",
    "SearchEnd",
    "SearchFound",
    "best_first",
    "fingerprint",
    "priority",
    "search_limits",
]

#: candidate tactics for a node: (first goal, tactics so far) -> [(tactic, confidence)]
Expander = Callable[[str, Sequence[str]], Awaitable[list[tuple[str, float]]]]
#: which of some tactics might change the goal at a state, asked at once (None: cannot say)
Probe = Callable[[Sequence[str], ProofState, float], Awaitable[list[bool] | None]]
#: whether steps that leave no goal (with their goal counts) make a proof the kernel takes
Accept = Callable[[tuple[str, ...], tuple[int, ...]], Awaitable[bool]]
#: candidates probed together, at most (a probe can take a tactic timeout per candidate)
PROBE_CHUNK = 8


class SearchEnd(enum.StrEnum):
    """Why a search ended."""

    #: a tactic left no goal: ``steps`` prove the goal
    FOUND = "found"
    #: the frontier or the expansion limit ran out
    EXHAUSTED = "exhausted"
    #: the CPU budget ran out
    TIMEOUT = "timeout"


#: node expansions per CPU second of budget (one expansion tries up to ~24 tactics)
EXPANSIONS_PER_SECOND = 50
#: up to this budget (CPU s) the search goes ``max_depth`` deep; one level more per doubling
DEPTH_BUDGET = 5.0


def search_limits(
    cpu_seconds: float, max_depth: int = 6, max_expansions: int | None = None
) -> tuple[int, int]:
    """(depth, expansions) of a search with ``cpu_seconds`` of budget."""
    expansions = max_expansions or max(20, round(EXPANSIONS_PER_SECOND * cpu_seconds))
    extra = 0
    budget = DEPTH_BUDGET
    while cpu_seconds > budget * 2 - 1e-9 and extra < 4:
        budget *= 2
        extra += 1
    return max_depth + extra, expansions


@dataclass(frozen=True, slots=True)
class SearchFound:
    """The end of a search: the proof's tactics and the goal counts along the way."""

    end: SearchEnd
    #: the tactics from the root to the proof (empty unless FOUND)
    steps: tuple[str, ...] = ()
    #: open goals at the root and after each step (the last is 0 when FOUND)
    counts: tuple[int, ...] = ()
    #: tactics run
    tried: int = 0
    expansions: int = 0


#: a goal being worked on along a branch: its text, the open goals when it was
#: first, and the number of steps before it
_Open = tuple[str, int, int]


@dataclass(order=True, slots=True)
class _Node:
    priority: float
    order: int
    state: ProofState = field(compare=False)
    goals: tuple[str, ...] = field(compare=False)
    steps: tuple[str, ...] = field(compare=False)
    counts: tuple[int, ...] = field(compare=False)
    #: the goals of the branch not closed yet, oldest first (see :func:`_closed`)
    opened: tuple[_Open, ...] = field(default=(), compare=False)


def _closed(
    opened: Sequence[_Open], steps: Sequence[str], goals: Sequence[str]
) -> tuple[tuple[_Open, ...], list[tuple[str, tuple[str, ...]]]]:
    """After ``steps`` from the root leave ``goals``: the goals still open along the
    branch, and the (goal, steps that closed it) of those the last step closed.

    A goal first seen with ``n`` goals open is closed once ``n - 1`` remain (the
    goals after it are untouched while tactics work on the first goal); when
    fewer remain, one step closed several goals at once, and none is recorded.
    """
    count = len(goals)
    still: list[_Open] = []
    done: list[tuple[str, tuple[str, ...]]] = []
    for entry in opened:
        goal, open_then, at = entry
        if open_then <= count:
            still.append(entry)
        elif open_then == count + 1:
            done.append((goal, tuple(steps[at:])))
    if goals:
        still.append((goals[0], count, len(steps)))
    return tuple(still), done


#: ``n, m : nat`` (Coq) or ``x y : Nat`` (Lean); names are separated by a comma or by
#: blanks, never by nothing (``(?:\s*,?\s*NAME)*`` would split one long name in
#: exponentially many ways before failing on a line without a colon)
_HYPOTHESIS = re.compile(
    r"^[ \t]*([A-Za-z_][\w']*(?:(?:[ \t]*,[ \t]*|[ \t]+)[A-Za-z_][\w']*)*)[ \t]*:[^=]", re.M
)
_IDENTIFIER = re.compile(r"(?<![\w'.#])([A-Za-z_][\w']*)")
_NOT_NAMES = frozenset(["forall", "exists", "fun", "let", "match", "fix", "if", "with"])


def _nameless(goal: str) -> str:
    """``goal`` with its hypotheses' names replaced by their positions (``#0``, ``#1``).

    ``intros``, ``move=> Hx`` and ``intuition`` often reach one state under
    different names; the search need not expand it three times.
    """
    names: list[str] = []
    for match in _HYPOTHESIS.finditer(goal.split("\n====", 1)[0].split("\n⊢", 1)[0]):
        found = re.split(r"[\s,]+", match.group(1).strip())
        if not _NOT_NAMES.intersection(found):
            names += found
    if not names:
        return goal
    places = {name: f"#{i}" for i, name in enumerate(dict.fromkeys(names))}
    return _IDENTIFIER.sub(lambda m: places.get(m.group(1), m.group(1)), goal)


def fingerprint(goals: Sequence[str]) -> str:
    """The identity of a state for merging: its goals, whitespace-normalised, with the
    hypotheses' names left out (:func:`_nameless`)."""
    text = "\x00".join(" ".join(_nameless(g).split()) for g in goals)
    return hashlib.sha256(text.encode()).hexdigest()


#: the most a tactic's confidence can take off a node's priority: two levels of depth
CONFIDENCE_CAP = 1.0


#: what a doubling of the goal's text adds to a node's priority
GROWTH_PENALTY = 0.5


def priority(depth: int, open_goals: int, confidence: float, growth: float = 1.0) -> float:
    """Lower is better: depth plus half the open goals minus twice the model's confidence,
    plus :data:`GROWTH_PENALTY` for each doubling of the goal's text (``growth``, the
    new first goal's length over its parent's).

    The confidence (a k-NN vote: a sum of similarities, so above 1 when several
    neighbours agree) counts up to :data:`CONFIDENCE_CAP`. Uncapped, a chain of
    confident suggestions went arbitrarily deep before a shallower, less
    confident branch was expanded. A step that blows the goal up (``unfold`` of
    a big definition, ``simpl`` into a ``match``) rarely starts a short proof,
    so its state waits behind the states of its depth that did not grow.
    """
    penalty = GROWTH_PENALTY * math.log2(growth) if growth > 1.0 else 0.0
    return depth + 0.5 * open_goals - 2.0 * min(confidence, CONFIDENCE_CAP) + penalty


async def best_first(
    states: ProofStates,
    expanders: Sequence[Expander],
    *,
    max_depth: int,
    max_expansions: int,
    cpu_seconds: float,
    tactic_seconds: float,
    per_node: int = 24,
    probe: Probe | None = None,
    accept: Accept | None = None,
    memory: GoalMemory | None = None,
) -> SearchFound:
    """Search from ``states.root`` (see the module's docstring).

    Candidates of a node are the expanders' proposals in the expanders' order,
    each tactic once (its first confidence kept), at most ``per_node`` of them.
    With a ``probe``, they are first asked about :data:`PROBE_CHUNK` at a time
    (fewer when the budget left could not cover that many timeouts), and only
    those it keeps are run one by one: the same steps, in the same order, for
    a fraction of the round trips. With ``accept``, steps that leave no goal are
    a proof only if it says so (the kernel's ``Qed``); else the search goes on.
    With ``memory``, earlier searches' refutations and closings are reused and
    this one's are added (see the module's docstring).
    """
    cpu_start = states.cpu_seconds()
    tried = 0
    expansions = 0

    def spent() -> float:
        return states.cpu_seconds() - cpu_start

    def end(kind: SearchEnd) -> SearchFound:
        return SearchFound(kind, tried=tried, expansions=expansions)

    root = states.root
    first = await states.show(root, timeout=tactic_seconds)
    if not first:
        return end(SearchEnd.EXHAUSTED)
    learner = _Learner(memory, tactic_seconds)
    counter = itertools.count()
    opened: tuple[_Open, ...] = ((first[0], len(first), 0),)
    frontier = [_Node(0.0, next(counter), root, first, (), (len(first),), opened)]
    seen = {fingerprint(first)}

    while frontier and expansions < max_expansions:
        if spent() >= cpu_seconds:
            return end(SearchEnd.TIMEOUT)
        node = heapq.heappop(frontier)
        expansions += 1
        state = await states.reach(node.state, timeout=tactic_seconds)
        if state is None:
            continue
        goal = node.goals[0]
        ran: str | None = None  # a one-step closing already run here
        if memory is not None and (closing := memory.closing(goal)) is not None:
            reused = await _reuse(
                states, node, state, closing, tactic_seconds, learner, accept, spent, cpu_seconds
            )
            tried += reused.ran
            if reused.found is not None:
                return SearchFound(
                    SearchEnd.FOUND, reused.found.steps, reused.found.counts, tried, expansions
                )
            if reused.reached is not None:
                bonus = CONFIDENCE_CAP if reused.closed else 0.0
                _queue(reused.reached, node, seen, frontier, counter, max_depth, bonus)
            ran = closing[0] if len(closing) == 1 else None
        candidates: dict[str, float] = {}
        for expander in expanders:
            for tactic, confidence in await expander(goal, node.steps):
                candidates.setdefault(tactic, confidence)
        candidates.pop(ran or "", None)
        chosen = learner.fresh(goal, list(candidates.items()))[:per_node]
        keep = [True] * len(chosen)
        checked = 0  # the candidates before this index were probed, or are run unprobed
        for at, (tactic, confidence) in enumerate(chosen):
            if spent() >= cpu_seconds:
                return end(SearchEnd.TIMEOUT)
            if probe is not None and at >= checked:
                room = int((cpu_seconds - spent()) / tactic_seconds)
                size = min(PROBE_CHUNK, room, len(chosen) - at)
                checked = at + max(size, 1)
                if size >= 2:
                    asked = [t for t, _ in chosen[at:checked]]
                    kept = await probe(asked, state, tactic_seconds)
                    if kept is not None:
                        keep[at:checked] = kept
                        for t, k in zip(asked, kept, strict=True):
                            if not k:
                                learner.refute(goal, t, None)
            tried += 1
            if not keep[at]:  # probed: it would not change the goal
                continue
            step = await states.apply(tactic, state, timeout=tactic_seconds)
            steps = (*node.steps, tactic)
            if step.status is TacticStatus.COMPLETE:
                counts = (*node.counts, 0)
                if accept is None or await accept(steps, counts):
                    learner.opened(node.opened, steps, (), tactic)
                    return SearchFound(SearchEnd.FOUND, steps, counts, tried, expansions)
                learner.refused(steps)
                continue  # no goal left, but no proof: the search goes on
            if step.status is not TacticStatus.GOALS:
                learner.refute(goal, tactic, step)
                continue
            if step.goals == node.goals:
                learner.refute(goal, tactic, step)  # it left the state as it was
                continue
            opened = learner.opened(node.opened, steps, step.goals, tactic)
            _queue(
                _Reached(step.state, step.goals, steps, (*node.counts, len(step.goals)), opened),
                node,
                seen,
                frontier,
                counter,
                max_depth,
                confidence,
            )
    return end(SearchEnd.EXHAUSTED)


@dataclass(frozen=True, slots=True)
class _Reached:
    """A state a step (or a reused closing) reached, not queued yet."""

    state: ProofState
    goals: tuple[str, ...]
    steps: tuple[str, ...]
    counts: tuple[int, ...]
    opened: tuple[_Open, ...]


def _queue(
    reached: _Reached,
    parent: _Node,
    seen: set[str],
    frontier: list[_Node],
    counter: itertools.count[int],
    max_depth: int,
    confidence: float,
) -> None:
    """Put ``reached`` on the frontier, one level below ``parent``, unless a state with
    the same goals was queued before or the branch is as deep as the search goes."""
    if len(parent.steps) + 1 >= max_depth:
        return
    key = fingerprint(reached.goals)
    if key in seen:
        return
    seen.add(key)
    heapq.heappush(
        frontier,
        _Node(
            priority(
                len(parent.steps) + 1,
                len(reached.goals),
                confidence,
                len(reached.goals[0]) / max(1, len(parent.goals[0])),
            ),
            next(counter),
            reached.state,
            reached.goals,
            reached.steps,
            reached.counts,
            reached.opened,
        ),
    )


#: a tactic that works on goals other than the first: a goal selector (Coq's ``all:``,
#: ``2:``, ``1,3:``, ``[x]:``, ``Unshelve``...; Lean's ``all_goals``, ``case h =>``,
#: ``swap``...). Its failure may come from another goal, and the goal counts
#: around it say nothing about the first goal's closing.
_OTHER_GOALS = re.compile(
    r"^\s*(?:(?:all|par|!|\d+(?:\s*-\s*\d+)?(?:\s*,\s*\d+(?:\s*-\s*\d+)?)*|\[[^\]]*\])\s*:(?!=)"
    r"|(?:Unshelve|Focus|Unfocus|shelve|shelve_unifiable|swap|cycle|revgoals"
    r"|all_goals|any_goals|rotate_left|rotate_right|pick_goal|on_goal|next)\b"
    r"|case\s+[^:]*=>)"
)


def names_other_goals(tactic: str) -> bool:
    """``tactic`` may work on goals other than the first (see :data:`_OTHER_GOALS`)."""
    return _OTHER_GOALS.match(tactic) is not None


class _Learner:
    """The search's side of a :class:`~.memory.GoalMemory` (none: it learns nothing).

    It refutes what failed, reads the closings along each branch and records
    them, and forgets those of a branch whose proof the kernel refused.
    """

    def __init__(self, memory: GoalMemory | None, tactic_seconds: float) -> None:
        self.memory = memory
        self.seconds = tactic_seconds
        #: (the branch's steps when it was recorded, the goal it closed)
        self._recorded: list[tuple[tuple[str, ...], str]] = []

    def fresh(self, goal: str, chosen: list[tuple[str, float]]) -> list[tuple[str, float]]:
        """``chosen`` without the tactics refuted on ``goal`` before."""
        if self.memory is None:
            return chosen
        memory = self.memory
        fresh = [(t, c) for t, c in chosen if not memory.refuted(goal, t, self.seconds)]
        MEMORY_COUNTS.skipped += len(chosen) - len(fresh)
        return fresh

    def refute(self, goal: str, tactic: str, result: TacticResult | None) -> None:
        """``tactic`` took no step on ``goal`` (``result`` None: a probe said so). A
        failure that took half the tactic's time may be a timeout in disguise."""
        if self.memory is None or names_other_goals(tactic):
            return
        quick = (
            result is not None
            and result.status is not TacticStatus.TIMEOUT
            and result.cpu_seconds < self.seconds / 2
        )
        self.memory.refute(goal, tactic, math.inf if quick else self.seconds)

    def opened(
        self, opened: tuple[_Open, ...], steps: tuple[str, ...], goals: Sequence[str], tactic: str
    ) -> tuple[_Open, ...]:
        """Record the goals that ``steps`` closed (see :func:`_closed`); the goals still
        open along the branch."""
        if names_other_goals(tactic):
            return ((goals[0], len(goals), len(steps)),) if goals else ()
        still, done = _closed(opened, steps, goals)
        if self.memory is not None:
            for goal, closing in done:
                self.memory.closed(goal, closing)
                self._recorded.append((steps, goal))
        return still

    def refused(self, steps: tuple[str, ...]) -> None:
        """The kernel refused the proof ``steps`` make: forget the closings read along it."""
        if self.memory is None:
            return
        for branch, goal in self._recorded:
            if steps[: len(branch)] == branch:
                self.memory.forget(goal)


@dataclass(frozen=True, slots=True)
class _Reuse:
    """What running a known closing at a node gave."""

    #: tactics run
    ran: int
    #: the proof, when the closing left no goal and the kernel took it
    found: SearchFound | None = None
    #: the state it reached, when every step took one
    reached: _Reached | None = None
    #: that state has the node's first goal closed (one goal fewer)
    closed: bool = False


async def _reuse(
    states: ProofStates,
    node: _Node,
    state: ProofState,
    closing: tuple[str, ...],
    tactic_seconds: float,
    learner: _Learner,
    accept: Accept | None,
    spent: Callable[[], float],
    cpu_seconds: float,
) -> _Reuse:
    """Run at ``node`` the ``closing`` an earlier branch found for its first goal. A
    closing that fails here or does not close the goal is forgotten (the state it
    reached is still a state)."""
    assert learner.memory is not None
    memory = learner.memory
    goal = node.goals[0]
    MEMORY_COUNTS.closings_tried += 1
    steps, counts, opened, goals = node.steps, node.counts, node.opened, node.goals
    for ran, tactic in enumerate(closing, start=1):
        if spent() >= cpu_seconds:
            return _Reuse(ran - 1)
        step = await states.apply(tactic, state, timeout=tactic_seconds)
        steps = (*steps, tactic)
        if step.status is TacticStatus.COMPLETE:
            counts = (*counts, 0)
            if accept is not None and not await accept(steps, counts):
                learner.refused(steps)
                memory.forget(goal)
                return _Reuse(ran)
            MEMORY_COUNTS.closings_reused += 1
            learner.opened(opened, steps, (), tactic)
            return _Reuse(ran, found=SearchFound(SearchEnd.FOUND, steps, counts))
        if step.status is not TacticStatus.GOALS:
            if ran == 1:
                learner.refute(goal, tactic, step)
            memory.forget(goal)
            return _Reuse(ran)
        state = step.state
        counts = (*counts, len(step.goals))
        opened = learner.opened(opened, steps, step.goals, tactic)
        goals = step.goals
    closed = counts[-1] == len(node.goals) - 1
    if closed:
        MEMORY_COUNTS.closings_reused += 1
    else:
        memory.forget(goal)
    return _Reuse(
        len(closing), reached=_Reached(state, goals, steps, counts, opened), closed=closed
    )
