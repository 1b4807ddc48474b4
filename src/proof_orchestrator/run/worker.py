"""Working on goals: the queue, the file checks and writes, around the attempt engine.

A :class:`GoalRun` queues a run's goals, replays the proofs the ledger knows,
hands each goal to the :class:`~.attempts.AttemptRunner` for one pass of its
strategies, revisits goals whose budget ran out, and verifies and writes each
file once its goals are done (:func:`.writing.verify_and_write`).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from ..backends import backend_named
from ..errors import (
    FileWriteError,
    ProverError,
    ScriptRejected,
    SessionClosed,
)
from ..goals import GoalStatus, Outcome
from ..learn import FOUND, ProofExample, statement_features
from ..ledger import Ledger
from ..scheduler.bandit import Bandit
from ..scheduler.governor import CpuGovernor
from ..scheduler.portfolio import RaceResult
from ..scheduler.queue import GoalQueue, priority
from ..search.features import similarity as cosine
from ..strategies.base import Strategy, StrategyResult
from .attempts import NO_BUDGET_LEFT, AttemptRunner, FileState, GoalItem
from .checking import leans_on, replay_script
from .live import VERIFY_SLOT, LiveBoard
from .refusals import Refusals
from .reports import (
    CANDIDATE_REPLAY,
    LEDGER_REPLAY,
    Candidate,
    FileStatus,
    FillOptions,
    FillReport,
    GoalCallback,
    GoalReport,
)
from .writing import hole_name, verify_and_write

__all__ = [
    "MAX_REVISITS_PER_RUN",
    "NO_BUDGET_LEFT",
    "FileState",
    "GoalItem",
    "GoalRun",
]

#: within one run, a goal whose pass ran out of budget is revisited once with twice
#: the budget; after that it is parked, and later runs (or `orch bg` cycles) double
#: again from the ledger's record, up to `budget_cap`
MAX_REVISITS_PER_RUN = 1
#: within one run, a goal that failed is tried again at most this often after a proof
#: was found above it in its file
MAX_RETRIES_AFTER_PROOFS = 1
#: ... and only when the new proof's statement is this much like its own (cosine of the
#: statement features): a proof it can learn from, not any proof above it
RETRY_SIMILARITY = 0.8
#: a worker takes a goal of the file it worked on last when its priority is within this
#: much of the highest (a fresh goal, not a revisit: those are 10 lower), so that the
#: prover process that holds the file serves it (:mod:`..scheduler.queue`)
FILE_AFFINITY = 4.0


class GoalRun:
    """The state of one fill run."""

    def __init__(
        self,
        ledger: Ledger,
        options: FillOptions,
        strategies: Sequence[Strategy],
        report: FillReport,
        governor: CpuGovernor,
        on_goal: GoalCallback | None,
        refusals: Refusals | None = None,
    ) -> None:
        self.ledger = ledger
        self.options = options
        self.report = report
        self.governor = governor
        self.on_goal = on_goal
        #: the scripts the whole-file check refused (``orch bg`` keeps one across cycles)
        self.refusals = refusals if refusals is not None else Refusals()
        self.bandit = Bandit(
            options.orch.bandit, random.Random(options.orch.seed), ledger.load_bandit()
        )
        self.queue: GoalQueue[GoalItem] = GoalQueue()
        self.in_flight = 0
        self.changed = asyncio.Event()
        #: told about every file this run writes (``orch bg`` ignores its own writes)
        self.on_write: Callable[[Path, str], None] | None = None
        #: what the run does now, for the live view
        self.live = LiveBoard()
        #: the one attempt engine: slots, budgets, the bandit, the ledger records
        self.runner = AttemptRunner(
            ledger,
            strategies,
            governor,
            self.bandit,
            options.budget,
            run_id=lambda: self.run_id,
            prover_version=lambda: self.report.prover_version,
            portfolio_width=options.orch.portfolio,
            heavy_width=AttemptRunner.heavy_width(options.orch.max_heavy, options.orch.cpu_target),
            live=self.live,
        )

    @property
    def strategies(self) -> dict[str, Strategy]:
        return self.runner.strategies

    @property
    def recorded(self) -> int:
        """Attempts written to the ledger by this run."""
        return self.runner.recorded

    @property
    def run_id(self) -> int:
        if self.report.run_id is None:
            raise ValueError("the run has not been started in the ledger")
        return self.report.run_id

    # -- planning --------------------------------------------------------------

    def budget_for(self, failed: float) -> float | None:
        """A goal's budget for this run: the base, doubled past the largest pass it
        already failed at; None once that is past the cap (the goal is parked)."""
        budget = self.options.budget.cpu_seconds
        while budget <= failed:
            budget *= 2
        return budget if budget <= self.options.orch.budget_cap else None

    def enqueue(
        self, item: GoalItem, failures: int = 0, first_seen: datetime | None = None
    ) -> None:
        hole = item.hole
        dependents = item.file.mentions_after(hole.goal.name, hole.proof_end)
        stuck = 0.0
        if first_seen is not None:
            seen = first_seen if first_seen.tzinfo else first_seen.replace(tzinfo=UTC)
            stuck = (datetime.now(UTC) - seen).total_seconds() / 3600
        self.queue.push(
            item,
            priority(
                hole.goal.statement,
                user=(
                    10.0
                    if {hole.goal.name, hole.goal.qualified_name} & self.options.prioritize
                    else 0.0
                )
                + self.options.weights.get(hole.declaration, 0.0),
                dependents=dependents,
                stuck_hours=stuck,
                failures=failures,
                revisits=item.revisits,
            ),
        )
        self.changed.set()

    # -- workers -----------------------------------------------------------------

    async def work(self) -> None:
        last: tuple[Path, int] | None = None  # the file and place of this worker's last goal

        def ahead_in_file(item: GoalItem) -> float | None:
            """How far past the last goal this one is in its file (None: another file):
            the prover process goes forward through the file, loading only what lies
            between two goals (going back to an earlier goal is a ``BackTo``, and the
            way forward again sends the text between)."""
            if last is None or item.hole.goal.file != last[0]:
                return None
            return float((item.hole.proof_start - last[1]) % (1 << 40))

        while True:
            if len(self.queue):
                item = self.queue.pop(ahead_in_file, FILE_AFFINITY)
                last = item.hole.goal.file, item.hole.proof_start
                self.in_flight += 1
                try:
                    await self.prove(item)
                finally:
                    self.in_flight -= 1
                    self.changed.set()
            elif self.in_flight == 0:
                return
            else:
                self.changed.clear()
                await self.changed.wait()

    async def prove(self, item: GoalItem) -> None:
        """One pass over a goal; the live board's pace model counts it (the ETA)."""
        revisit = item.revisits > 0 or item.retries_after_proofs > 0
        revisits, cpu = item.revisits, item.report.cpu_seconds
        goal, file = item.hole.goal.name, str(item.hole.goal.file)

        def used() -> float:
            """The pass's CPU so far: its attempts that ended and those running."""
            running = sum(
                slot.meter()
                for slot in list(self.live.slots.values())
                if slot.meter is not None and slot.goal == goal and slot.file == file
            )
            return item.report.cpu_seconds - cpu + running

        token = self.live.pace.pass_started(revisit=revisit, used=used, cap=item.budget)
        try:
            await self._prove(item)
        finally:
            self.live.pace.pass_ended(
                revisit=revisit,
                cpu_seconds=item.report.cpu_seconds - cpu,
                requeued=item.revisits > revisits,
                token=token,
            )

    async def _prove(self, item: GoalItem) -> None:
        goal = item.hole.goal
        if not item.replayed and self.options.reuse:
            item.replayed = True
            replay = await self.replay(item)
            if replay is not None:
                await self.goal_done(item, replay)
                return
        if not self.runner.strategies_for(goal.language) or item.budget <= 0:
            # nothing to run, or parked past --budget-cap by earlier runs
            item.report.outcome = (
                Outcome.FAILED if item.report.outcome is Outcome.CANDIDATE else item.report.outcome
            )
            await self.goal_done(item, None)
            return
        outcome = await self.search(item)
        if outcome.winner is not None:
            result = outcome.results[outcome.winner]
            try:
                sentences = item.file.tools.gate(result.sentences)
            except ScriptRejected as exc:
                item.report.outcome = Outcome.REJECTED
                item.report.message = str(exc)
                self.runner.record(item, outcome.winner, Outcome.REJECTED, result, str(exc))
                await self.goal_done(item, None)
                return
            item.report.strategy = outcome.winner
            item.report.sentences = sentences
            item.report.helpers = result.helpers
            item.report.imports = result.imports
            await self.goal_done(item, item.report)
            return
        # no candidate: if the budget ran out, the goal gets twice as much later
        timed_out = any(r.outcome is Outcome.TIMEOUT for r in outcome.results.values())
        doubled = item.budget * 2
        hints = [r.hint for r in outcome.results.values() if r.hint]
        if hints:
            item.report.message = hints[0]  # the user can allow the import and run again
        # a strategy that could not run here (SKIPPED) says nothing about the goal
        worst = [r.outcome for r in outcome.results.values() if r.outcome is not Outcome.SKIPPED]
        if worst and all(o is Outcome.ERROR for o in worst):
            # every attempt, retried, broke the prover: an error, never a failure
            item.report.outcome = Outcome.ERROR
            item.report.message = "; ".join(
                f"{name}: {result.message}"
                for name, result in outcome.results.items()
                if result.started
            )[:2000]
            self.ledger.set_goal_status(item.goal_id, GoalStatus.ERROR)
            await self.goal_done(item, None)
            return
        item.report.outcome = Outcome.TIMEOUT if Outcome.TIMEOUT in worst else Outcome.FAILED
        if (
            timed_out
            and doubled <= self.options.orch.budget_cap
            and item.revisits < MAX_REVISITS_PER_RUN
        ):
            item.budget = doubled
            item.revisits += 1
            self.enqueue(item)  # parked: revisited after fresher goals
            return
        self.ledger.set_goal_status(item.goal_id, GoalStatus.FAILED)
        await self.goal_done(item, None)

    async def search(self, item: GoalItem) -> RaceResult:
        """One pass of the goal's strategies (:meth:`.attempts.AttemptRunner.goal_pass`).

        A candidate that names another hole of the file likely rests on it: a
        closed one found by another strategy within the budget is preferred. A
        script the whole-file check already refused in this text of the file
        (:mod:`.refusals`) is no candidate: the pass goes on without it.
        """
        own = {item.hole.goal.name, hole_name(item.hole)}
        others = (
            frozenset(
                name for hole in item.file.holes or () for name in (hole.goal.name, hole_name(hole))
            )
            - own
        )
        fingerprint, text = item.hole.goal.fingerprint, item.file.text

        def refused(result: StrategyResult) -> bool:
            return self.refusals.refused(fingerprint, text, result.sentences)

        def final(result: StrategyResult) -> bool:
            return not refused(result) and not leans_on(result.sentences, others)

        outcome = await self.runner.goal_pass(item, final)
        if outcome.winner is not None and refused(outcome.results[outcome.winner]):
            outcome.winner = None  # only refused scripts came: nothing was found
        return outcome

    def candidate_script(self, item: GoalItem) -> tuple[str, ...] | None:
        """The newest unverified candidate the ledger holds for this goal, as sentences."""
        text = self.ledger.candidate_script(item.hole.goal.fingerprint)
        return None if text is None else item.file.tools.split_script(text)

    async def replay(self, item: GoalItem) -> GoalReport | None:
        """Re-check a proof the ledger already has; no search."""
        fingerprint = item.hole.goal.fingerprint
        for source, known in (
            (LEDGER_REPLAY, self.ledger.verified_proof(fingerprint)),
            (CANDIDATE_REPLAY, self.candidate_script(item)),
        ):
            if known is None:
                continue
            async with self.governor.slot():
                with self.live.slot(item.hole.goal.name, str(item.hole.goal.file), source):
                    replayed = await replay_script(
                        item.hole,
                        item.file.tools.open_session(item.hole, item.file.text),
                        known,
                        self.options.budget,
                    )
            if replayed is not None:
                replayed.strategy = source
                item.report.strategy = source
                item.report.sentences = replayed.sentences
                item.report.cpu_seconds += replayed.cpu_seconds
                item.report.wall_seconds += replayed.wall_seconds
                return item.report
        return None

    async def goal_done(self, item: GoalItem, candidate: GoalReport | None) -> None:
        state = item.file
        if candidate is not None:
            candidate.outcome = Outcome.CANDIDATE
            state.candidates.append(Candidate.of(item.hole, candidate, item.goal_id))
            self.learn_from(item, candidate)
        else:
            if item.report.outcome in (Outcome.FAILED, Outcome.TIMEOUT):
                state.failed.append(item)
            if self.on_goal:
                self.on_goal(item.report)
        self.live.done += 1
        state.pending -= 1
        if state.pending == 0:
            async with self.governor.slot():
                with self.live.slot(state.path.name, str(state.path), VERIFY_SLOT):
                    started = time.monotonic()
                    await self.finish_file(state)
                    self.live.check_ended(time.monotonic() - started)

    def learn_from(self, item: GoalItem, candidate: GoalReport) -> None:
        """A candidate joins what the goals below it learn from, at once, and the goals
        of its file that failed further down with a statement like its own are tried
        again (they may use its lemma and learn from its proof by analogy)."""
        goal = item.hole.goal
        FOUND.add(
            goal.file, goal.line, ProofExample(goal.name, goal.statement, candidate.sentences)
        )
        state = item.file
        syntax = backend_named(goal.language).goal_syntax
        found = statement_features(goal.statement, syntax)
        again = [
            f
            for f in state.failed
            if f.hole.goal.line > goal.line
            and f.retries_after_proofs < MAX_RETRIES_AFTER_PROOFS
            and cosine(found, statement_features(f.hole.goal.statement, syntax)) >= RETRY_SIMILARITY
        ]
        for failed in again:
            state.failed.remove(failed)
            failed.retries_after_proofs += 1
            state.pending += 1
            self.live.done -= 1
            self.enqueue(failed)

    async def finish_file(self, state: FileState) -> None:
        try:
            done = await verify_and_write(
                state.path,
                state.text,
                state.candidates,
                state.tools,
                self.ledger,
                self.run_id,
                self.report.prover_version,
                state.report,
                write=not self.options.dry_run,
                holes=state.holes,
                strict_holes=self.options.orch.strict_holes,
            )
        except ProverError as exc:
            if isinstance(exc, SessionClosed):  # the run is closing
                raise
            # the check itself failed (a compiled file it loads could not be read,
            # say): this file's proofs are not written; the other files go on
            state.report.status = FileStatus.CHECK_FAILED
            state.report.message = f"{state.path}: the whole-file check failed: {exc}"[:2000]
            done = None
        if done is not None and isinstance(done.error, FileWriteError):
            # the file holds its old bytes; its proofs stay in the ledger (written:
            # false) and are replayed by the next run; the run stops (the report says so)
            raise done.error
        if done is not None and done.error is not None:
            # the file changed on disk (CHANGED, reported): its proofs wait in the ledger
            done = None
        if done is not None and done.written and self.on_write is not None:
            self.on_write(state.path, done.text)
        for item in state.candidates:
            if item.report.outcome is Outcome.REJECTED:
                self.refusals.add(item.report.goal.fingerprint, state.text, item.report.sentences)
            if self.on_goal:
                self.on_goal(item.report)
        state.report.written = done is not None and done.written
        accepted = done.accepted if done is not None else []
        self.live.proved += len(accepted)
        if state.report.status is FileStatus.PENDING:
            state.report.status = FileStatus.DONE
