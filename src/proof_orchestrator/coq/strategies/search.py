"""Best-first search over proof states (Coq).

The search is :func:`proof_orchestrator.search.bestfirst.best_first`, the one
Lean's ``lean-search`` runs too, over the session's
:class:`~proof_orchestrator.coq.states.CoqStates` view; this module
supplies Coq's candidates and the readable script.

A state is expanded with candidate tactics from every generator: the
k-nearest-neighbour model mined from the file's earlier proofs
(:mod:`.knn`) and the opening steps of the chains it suggests
(:func:`chain_opening`), a few closing tactics, structural steps
(``intros``, ``simpl``, ``split``, ``constructor``), at the root and its
children a step on the latest hypothesis (:mod:`.hypotheses`: ``destruct``,
``apply``, ``rewrite``; :data:`HYPOTHESIS_DEPTH`), a case analysis on what the
conclusion's ``if``/``match`` branches on (:mod:`.scrutinees`), the file's own
argument-free tactics (:func:`local_tactics`), ``unfold`` of the constants
the goal's conclusion mentions (:func:`unfold_candidates`, and those behind
its notations), the lemmas Coq's ``Search`` finds for the goal printed
without notations (:mod:`.lemma_search`: ``apply``, ``eapply …; eauto``,
``rewrite``) and those that conclude with the goal's shape (``apply``), and
the premises that BM25 ranks best against the goal (:mod:`.retrieval`). The
candidates are first probed, eight at a time, in one sentence
(:mod:`..probe`); those that would change the goal are run from the state in
the session (which goes back to any earlier state). States are scored by cost
so far (depth, open goals, growth of the goal) minus the model's confidence in
the tactic that led there (an ``apply`` of a lemma concluding with the goal's
shape has :data:`APPLIER_CONFIDENCE`), and identical states (same goals, up to
hypothesis names) are merged. The CPU
budget is honoured, and the search grows with it
(:func:`~proof_orchestrator.search.bestfirst.search_limits`):
:data:`~proof_orchestrator.search.bestfirst.EXPANSIONS_PER_SECOND` node
expansions per CPU second, and one more level of depth each time the budget
doubles past :data:`~proof_orchestrator.search.bestfirst.DEPTH_BUDGET` (a
revisit at twice the budget explores what the first pass could not reach).

The proof found is a flat list of sentences; where a step opens several
subgoals, bullets are added (``-``, ``+``, ``*``) so that the script reads like
a hand-written one. The bulleted script is checked in the session; if it does
not replay, the flat one is returned.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Awaitable, Callable, Sequence

from ...goals import Budget, Goal, Outcome
from ...provers.base import ProofState, TacticStatus
from ...search.bestfirst import SearchEnd, SearchFound, best_first, search_limits
from ...search.memory import SearchMemory
from ...strategies.base import StrategyDefaults, StrategyResult
from ..probe import probe
from ..session import CoqSession
from ..states import CoqStates
from ..syntax import split_top_level
from .closers import defined_closers
from .hypotheses import hypothesis_tactics, top_level
from .knn import FileModels
from .lemma_search import (
    BINDERS,
    GENERIC,
    LemmaSearch,
    constants,
    covers,
    plain_goal,
    premise_tactics,
)
from .micro import lia_tactic
from .retrieval import PremiseIndex, index_for
from .scrutinees import conclusion_of, scrutinee_tactics

__all__ = [
    "APPLIER_CONFIDENCE",
    "CASE_CONFIDENCE",
    "CLOSERS",
    "STRUCTURAL",
    "SearchStrategy",
    "Suggest",
    "bulletize",
    "chain_opening",
    "lemma_queries",
    "loads_ssreflect",
    "local_tactics",
    "unfold_candidates",
]

#: extra proposals for a node: (session, goal text, steps so far) -> [(tactic, confidence)]
Suggest = Callable[[CoqSession, str, Sequence[str]], Awaitable[list[tuple[str, float]]]]

CLOSERS = (
    "reflexivity.",
    "assumption.",
    "auto.",
    "easy.",
    "congruence.",
    "discriminate.",
    "intuition.",
    "eauto.",
    "auto with arith.",
)
STRUCTURAL = (
    "intros.",
    "simpl.",
    "split.",
    "constructor.",
    "left.",
    "right.",
    "eexists.",
    "f_equal.",
    "subst.",
)
#: steps on the hypotheses are offered at nodes fewer steps than this from the root
HYPOTHESIS_DEPTH = 2
#: constants of a conclusion offered to ``unfold``, at most
MAX_UNFOLDS = 3
#: candidates a node gets beyond ``per_node``: the premises found by ``Search``
PER_NODE_EXTRA = 32
#: the confidence of ``apply L`` where ``L`` concludes with the goal's shape and no
#: constant the goal lacks, the only such lemmas offered (``is_RInt_unique : is_RInt f a
#: b l -> RInt f a b = l`` for ``RInt (PSeries a) 0 x = …``): the backward step a
#: hand-written proof starts with, so the state it opens is expanded before the other
#: unguided ones of its depth
APPLIER_CONFIDENCE = 0.6
#: the confidence of a case analysis on what the conclusion branches on (:mod:`.scrutinees`):
#: its two branches cost half a level more than one goal, and this gives it back, so the
#: split waits behind no unguided step of its depth
CASE_CONFIDENCE = 0.25
#: the confidence of a tactic the caller prefers (a broken proof's remaining old steps):
#: a neighbour's vote, so the nodes it opens come first
PREFERRED_CONFIDENCE = 1.0
_BULLETS = ("-", "+", "*", "--", "++", "**")
#: a sentence that imports ssreflect (directly or with mathcomp), whitespace normalised
_SSREFLECT = re.compile(
    r"^(From mathcomp Require (Import|Export)\b|(From \S+ )?Require (Import|Export)\b.*"
    r"\b(ssreflect|mathcomp))"
)


def loads_ssreflect(prefix: Sequence[str]) -> bool:
    """Whether the sentences ``prefix`` import ssreflect, or mathcomp which exports it (a
    file that gets it only through a project file's ``Export`` is not seen: fewer
    candidates, never a wrong one)."""
    return any(_SSREFLECT.search(" ".join(sentence.split())) for sentence in prefix)


#: ``Search`` queries per CPU second of budget, for the premises and for the lemmas that
#: conclude with the goal's shape (each: :class:`.lemma_search.LemmaSearch`)
QUERIES_PER_SECOND = 0.8
#: ... and at least this many of each
MIN_QUERIES = 8


def lemma_queries(cpu_seconds: float) -> int:
    """``Search`` queries of each kind a search with ``cpu_seconds`` of budget may make.

    A query is cached per conclusion but the states a search reaches have many
    conclusions: with a fixed cap, a search at 160 CPU s asked nothing new after its
    first few nodes (``eapply runR; eauto`` after ``intuition. subst.`` was never
    offered), so more time bought no more premises.
    """
    return max(MIN_QUERIES, round(QUERIES_PER_SECOND * cpu_seconds))


def shows_product(goal_text: str) -> bool:
    """The conclusion is a visible product (``forall``, ``->``), which ``intros`` takes.

    ``intro`` also unfolds a definition to find one (``~ P``, mathcomp's ``A =i B``)
    where ``intros`` does nothing; where both work, ``intro`` only adds a state per
    binder (on a bank goal with four binders it tripled the prover round trips of a
    search that ended the same way), so it is offered only where no product shows.
    """
    conclusion = conclusion_of(goal_text).strip()
    return conclusion.startswith(("forall ", "∀")) or top_level(conclusion, "->")


def unfold_candidates(goal_text: str, limit: int = MAX_UNFOLDS) -> list[str]:
    """``unfold c.`` for the first constants the goal's conclusion mentions.

    Hypothesis names and bound variables are left out; Coq refuses what is not
    a definition (an inductive type, a constructor), and an ``unfold`` that
    changes nothing is merged away with its parent state, so a wrong guess
    costs one tactic.
    """
    lines = goal_text.splitlines()
    bar = next((i for i, line in enumerate(lines) if line.strip().startswith("====")), None)
    hypotheses = lines[:bar] if bar is not None else []
    conclusion = " ".join(lines[bar + 1 :] if bar is not None else lines)
    local = {
        name
        for line in hypotheses
        if ":" in line
        for name in re.split(r"[,\s]+", line.split(":", 1)[0].strip())
        if name
    }
    for binders in BINDERS.findall(conclusion):
        local.update(re.findall(r"[A-Za-z_][\w']*", binders))
    found = [n for n in constants(conclusion, frozenset(local)) if n not in ("True", "False")]
    found = found[:limit]
    return [f"unfold {name}." for name in found]


#: the file's own argument-free tactics offered at a node, at most (the latest defined)
MAX_LOCAL_TACTICS = 3


def local_tactics(prefix: Sequence[str], limit: int = MAX_LOCAL_TACTICS) -> list[str]:
    """``t.`` and ``intros; t.`` for the last argument-free tactics ``t`` the file defines
    (``Ltac t := ...``, ``Tactic Notation "t" := ...``: :func:`.closers.defined_closers`).

    A file's own tactic (``Ltac qc := ...`` in ``Qcanon.v``, ``Ltac ring_Rsqr :=
    unfold Rsqr; ring.`` in ``R_sqr.v``) is usually the first step of the proofs
    that follow it, before the k-NN model has seen it used.
    """
    return [t for name in defined_closers(prefix)[:limit] for t in (name, f"intros; {name}")]


def chain_opening(tactic: str) -> str | None:
    """``t1; t2.`` for a tactic ``t1; t2; t3.``; None if it is not a chain."""
    parts = split_top_level(tactic.strip().removesuffix("."), ";")
    if len(parts) < 2 or not all(p.strip() for p in parts):
        return None
    return "; ".join(p.strip() for p in parts[:-1]) + "."


async def probe_at(
    session: CoqSession, tactics: Sequence[str], state: ProofState, timeout: float
) -> list[bool] | None:
    """:func:`..probe.probe` in the shape of :data:`~proof_orchestrator.search.bestfirst.Probe`."""
    return await probe(session, tactics, state, timeout=timeout)


def bulletize(steps: Sequence[str], counts: Sequence[int]) -> list[str]:
    """``steps`` with bullets: ``counts[i]`` goals before step i, ``counts[-1]`` after the last.

    Each step works on the first goal; a step that leaves ``m >= 2`` goals in its
    place opens ``m`` bullets, one per subgoal.
    """
    out: list[str] = []

    def solve(index: int, depth: int) -> int:
        while index < len(steps):
            made = counts[index + 1] - counts[index] + 1
            out.append(steps[index])
            index += 1
            if made == 0:
                return index
            if made >= 2:
                for _ in range(made):
                    out.append(_BULLETS[min(depth, len(_BULLETS) - 1)])
                    index = solve(index, depth + 1)
                return index
        return index

    solve(0, 0)
    return out


class SearchStrategy(StrategyDefaults):
    """Best-first search with learned, retrieved, closing and structural candidates."""

    name = "search"
    weight = "heavy"
    language = "coq"
    uses_slot = True
    needs_ledger = False

    def __init__(
        self,
        models: FileModels | None = None,
        *,
        max_depth: int = 6,
        max_expansions: int | None = None,
        per_node: int = 14,
        suggest: Suggest | None = None,
        probe: bool = True,
    ) -> None:
        self.models = models if models is not None else FileModels()
        #: another source of candidate tactics (the llm strategy's next tactics)
        self.suggest = suggest
        self.max_depth = max_depth
        self.max_expansions = max_expansions
        self.per_node = per_node
        #: ask coqtop which candidates could take a step before running them (:mod:`..probe`)
        self.probe = probe
        #: what this run's searches learned, reused by state (:mod:`...search.memory`)
        self.memory = SearchMemory()

    def training_cpu_seconds(self) -> float:
        return float(self.models.cpu_seconds)

    async def _candidates(
        self,
        session: CoqSession,
        goal_text: str,
        index: PremiseIndex | None,
        lia: str | None,
        steps: Sequence[str] = (),
        lemmas: LemmaSearch | None = None,
        own_tactics: Sequence[str] = (),
        ssreflect: bool = False,
    ) -> list[tuple[str, float]]:
        model = await self.models.model_for(session)
        learned = list(model.suggest(goal_text, k=8))
        found: list[tuple[str, float]] = learned[:4]
        # a learned chain ``intros; qc; apply Qplus_assoc.`` ends with a step for
        # its own goal; its opening steps (``intros; qc.``) may fit this one
        found += [(p, c * 0.5) for t, c in learned[:4] if (p := chain_opening(t))]
        if self.suggest is not None:
            found += await self.suggest(session, goal_text, steps)
        found += [(c, 0.0) for c in CLOSERS]
        if lia:
            found.append((f"{lia}.", 0.0))
        # structural steps and unfolding come before the premises and the weaker
        # suggestions, so that the cap on candidates per node never cuts them
        found += [(s, 0.0) for s in STRUCTURAL]
        if not shows_product(goal_text):
            found.append(("intro.", 0.0))
        if len(steps) < HYPOTHESIS_DEPTH:
            found += [(t, 0.0) for t in hypothesis_tactics(goal_text)]
        found += [(t, 0.0) for t in own_tactics]
        unfolds = unfold_candidates(goal_text)
        plain = await plain_goal(session) if lemmas is not None else None
        if plain is not None:
            # the constants hidden behind notations (``x <= y`` is ``Qcle x y``)
            for name in plain.constants:
                if len(unfolds) >= MAX_UNFOLDS:
                    break
                if name not in GENERIC and f"unfold {name}." not in unfolds:
                    unfolds.append(f"unfold {name}.")
        found += [(u, 0.0) for u in unfolds]
        if plain is not None and lemmas is not None:
            # only those whose conclusion adds no constant: the others rarely unify;
            # before the premises' tactics, which the cap on candidates per node may cut
            found += [
                (f"apply {name}.", APPLIER_CONFIDENCE)
                for name, statement in await lemmas.appliers(session, plain)
                if covers(plain, statement)
            ]
            found += [
                (t, 0.0)
                for t in premise_tactics(plain, await lemmas.premises(session, plain), ssreflect)
            ]
        # after the premises: the cap on candidates per node must not cut those
        found += [(t, CASE_CONFIDENCE) for t in scrutinee_tactics(goal_text, ssreflect)]
        if index is not None:
            for premise in index.rank(goal_text, 3, exclude=[session.goal.name]):
                found += [
                    (f"apply {premise.name}.", 0.0),
                    (f"rewrite {premise.name}.", 0.0),
                    (
                        f"rewrite -{premise.name}." if ssreflect else f"rewrite <- {premise.name}.",
                        0.0,
                    ),
                ]
        found += learned[4:]
        unique: dict[str, float] = {}
        for tactic, score in found:
            unique.setdefault(tactic, score)
        return list(unique.items())[: self.per_node + PER_NODE_EXTRA]

    async def _search(
        self,
        session: CoqSession,
        budget: Budget,
        start: ProofState | None = None,
        preferred: Sequence[str] = (),
        *,
        readable: dict[tuple[str, ...], list[str]] | None = None,
    ) -> SearchFound:
        """Best-first from ``start`` (the root: a found proof must close with ``Qed``;
        ``readable`` gets its bulleted script)."""
        cpu_start = session.cpu_seconds()
        goal = session.goal
        if readable is None:
            readable = {}
        max_depth, max_expansions = search_limits(
            budget.cpu_seconds, self.max_depth, self.max_expansions
        )
        index = await index_for(session)
        lia = await lia_tactic(session)
        queries = lemma_queries(budget.cpu_seconds)
        lemmas = LemmaSearch(max_searches=queries, max_shape_searches=queries)
        own_tactics = local_tactics(session.prefix)  # once per attempt: the prefix is long
        ssreflect = loads_ssreflect(session.prefix)
        first = [(t, PREFERRED_CONFIDENCE) for t in preferred]

        async def candidates(goal_text: str, steps: Sequence[str]) -> list[tuple[str, float]]:
            found = await self._candidates(
                session, goal_text, index, lia, steps, lemmas, own_tactics, ssreflect
            )
            return first + found if first else found

        async def kernel_takes(steps: tuple[str, ...], counts: tuple[int, ...]) -> bool:
            """The readable script closes with ``Qed`` here (ssreflect's ``apply:`` can
            leave no goal and a term the kernel refuses: ``apply: filter_imp Heq``)."""
            script = await self._readable(session, steps, counts)
            closed, _ = await session.qed_check(
                script, session.goal.name, max(5.0, budget.tactic_seconds), assumptions=False
            )
            if closed:
                readable[steps] = script
            return closed

        return await best_first(
            CoqStates(session, start),
            [candidates],
            max_depth=max_depth,
            max_expansions=max_expansions,
            # the budget counts from the start of the attempt (index and lia included)
            cpu_seconds=budget.cpu_seconds - (session.cpu_seconds() - cpu_start),
            tactic_seconds=max(1.0, budget.tactic_seconds),
            per_node=self.per_node + PER_NODE_EXTRA + len(first),
            probe=functools.partial(probe_at, session) if self.probe else None,
            # from the goal's root only: a search inside a proof (repair) has no Qed
            accept=kernel_takes if start is None else None,
            memory=self.memory.for_goal(str(goal.file), f"{goal.file}:{goal.qualified_name}"),
        )

    async def search_from(
        self, session: CoqSession, start: ProofState, budget: Budget, preferred: Sequence[str]
    ) -> tuple[str, ...] | None:
        """Steps that close the proof from ``start`` (a state inside the goal's proof), with
        the tactics ``preferred`` tried first at every node, or None (``orch repair``: from
        where an old proof broke, its remaining tactics first)."""
        found = await self._search(session, budget, start, preferred)
        return found.steps if found.end is SearchEnd.FOUND else None

    async def prove(self, session: CoqSession, goal: Goal, budget: Budget) -> StrategyResult:
        del goal
        started = time.monotonic()
        cpu_start = session.cpu_seconds()
        readable: dict[tuple[str, ...], list[str]] = {}
        found = await self._search(session, budget, readable=readable)
        script: Sequence[str] = ()
        checked = False
        if found.end is SearchEnd.FOUND:
            # the search accepts a closing only once its readable script takes ``Qed``
            checked = found.steps in readable
            script = readable.get(found.steps) or await self._readable(
                session, found.steps, found.counts
            )
        outcome = {
            SearchEnd.FOUND: Outcome.CANDIDATE,
            SearchEnd.TIMEOUT: Outcome.TIMEOUT,
            SearchEnd.EXHAUSTED: Outcome.FAILED,
        }[found.end]
        return StrategyResult(
            outcome,
            tuple(script),
            found.tried,
            session.cpu_seconds() - cpu_start,
            time.monotonic() - started,
            kernel_checked=checked,
        )

    async def _readable(
        self, session: CoqSession, steps: tuple[str, ...], counts: tuple[int, ...]
    ) -> list[str]:
        bulleted = bulletize(steps, counts)
        if bulleted != list(steps):
            check = await session.run_script(bulleted, session.root, timeout=5)
            if check.status is TacticStatus.COMPLETE:
                return bulleted
        return list(steps)
