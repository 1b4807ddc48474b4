"""Rewrite chains: the goal rewritten with the lemmas that fit it, then closed.

Many one-line proofs of a real project are a rewrite chain with the
project's own equations: ``by rewrite !in_fsetI andbC.``,
``by rewrite mem_supp negbK.``. The lemmas come from what the goal can see:

* the lemmas the nearest visible proofs rewrite with (:mod:`..learning`),
  also with their names carried over to the goal (:mod:`.analogy`), and
* the equations and equivalences that premise retrieval ranks best
  (:mod:`.retrieval`).

From the goal's root, after ``intros`` and after the openings of the nearest
proofs (``move=> s1 s2; apply/eq_fset=> x``), a small breadth-first search
rewrites (``rewrite !L``, ``rewrite -L``; ``rewrite <- L`` where ssreflect is
not loaded), keeps the states a rewrite changed (one probe sentence per node
finds them), and tries the closers at every state: ``done`` and ``case: eqP``
with ssreflect, ``reflexivity``, ``auto``, ``easy``, ``tauto`` and
``congruence``. The first chain that leaves no goal is the candidate.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Sequence

from ...goals import Budget, Goal, Outcome
from ...provers.base import ProofState, TacticStatus
from ...strategies.base import StrategyDefaults, StrategyResult
from ..learning import LEARNING
from ..probe import probe
from ..script import passes_gate
from ..session import CoqSession
from ..syntax import split_top_level
from .analogy import adapted_scripts
from .lemma_search import bound_names, plain_goal
from .micro import FixedScripts
from .retrieval import index_for

__all__ = ["RewriteStrategy", "rewrite_names"]

_IDENT = re.compile(r"[A-Za-z_][\w'.]*")
_REWRITE = re.compile(r"\b(?:rewrite|rewrite_strat|setoid_rewrite)\b([^;|\]]*)")
#: words inside a rewrite clause that are not lemmas
_NOT_LEMMAS = frozenset({"in", "at", "by", "as", "with", "using", "fun", "forall", "_"})
#: ssreflect's closers: ``done`` and the boolean reflection idioms of mathcomp
SSR_CLOSERS = (
    "done.",
    "by case: eqP.",
    "by case: ifP.",
    "exact/eqP.",
    "by apply/eqP.",
    "by case/andP.",
    "by case/orP.",
)
PLAIN_CLOSERS = ("reflexivity.", "auto.", "easy.", "tauto.", "congruence.")
#: a rewrite with ssreflect is repeated at most this many more times (``rewrite L 3?L``)
REPEAT = 3
#: the constants of the goal's conclusion offered to ``rewrite /c`` (ssreflect)
MAX_UNFOLDS = 3
#: the nearest proofs whose names are also carried over to the goal (:mod:`.analogy`)
ADAPTED = 3
#: a statement that can be rewritten with: an equation or an equivalence
_EQUATIONAL = re.compile(r"=|<->")


def rewrite_names(script: str, bound: Sequence[str] = ()) -> list[str]:
    """The names a script rewrites with, in order (``rewrite !in_fsetI andbC`` ->
    ``in_fsetI``, ``andbC``), less the ``bound`` ones (its hypotheses)."""
    skip = set(bound) | _NOT_LEMMAS
    found: list[str] = []
    for clause in _REWRITE.findall(script):
        clause = re.split(r"\s(?:in|at)\s|\.\s*$|\.$", clause)[0]
        for word in _IDENT.findall(re.sub(r"\{[^}]*\}", " ", clause)):
            word = word.rstrip(".")
            if word and word not in skip and not word[0].isdigit():
                found.append(word)
    return list(dict.fromkeys(found))


def _exact_scripts(lemmas: Sequence[str], ssr: bool) -> list[str]:
    """One-sentence proofs by a lemma: ``exact: L.``, ``exact/L.`` (ssreflect), ``apply L.``."""
    found: list[str] = []
    for name in lemmas:
        found += [f"exact: {name}.", f"exact/{name}."] if ssr else [f"intros; apply {name}."]
    return found


def _opening(script: str) -> str | None:
    """The part of a one-sentence proof before its first rewrite (``move=> x; apply/P``),
    as a sentence, or None when it starts with the rewrite."""
    body = script.strip().removesuffix(".")
    body = re.sub(r"^by\s+", "", body)
    parts = split_top_level(body, ";")
    head: list[str] = []
    for part in parts:
        if re.match(r"\s*rewrite\b", part):
            break
        head.append(part.strip())
    if not head or len(head) == len(parts):
        return None
    return "; ".join(head) + "."


class RewriteStrategy(StrategyDefaults):
    """A breadth-first search over rewrites with the lemmas the goal can see."""

    name = "rewrite"
    weight = "light"
    language = "coq"
    uses_slot = True
    needs_ledger = False

    def __init__(self, lemmas: int = 16, depth: int = 3, width: int = 6, nodes: int = 12) -> None:
        self.lemmas = lemmas
        self.depth = depth
        self.width = width
        #: states expanded at most in one attempt (each costs a probe and its children)
        self.nodes = nodes

    async def prove(self, session: CoqSession, goal: Goal, budget: Budget) -> StrategyResult:
        started = time.monotonic()
        cpu_start = session.cpu_seconds()
        seconds = max(1, math.ceil(budget.tactic_seconds))
        tried = 0

        def spent() -> bool:
            return session.cpu_seconds() - cpu_start >= budget.cpu_seconds

        def left() -> float:
            return budget.cpu_seconds - (session.cpu_seconds() - cpu_start)

        visible = await LEARNING.visible(session)
        ssr = "Coq.ssr.ssreflect" in visible.modules
        near = visible.nearest(goal.statement, 12, exclude=(goal.name,), max_sentences=10)
        names: list[str] = []
        openings: list[str] = []
        plain = await plain_goal(session)
        for rank, (_, example) in enumerate(near):
            bound = sorted(bound_names(example.statement))
            texts = [" ".join(example.script)]
            if rank < ADAPTED:  # the nearest also with their names carried over to the goal
                texts = await adapted_scripts(
                    session, plain.conclusion if plain else "", goal.statement, example
                )
            for text in texts:
                names += rewrite_names(text, bound)
                if example.is_one_sentence and (opening := _opening(text)):
                    openings.append(opening)
        index = await index_for(session)
        ranked = index.rank(goal.statement, 2 * self.lemmas, exclude=[goal.name])
        lemmas = [n for n in dict.fromkeys([*names, *(p.name for p in ranked)]) if n != goal.name]
        names += [p.name for p in ranked if _EQUATIONAL.search(p.statement)]
        names = [n for n in dict.fromkeys(names) if n != goal.name][: 2 * self.lemmas]
        if not names and not lemmas:
            return StrategyResult(Outcome.FAILED, (), 0, 0.0, time.monotonic() - started)
        # a lemma that is the goal up to its arguments or a view: one sentence
        exact = await FixedScripts(self.name, _exact_scripts(lemmas[: self.lemmas], ssr)).prove(
            session, goal, Budget(left(), budget.tactic_seconds, budget.grace_seconds)
        )
        tried += exact.tactics_tried
        if exact.outcome is Outcome.CANDIDATE:
            return exact
        closers = [*(SSR_CLOSERS if ssr else ()), *PLAIN_CLOSERS]
        # bounded: ``rewrite !addnC`` rewrites until its timeout (a commutativity loops)
        # (once, and with ssreflect also a few times more: a commutativity used an even
        # number of times changes nothing)
        steps = [f"rewrite {n}." for n in names[: self.lemmas]]
        if ssr:
            steps += [f"rewrite {n} {REPEAT}?{n}." for n in names[: self.lemmas]]
        steps += [
            f"rewrite -{n}." if ssr else f"rewrite <- {n}." for n in names[: self.lemmas // 4]
        ]
        if ssr:  # unfold what the goal names, simplify
            steps += [f"rewrite /{c}." for c in (plain.constants if plain else [])[:MAX_UNFOLDS]]
            steps.append("rewrite /=.")
        starts = ["intros.", *dict.fromkeys(openings)][:3]
        expanded = 0
        outcome = Outcome.FAILED
        # the closers at the root first: ``by case/andP.`` needs the premise unintroduced
        if spent():
            return StrategyResult(
                Outcome.TIMEOUT,
                (),
                tried,
                session.cpu_seconds() - cpu_start,
                time.monotonic() - started,
            )
        closed = await self._close(session, session.root, closers, seconds, left())
        tried += len(closers)
        if closed is not None:
            return StrategyResult(
                Outcome.CANDIDATE,
                (closed,),
                tried,
                session.cpu_seconds() - cpu_start,
                time.monotonic() - started,
            )
        for start in starts:
            if spent():
                outcome = Outcome.TIMEOUT
                break
            if not passes_gate(start):
                continue
            first = await session.run_tactic(start, session.root, timeout=seconds)
            tried += 1
            if not first.ok:
                continue
            frontier: list[tuple[ProofState, tuple[str, ...]]] = [(first.state, (start,))]
            for _depth in range(self.depth + 1):
                following: list[tuple[ProofState, tuple[str, ...]]] = []
                for state, script in frontier:
                    if spent():
                        break
                    closed = await self._close(session, state, closers, seconds, left())
                    tried += len(closers)
                    if closed is not None:
                        return StrategyResult(
                            Outcome.CANDIDATE,
                            (*script, closed),
                            tried,
                            session.cpu_seconds() - cpu_start,
                            time.monotonic() - started,
                        )
                    if _depth == self.depth or expanded >= self.nodes:
                        continue
                    expanded += 1
                    fits = await probe(session, steps, state, timeout=seconds)
                    chosen = [
                        s for s, ok in zip(steps, fits or [True] * len(steps), strict=True) if ok
                    ]
                    for step in chosen[: self.width]:
                        result = await session.run_tactic(step, state, timeout=seconds)
                        tried += 1
                        if result.status is TacticStatus.COMPLETE:
                            return StrategyResult(
                                Outcome.CANDIDATE,
                                (*script, step),
                                tried,
                                session.cpu_seconds() - cpu_start,
                                time.monotonic() - started,
                            )
                        if result.ok:
                            following.append((result.state, (*script, step)))
                frontier = following[: self.width]
                if not frontier:
                    break
        if spent():
            outcome = Outcome.TIMEOUT
        return StrategyResult(
            outcome, (), tried, session.cpu_seconds() - cpu_start, time.monotonic() - started
        )

    @staticmethod
    async def _close(
        session: CoqSession, state: ProofState, closers: Sequence[str], seconds: int, left: float
    ) -> str | None:
        """The first closer that leaves no goal at ``state`` (one sentence tries them all).

        Only as many as ``left`` CPU seconds pay for if each ran out of time."""
        closers = closers[: max(1, int(left // seconds))]
        branches = " | ".join(
            f"solve [ timeout {seconds} ({c.removesuffix('.')}) ]" for c in closers
        )
        batch = await session.run_tactic(
            f"first [ {branches} ].", state, timeout=seconds * len(closers)
        )
        if batch.status is not TacticStatus.COMPLETE:
            return None
        for closer in closers:
            single = await session.run_tactic(closer, state, timeout=seconds)
            if single.status is TacticStatus.COMPLETE:
                return closer
        return None
