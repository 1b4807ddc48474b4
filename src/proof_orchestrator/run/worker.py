"""Working on goals: the queue, the racing strategies, the ledger records, the file checks."""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..coq.session import PrefixError
from ..coq.strategies.hammer import FOUND_WITH_TACTICS
from ..coq.strategies.market import MarketStrategy
from ..coq.strategies.micro import (
    CachedStrategy,
    InductionStrategy,
    MicroStrategy,
    nearest_first,
)
from ..errors import FileChangedError, FileWriteError, ProverError, ScriptRejected
from ..goals import Budget, Outcome
from ..lean.strategies.tactics import LeanQuickStrategy
from ..ledger import Ledger
from ..project.holes import Hole
from ..project.patch import Patch, apply_patches, write_atomic
from ..scheduler.bandit import ArmStats, Bandit, goal_class
from ..scheduler.budget import GoalBudget
from ..scheduler.governor import CpuGovernor
from ..scheduler.portfolio import RaceResult, goal_pass
from ..scheduler.queue import GoalQueue, Mentions, priority
from ..strategies.base import Strategy, StrategyResult
from .checking import replay_script, verify_candidates
from .executors import AttemptRequest, RayExecutor, run_attempt
from .lineup import strong_strategies
from .live import LiveBoard
from .reports import (
    CANDIDATE_REPLAY,
    LEDGER_REPLAY,
    Candidate,
    FileReport,
    FileStatus,
    FillOptions,
    FillReport,
    GoalCallback,
    GoalReport,
)
from .tools import LeanTools, ProjectTools, Tools

__all__ = [
    "MAX_REVISITS_PER_RUN",
    "NO_BUDGET_LEFT",
    "FileState",
    "GoalItem",
    "GoalRun",
    "LeanTools",
    "ProjectTools",
    "Tools",
    "default_strategies",
    "strong_strategies",
]

#: within one run, a goal whose pass ran out of budget is revisited once with twice
#: the budget; after that it is parked, and later runs (or `orch bg` cycles) double
#: again from the ledger's record, up to `budget_cap`
MAX_REVISITS_PER_RUN = 1
#: the message of a strategy that did not start because its goal's budget was spent
NO_BUDGET_LEFT = "not started: the goal's budget was spent"


def default_strategies(
    ledger: Ledger, profile: int, allowed_imports: frozenset[str] = frozenset()
) -> list[Strategy]:
    """The strategies of a profile, in the order preferred before anything is learned.

    Profile 0 is the quick tactics. Profile 1 (the default) adds best-first
    search (with the k-NN model mined from the file's earlier proofs and
    retrieved premises), and, in files that load CoqHammer, the ``sauto``
    family and ``hammer`` (in a side session where the file does not load
    CoqHammer). Profile 2 adds the helper-lemma market
    (:mod:`proof_orchestrator.coq.strategies.market`). ``allowed_imports`` holding
    ``hammer-tactics`` lets proofs use CoqHammer's tactics by adding the import.
    """
    strategies: list[Strategy] = [
        MicroStrategy(),
        InductionStrategy(),
        CachedStrategy(ledger.popular_scripts(), ledger.proved_statements()),
        LeanQuickStrategy(),
    ]
    if profile >= 1:
        strategies += strong_strategies(
            ledger.proved_statements(),
            "hammer-tactics" in allowed_imports,
            ledger.proved_statements("lean"),
        )
    if profile >= 2:
        strategies.append(MarketStrategy(ledger))
    return strategies


def language_of_strategy(strategy: Strategy) -> str:
    """The language whose goals a strategy works on (Coq unless it says otherwise)."""
    return str(getattr(strategy, "language", "coq"))


def _mentions(text: str, name: str) -> int:
    """How many times ``name`` appears in ``text`` as a whole identifier."""
    return Mentions(text).after(name)


@dataclass(slots=True)
class FileState:
    path: Path
    text: str
    tools: Tools
    report: FileReport
    pending: int
    candidates: list[Candidate] = field(default_factory=list)
    #: identifier positions of ``text``, for the queue's dependents count (made once)
    mentions: Mentions | None = None

    def mentions_after(self, name: str, offset: int) -> int:
        """Whole-identifier mentions of ``name`` in ``text`` from ``offset`` on."""
        if self.mentions is None:
            self.mentions = Mentions(self.text)
        return self.mentions.after(name, offset)


@dataclass(slots=True)
class GoalItem:
    hole: Hole
    file: FileState
    goal_id: int
    report: GoalReport
    #: CPU seconds this pass over the goal may use, all strategies together
    budget: float
    revisits: int = 0
    replayed: bool = False
    #: the strategies that ended in a prover error have had their one retry
    error_retried: bool = False


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
    ) -> None:
        self.ledger = ledger
        self.options = options
        self.strategies = {s.name: s for s in strategies}
        self.report = report
        self.governor = governor
        self.on_goal = on_goal
        self.bandit = Bandit(
            options.orch.bandit, random.Random(options.orch.seed), ledger.load_bandit()
        )
        self.queue: GoalQueue[GoalItem] = GoalQueue()
        self.in_flight = 0
        self.changed = asyncio.Event()
        # expensive strategies at once: at least what the CPU target allows on this machine
        # (--cpu-target 1.0 on two cores: two, so that goals really run in parallel)
        self.heavy = asyncio.Semaphore(
            max(options.orch.max_heavy, int((os.cpu_count() or 1) * options.orch.cpu_target))
        )
        #: told about every file this run writes (``orch bg`` ignores its own writes)
        self.on_write: Callable[[Path, str], None] | None = None
        #: where attempts run (None: in this process, with the file's project tools)
        self.executor: RayExecutor | None = None
        #: scripts of the ``cached`` strategy, for executors that build their own strategies
        self.popular = tuple(ledger.popular_scripts())
        self.proved = ledger.proved_statements()
        self._attempts = 0
        #: what the run does now, for the live view
        self.live = LiveBoard()
        #: attempts written to the ledger by this run (a write that was retried counts once)
        self.recorded = 0
        #: attempts running now (this process's own CPU is shared among them)
        self.running = 0

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

    def strategies_for(self, language: str) -> list[str]:
        """The strategies that work on goals of ``language``, in the profile's order."""
        return [n for n, s in self.strategies.items() if language_of_strategy(s) == language]

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
                + self.options.weights.get(
                    getattr(hole, "decl_name", "") or hole.goal.qualified_name, 0.0
                ),
                dependents=dependents,
                stuck_hours=stuck,
                failures=failures,
                revisits=item.revisits,
            ),
        )
        self.changed.set()

    # -- workers -----------------------------------------------------------------

    async def work(self) -> None:
        while True:
            if len(self.queue):
                item = self.queue.pop()
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
        goal = item.hole.goal
        if not item.replayed and self.options.reuse:
            item.replayed = True
            replay = await self.replay(item)
            if replay is not None:
                await self.goal_done(item, replay)
                return
        if not self.strategies_for(goal.language) or item.budget <= 0:
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
                self.record(item, outcome.winner, Outcome.REJECTED, result, str(exc))
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
        hints = [
            r.message for r in outcome.results.values() if r.message.startswith(FOUND_WITH_TACTICS)
        ]
        if hints:
            item.report.message = hints[0]  # the user can allow the import and run again
        worst = [r.outcome for r in outcome.results.values()]
        if worst and all(o is Outcome.ERROR for o in worst):
            # every attempt, retried, broke the prover: an error, never a failure
            item.report.outcome = Outcome.ERROR
            item.report.message = "; ".join(
                f"{name}: {result.message}"
                for name, result in outcome.results.items()
                if result.message != NO_BUDGET_LEFT
            )[:2000]
            self.ledger.set_goal_status(item.goal_id, Outcome.ERROR.value)
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
        self.ledger.set_goal_status(item.goal_id, "failed")
        await self.goal_done(item, None)

    async def search(self, item: GoalItem) -> RaceResult:
        """One pass over the goal: its strategies race within the goal's budget.

        The bandit ranks them for the goal's class; the cheap ones go first and
        the expensive ones share what is left (:func:`.scheduler.portfolio.goal_pass`).
        A prover error gets one retry per goal. No candidate is checked here
        beyond what its strategy did in the session.
        """
        goal = item.hole.goal
        names = self.strategies_for(goal.language)
        klass = goal_class(goal.statement)
        heavy = {n: getattr(self.strategies[n], "weight", "light") == "heavy" for n in names}
        shares = {n: self.bandit.success_rate(klass, n) for n in names if heavy[n]}

        async def attempt(name: str, account: GoalBudget) -> StrategyResult:
            return await self.attempt(item, name, klass, account)

        retry = not item.error_retried
        outcome = await goal_pass(
            self.bandit.rank(klass, names),
            heavy,
            shares,
            item.budget,
            self.options.orch.portfolio,
            attempt,
            retry_errors=retry,
        )
        if retry and any(r.outcome is Outcome.ERROR for r in outcome.results.values()):
            item.error_retried = True
        return outcome

    async def attempt(
        self, item: GoalItem, name: str, klass: str, account: GoalBudget
    ) -> StrategyResult:
        strategy = self.strategies[name]
        base = self.options.budget
        goal = item.hole.goal
        started = time.monotonic()
        result: StrategyResult
        granted = 0.0
        budget = base
        key = ""
        own_start = time.process_time()

        def cancelled(cpu: float) -> None:
            spent = StrategyResult(Outcome.CANCELLED, (), 0, cpu, time.monotonic() - started)
            self.record(
                item,
                name,
                Outcome.CANCELLED,
                spent,
                "",
                granted,
                attempt_key=key,
                goal_budget=item.budget,
            )
            item.report.cpu_seconds += cpu
            account.settle(granted, cpu)

        # model calls (the llm strategy) wait on their own limit, not on a CPU slot
        uses_slot = self.executor is None and getattr(strategy, "uses_slot", True)
        slot = self.governor.slot() if uses_slot else contextlib.nullcontext(None)
        async with slot:
            heavy = self.heavy if getattr(strategy, "weight", "light") == "heavy" else None
            if heavy is not None:
                await heavy.acquire()
            # the grant is made when the strategy really starts: what the strategies
            # before it left unused is there to take
            granted = account.grant(name)
            if granted <= 0:
                if heavy is not None:
                    heavy.release()
                return StrategyResult(Outcome.TIMEOUT, message=NO_BUDGET_LEFT)
            budget = Budget(
                cpu_seconds=granted,
                # tactics get more time as the goal's budget grows (revisits)
                tactic_seconds=base.tactic_seconds * max(1.0, item.budget / base.cpu_seconds),
                grace_seconds=base.grace_seconds,
            )
            key = self.attempt_key(item, name)
            self.running += 1
            try:
                with self.live.slot(goal.name, str(goal.file), name, budget.cpu_seconds) as live:
                    if self.executor is None or getattr(strategy, "needs_ledger", False):

                        def opened(session: Any) -> None:
                            live.meter = session.cpu_seconds

                        result = await run_attempt(
                            item.file.tools,
                            strategy,
                            item.hole,
                            item.file.text,
                            budget,
                            cancelled,
                            on_session=opened,
                        )
                    else:
                        request = AttemptRequest(
                            item.hole,
                            item.file.text,
                            name,
                            budget,
                            tuple(nearest_first(goal.statement, self.proved, self.popular)),
                            route=str(goal.file),
                        )
                        result = await self.executor.attempt(request, cancelled)
            except (ProverError, PrefixError) as exc:
                result = StrategyResult(
                    Outcome.ERROR, (), 0, 0.0, time.monotonic() - started, str(exc)
                )
            finally:
                # this process's own CPU meanwhile, shared among the attempts running
                own = (time.process_time() - own_start) / max(1, self.running)
                self.running -= 1
                if heavy is not None:
                    heavy.release()
        account.settle(granted, result.cpu_seconds + own)
        item.report.cpu_seconds += result.cpu_seconds
        item.report.wall_seconds += result.wall_seconds
        item.report.tactics_tried += result.tactics_tried
        arm = None
        if result.outcome is not Outcome.ERROR:
            stats = self.bandit.update(
                klass,
                name,
                success=result.outcome is Outcome.CANDIDATE,
                cpu_seconds=result.cpu_seconds,
                censored=result.outcome is Outcome.TIMEOUT,
            )
            arm = (klass, stats)
        self.record(
            item,
            name,
            result.outcome,
            result,
            result.message,
            budget.cpu_seconds,
            arm,
            attempt_key=key,
            goal_budget=item.budget,
        )
        return result

    def attempt_key(self, item: GoalItem, strategy: str) -> str:
        """A key unique to this attempt: a repeated write of it is recorded once."""
        self._attempts += 1
        return f"{self.run_id}:{item.goal_id}:{strategy}:{self._attempts}"

    def record(
        self,
        item: GoalItem,
        strategy: str,
        outcome: Outcome,
        result: StrategyResult,
        message: str,
        budget: float = 0.0,
        arm: tuple[str, ArmStats] | None = None,
        *,
        attempt_key: str | None = None,
        goal_budget: float = 0.0,
    ) -> None:
        self.ledger.record_attempt(
            run_id=self.run_id,
            goal_id=item.goal_id,
            fingerprint=item.hole.goal.fingerprint,
            strategy=strategy,
            outcome=outcome,
            tactic=item.file.tools.join_script(result.sentences),
            tactics_tried=result.tactics_tried,
            budget_seconds=budget,
            goal_budget_seconds=goal_budget,
            cpu_seconds=result.cpu_seconds,
            wall_seconds=result.wall_seconds,
            prover_version=self.report.prover_version,
            message=message,
            arm=arm,
            attempt_key=attempt_key,
            tokens_in=result.tokens_in,
            tokens_out=result.tokens_out,
            cost_usd=result.cost_usd,
            llm_seconds=result.llm_seconds,
        )
        self.recorded += 1

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
            state.candidates.append((item.hole, candidate, item.goal_id))
        elif self.on_goal:
            self.on_goal(item.report)
        self.live.done += 1
        state.pending -= 1
        if state.pending == 0:
            async with self.governor.slot():
                with self.live.slot(state.path.name, str(state.path), "verify"):
                    await self.finish_file(state)

    async def finish_file(self, state: FileState) -> None:
        accepted = await verify_candidates(
            state.path,
            state.text,
            state.candidates,
            state.tools.verifier,
            state.tools.declared_axioms(state.text),
            self.ledger,
            self.run_id,
            self.report.prover_version,
            state.report,
        )
        final_text = apply_patches(
            state.text, [Patch(h, r.sentences, r.helpers, r.imports) for h, r, _ in accepted]
        )
        # proofs are recorded before the file is written: a file never holds a proof
        # the ledger lacks (if the ledger is unreachable, nothing is written)
        for hole, goal_report, goal_id in accepted:
            # the change this proof alone makes to the file
            alone = apply_patches(
                state.text,
                [Patch(hole, goal_report.sentences, goal_report.helpers, goal_report.imports)],
            )
            diff = "".join(
                difflib.unified_diff(
                    state.text.splitlines(keepends=True),
                    alone.splitlines(keepends=True),
                    fromfile=str(state.path),
                    tofile=str(state.path),
                )
            )
            self.ledger.record_proof(
                run_id=self.run_id,
                goal_id=goal_id,
                fingerprint=hole.goal.fingerprint,
                sentences=goal_report.sentences,
                strategy=goal_report.strategy,
                prover_version=self.report.prover_version,
                diff=diff,
                written=False,
            )
        written = False
        if accepted and not self.options.dry_run:
            try:
                write_atomic(state.path, final_text, state.text)
                written = True
            except FileChangedError as exc:
                state.report.status = FileStatus.CHANGED
                state.report.message = str(exc)
            except FileWriteError as exc:
                # the file holds its old bytes; its proofs stay in the ledger (written:
                # false) and are replayed by the next run; the run stops
                state.report.status = FileStatus.WRITE_FAILED
                state.report.message = str(exc)
                raise
        if written:
            self.ledger.mark_written(self.run_id, [goal_id for _, _, goal_id in accepted])
            if self.on_write is not None:
                self.on_write(state.path, final_text)
        for _, goal_report, _ in state.candidates:
            if self.on_goal:
                self.on_goal(goal_report)
        state.report.written = written
        self.live.proved += len(accepted)
        if state.report.status is FileStatus.INTERRUPTED:
            state.report.status = FileStatus.DONE
