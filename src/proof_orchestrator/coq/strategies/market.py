"""The helper-lemma market: split a goal, publish the subgoal it is stuck on, prove it apart.

The ``market`` strategy (Coq) tries a structural first step on the goal
(``induction v; simpl; intros; try rewrite IHv`` and kin, for each variable
``v``), then closes the resulting subgoals with quick tactics. A subgoal that
no quick tactic closes is published as a **ticket**: a closed statement built
by Coq itself from the subgoal, with its propositional hypotheses (the
induction hypothesis, equations) cleared and every remaining variable
reverted into a ``forall`` (the generalised form, tried first), and the form
that keeps every hypothesis as a premise. Tickets are deduplicated by the
fingerprint of the statement.

Any worker may claim a ticket (an atomic conditional update in the ledger,
with a lease that a heartbeat renews while the worker proves it, and that
runs out one lease after the worker dies: :class:`~...ledger.leases.Leases`)
and prove the helper with quick tactics in a session placed just before the
declaration that needs it. With every stuck
subgoal's helper proved, the original goal is retried in a session where the
helpers are declared just before it; each stuck subgoal is then closed by
reverting the same way and ``exact helper``. The helpers are inserted into
the file right before the declaration, and the file is verified as a whole
like any other proof.
"""

from __future__ import annotations

import os
import re
import socket
import time
from dataclasses import dataclass

from ...goals import Budget, Goal, HoleKind, Outcome, fingerprint_of
from ...ledger import Ledger
from ...ledger.leases import Leases
from ...provers.base import ProofState, TacticStatus
from ...strategies.base import StrategyDefaults, StrategyResult
from ..script import format_script
from ..session import CoqSession
from .micro import (
    GENERIC_TACTICS,
    InductionStrategy,
    MicroStrategy,
    expand,
    goal_variables,
)

__all__ = ["CLEAR_PROPS", "REVERT_ALL", "MarketStrategy", "canonical_statement", "closure_of"]

#: clears every hypothesis whose type is a proposition (induction hypotheses, equations)
CLEAR_PROPS = "repeat match goal with H : ?T |- _ => match type of T with Prop => clear H end end."
#: turns every remaining hypothesis into a binder of the goal
REVERT_ALL = "repeat match goal with H : _ |- _ => revert H end."
#: structural first steps, per variable ``{v}``
OPENERS = (
    "induction {v}; simpl; intros; try rewrite IH{v}.",
    "induction {v}; simpl; intros.",
    "destruct {v}; simpl; intros.",
)
#: seconds a ticket is leased to the worker that claimed it; renewed while it works on it
LEASE_SECONDS = 300.0


def closure_of(display: str) -> str:
    """The conclusion of a goal display with no hypotheses left, on one line."""
    below = display.split("=====", 1)[-1]
    below = below.lstrip("=")
    return " ".join(below.split())


@dataclass(slots=True)
class _Stuck:
    """A subgoal no quick tactic closed, and the helpers that would close it."""

    index: int
    #: (revert script, statement) per helper form, generalised first
    forms: list[tuple[tuple[str, ...], str]]


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class MarketStrategy(StrategyDefaults):
    """Split the goal, publish stuck subgoals as helper tickets, prove them, retry."""

    name = "market"
    weight = "heavy"
    language = "coq"
    uses_slot = True
    #: reads and writes tickets: runs where the ledger is (never on a Ray worker)
    needs_ledger = True

    def __init__(
        self, ledger: Ledger, *, max_variables: int = 3, lease_seconds: float = LEASE_SECONDS
    ) -> None:
        self.ledger = ledger
        #: a claimed ticket's lease, renewed while its helper is being proved
        self.lease_seconds = lease_seconds
        #: CPU of the helper and retry sessions of the current attempt
        self.extra_cpu = 0.0
        self.max_variables = max_variables
        self.micro = MicroStrategy()
        self.induction = InductionStrategy()

    async def _closer(
        self, session: CoqSession, state: ProofState, singles: list[str], seconds: float
    ) -> str | None:
        """A quick tactic that closes the first of the current goals."""
        before = await session.run_tactic("idtac.", state, timeout=seconds)
        count = len(before.goals)
        for tactic in singles:
            result = await session.run_tactic(tactic, state, timeout=seconds)
            if result.status is TacticStatus.COMPLETE or (result.ok and len(result.goals) < count):
                return tactic
        return None

    async def prove(self, session: CoqSession, goal: Goal, budget: Budget) -> StrategyResult:
        started = time.monotonic()
        cpu_start = session.cpu_seconds()
        self.extra_cpu = 0.0
        seconds = max(1.0, budget.tactic_seconds)
        tried = 0

        def done(
            outcome: Outcome,
            sentences: tuple[str, ...] = (),
            helpers: tuple[str, ...] = (),
            message: str = "",
        ) -> StrategyResult:
            return StrategyResult(
                outcome,
                sentences,
                tried,
                session.cpu_seconds() - cpu_start + self.extra_cpu,
                time.monotonic() - started,
                message,
                helpers,
            )

        lia = await session.locate_ltac("Coq.micromega.Lia.lia")
        singles = expand(GENERIC_TACTICS, lia)[:18]
        probe = await session.run_tactic("intros.", session.root, timeout=seconds)
        variables = goal_variables(probe.goals[0]) if probe.ok and probe.goals else []
        for variable in variables[: self.max_variables]:
            for template in OPENERS:
                if session.cpu_seconds() - cpu_start > budget.cpu_seconds:
                    return done(Outcome.TIMEOUT)
                opener = template.replace("{v}", variable)
                tried += 1
                opened = await session.run_tactic(opener, session.root, timeout=seconds)
                if opened.status is not TacticStatus.GOALS or len(opened.goals) > 4:
                    continue
                plan = await self._plan(session, opened.state, len(opened.goals), singles, seconds)
                if plan is None:
                    continue
                closers, stuck = plan
                tried += len(singles)
                if not stuck:
                    continue  # the quick strategies prove this goal without the market
                result = await self._through_market(session, goal, budget, opener, closers, stuck)
                if result is not None:
                    sentences, helpers = result
                    return done(Outcome.CANDIDATE, sentences, helpers)
        return done(Outcome.FAILED, message="no split with helpers that could be proved")

    async def _plan(
        self,
        session: CoqSession,
        state: ProofState,
        count: int,
        singles: list[str],
        seconds: float,
    ) -> tuple[dict[int, str], list[_Stuck]] | None:
        """Close each subgoal with a quick tactic, or describe it as a helper to publish."""
        closers: dict[int, str] = {}
        stuck: list[_Stuck] = []
        current = state
        for index in range(count):
            closer = await self._closer(session, current, singles, seconds)
            if closer is not None:
                step = await session.run_tactic(closer, current, timeout=seconds)
                closers[index] = closer
                current = step.state
                continue
            forms: list[tuple[tuple[str, ...], str]] = []
            for script in ((CLEAR_PROPS, REVERT_ALL), (REVERT_ALL,)):
                reverted = await session.run_script(list(script), current, timeout=seconds)
                if reverted.ok and reverted.goals:
                    statement = closure_of(reverted.goals[0])
                    if statement and all(statement != s for _, s in forms):
                        forms.append((script, statement))
            if not forms:
                return None
            stuck.append(_Stuck(index, forms))
            # go on with the next subgoal: admit this one in the session only (never stored)
            skipped = await session.run_tactic("admit.", current, timeout=seconds)
            if not skipped.ok:
                return None
            current = skipped.state
        return closers, stuck

    async def _through_market(
        self,
        session: CoqSession,
        goal: Goal,
        budget: Budget,
        opener: str,
        closers: dict[int, str],
        stuck: list[_Stuck],
    ) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
        prefix = session.prefix
        opener_kept = prefix[-1].startswith("Proof")
        before = prefix[: -2 if opener_kept else -1]
        parent = self.ledger.upsert_goal(goal)
        chosen: dict[int, tuple[tuple[str, ...], str, str, tuple[str, ...]]] = {}
        for number, item in enumerate(stuck, start=1):
            name = f"{goal.name}_helper{number}"
            for revert, statement in item.forms:
                fingerprint = fingerprint_of(canonical_statement(statement), ("helper",))
                ticket_id, _ = self.ledger.publish_ticket(
                    fingerprint=fingerprint,
                    statement=statement,
                    name=name,
                    parent_goal_id=parent,
                    priority=1.0 + len(item.forms),
                )
                script = await self._prove_ticket(session, before, ticket_id, name, budget)
                if script is not None:
                    chosen[item.index] = (revert, statement, name, script)
                    break
            if item.index not in chosen:
                return None
        helpers = tuple(
            f"Lemma {name} : {statement}.\nProof.\n{format_script(script, '  ')}\nQed."
            for _, statement, name, script in chosen.values()
        )
        sentences: list[str] = [opener]
        for index in range(len(closers) + len(chosen)):
            sentences.append("-")
            if index in closers:
                sentences.append(closers[index])
            else:
                revert, _, name, _ = chosen[index]
                # one sentence per bullet: the reverts and the helper
                steps = [step.rstrip(".") for step in revert]
                sentences.append("; ".join([*steps, f"exact {name}"]) + ".")
        helper_codes: list[str] = []
        for _, statement, name, script in chosen.values():
            helper_codes.extend([f"Lemma {name} : {statement}.", "Proof.", *script, "Qed."])
        retry_prefix = [*before, *helper_codes, *prefix[len(before) :]]
        async with session.prover.session_at(goal, retry_prefix) as retry:
            result = await retry.run_script(
                sentences, retry.root, timeout=budget.tactic_seconds + 1
            )
        if result.status is not TacticStatus.COMPLETE:
            return None
        return tuple(sentences), helpers

    async def _prove_ticket(
        self,
        session: CoqSession,
        before: tuple[str, ...],
        ticket_id: int,
        name: str,
        budget: Budget,
    ) -> tuple[str, ...] | None:
        """Claim a ticket and prove its helper, or reuse a proof another worker found."""
        existing = self.ledger.ticket(ticket_id)
        if existing is not None and existing.state == "completed" and existing.proof:
            return tuple(existing.proof)
        worker = worker_name()
        async with Leases(self.ledger, self.lease_seconds) as leases:
            ticket = leases.claim(worker, ticket_id)
            if ticket is None:
                return None  # someone else holds it
            helper_goal = Goal(
                file=session.goal.file,
                line=session.goal.line,
                name=name,
                statement=f"Lemma {name} : {ticket.statement}.",
                kind=HoleKind.ADMITTED,
                fingerprint=ticket.fingerprint,
            )
            codes = [*before, f"Lemma {name} : {ticket.statement}."]
            completed = False
            try:
                async with session.prover.session_at(helper_goal, codes) as helper:
                    for strategy in (self.micro, self.induction):
                        found = await strategy.prove(helper, helper_goal, budget)
                        self.extra_cpu += found.cpu_seconds
                        if found.outcome is Outcome.CANDIDATE:
                            completed = leases.complete(ticket_id, worker, found.sentences)
                            return found.sentences if completed else None
                return None
            finally:
                # unproved, failed or cancelled: the ticket goes back to the market at once
                if not completed:
                    leases.release(ticket_id, worker)


def canonical_statement(statement: str) -> str:
    """``statement`` with its ``forall``-bound names renamed ``v0, v1, ...`` in order.

    Two requests that differ only in the names of their bound variables are
    the same helper: they share a canonical form, hence a fingerprint.
    """
    names: list[str] = []
    for match in re.finditer(r"forall\s+([^,]*),", statement):
        for group in re.findall(r"\(([^():]*):", match.group(1)) or [match.group(1).split(":")[0]]:
            names.extend(n for n in group.split() if re.fullmatch(r"[A-Za-z_][\w']*", n))
    canonical = " ".join(statement.split())
    for index, name in enumerate(dict.fromkeys(names)):
        canonical = re.sub(rf"(?<![\w'.]){re.escape(name)}(?![\w'])", f"v{index}", canonical)
    return canonical
