"""The attempt engine: one pass of the strategies over one goal, and each attempt in it.

:class:`AttemptRunner` is the one place where an attempt takes a CPU slot (and
a heavy slot for an expensive strategy), draws its CPU grant from the goal's
account when it really starts and settles it when it ends (on cancellation
too), updates the bandit, records the attempt in the ledger, and is
cancelled when another strategy wins. ``orch fill``, ``bg``, ``bank``, the
portfolio arm of ``orch eval`` and the MCP tool ``run_strategies`` all run
their goals through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from ..errors import PrefixError, ProverError
from ..goals import Budget, Outcome
from ..ledger import Ledger
from ..provers.backend import Hole, ProjectTools
from ..provers.base import KernelChecked, ProofSession
from ..scheduler.bandit import ArmStats, Bandit, goal_class
from ..scheduler.budget import GoalBudget
from ..scheduler.governor import CpuGovernor
from ..scheduler.portfolio import RaceResult, goal_pass
from ..scheduler.queue import Mentions
from ..scheduler.shares import PlanCounts, plan_pass
from ..strategies.base import Strategy, StrategyResult
from .live import LiveBoard, LiveSlot
from .reports import Candidate, FileReport, GoalReport

__all__ = [
    "KERNEL_CHECK_SECONDS",
    "NO_BUDGET_LEFT",
    "AttemptRunner",
    "FileState",
    "GoalItem",
    "LocalExecutor",
    "kernel_checked",
    "run_attempt",
]

#: the message of a strategy that did not start because its goal's budget was spent
NO_BUDGET_LEFT = "not started: the goal's budget was spent"


@dataclass(slots=True)
class FileState:
    """One file of a run: its text as scanned, its tools, its report, its candidates."""

    path: Path
    text: str
    tools: ProjectTools
    report: FileReport
    pending: int
    candidates: list[Candidate] = field(default_factory=list)
    #: identifier positions of ``text``, for the queue's dependents count (made once)
    mentions: Mentions | None = None
    #: the holes found when the file was scanned (the verifier needs their names)
    holes: list[Hole] | None = None
    #: goals that failed, tried again when a proof is found above them
    failed: list[GoalItem] = field(default_factory=list)

    def mentions_after(self, name: str, offset: int) -> int:
        """Whole-identifier mentions of ``name`` in ``text`` from ``offset`` on."""
        if self.mentions is None:
            self.mentions = Mentions(self.text)
        return self.mentions.after(name, offset)


@dataclass(slots=True)
class GoalItem:
    """One goal of a run: its hole, its file, its ledger id, its report and its budget."""

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
    #: times the goal was tried again after a proof was found above it
    retries_after_proofs: int = 0


async def run_attempt(
    tools: ProjectTools,
    strategy: Strategy,
    hole: Hole,
    text: str,
    budget: Budget,
    on_cancel: Callable[[float], None] | None = None,
    *,
    on_session: Callable[[ProofSession], None] | None = None,
) -> StrategyResult:
    """Open a session at ``hole`` with ``tools`` and run ``strategy`` in it.

    ``on_session`` is given the session once it is open (the live view reads
    its CPU). On cancellation, ``on_cancel`` is told the CPU the session had used.
    """
    async with tools.open_session(hole, text) as session:
        if on_session is not None:
            on_session(session)
        try:
            result: StrategyResult = await strategy.prove(session, hole.goal, budget)
            if result.outcome is Outcome.CANDIDATE:
                result = await kernel_checked(session, result, budget)
        except asyncio.CancelledError:
            if on_cancel is not None:
                on_cancel(session.cpu_seconds())
            raise
        return result


#: CPU seconds a candidate's ``Qed`` may take in its session, at least
KERNEL_CHECK_SECONDS = 10.0


async def kernel_checked(
    session: ProofSession, result: StrategyResult, budget: Budget
) -> StrategyResult:
    """``result`` if its proof closes in the session (where the session can tell),
    else a failure: a candidate the kernel refuses would win the race and be thrown
    out by the file's check, and the goal's pass with it. Candidates that need
    helper lemmas or imports are left to the file's check, and a candidate its
    strategy already saw close is not checked twice."""
    if result.kernel_checked or result.helpers or result.imports:
        return result
    if not isinstance(session, KernelChecked):
        return result
    before = session.cpu_seconds()
    closed, message = await session.kernel_accepts(
        result.sentences, max(KERNEL_CHECK_SECONDS, budget.tactic_seconds)
    )
    spent = session.cpu_seconds() - before
    if closed:
        return replace(result, cpu_seconds=result.cpu_seconds + spent)
    return replace(
        result,
        outcome=Outcome.FAILED,
        cpu_seconds=result.cpu_seconds + spent,
        message=f"the kernel refused the proof at its end: {message.strip()[-400:]}",
    )


@dataclass(slots=True)
class _AttemptAccount:
    """One attempt's books: its grant from the goal's account, settled exactly once (on
    cancellation too), its ledger key, and this process's CPU it is charged."""

    runner: AttemptRunner
    item: GoalItem
    name: str
    #: the goal's class, for the bandit
    klass: str
    account: GoalBudget
    started: float = field(default_factory=time.monotonic)
    own_start: float = field(default_factory=time.process_time)
    granted: float = 0.0
    key: str = ""
    #: this process's own CPU while the attempt ran, its share (see ``_running``)
    own: float = 0.0
    settled: bool = False

    def grant(self) -> float:
        self.granted = self.account.grant(self.name)
        return self.granted

    def settle(self, used: float) -> None:
        if not self.settled:
            self.settled = True
            self.account.settle(self.granted, used)

    def cancelled(self, cpu: float) -> None:
        """The attempt was cancelled after its session used ``cpu``: recorded and settled.

        It counts in the bandit as a censored failure (it did not win in the time it
        had): the explore rule (:func:`.scheduler.shares.plan_pass`) counts attempts
        as the ledger shows them, and a cancelled one would otherwise let a pass plan
        one attempt more than the rule allows. That holds whatever cancelled it: a
        winner, Ctrl-C, or a cluster executor that reports no CPU (``cpu`` 0).
        """
        spent = StrategyResult(Outcome.CANCELLED, (), 0, cpu, time.monotonic() - self.started)
        stats = self.runner.bandit.update(
            self.klass, self.name, success=False, cpu_seconds=cpu, censored=True
        )
        self.runner.record(
            self.item,
            self.name,
            Outcome.CANCELLED,
            spent,
            "",
            self.granted,
            (self.klass, stats),
            attempt_key=self.key,
        )
        self.item.report.cpu_seconds += cpu
        self.settle(cpu)


class AttemptExecutor(Protocol):
    """Where an attempt runs (this process, or a Ray cluster through :class:`_Remote`)."""

    async def attempt(
        self,
        item: GoalItem,
        strategy: Strategy,
        budget: Budget,
        on_cancel: Callable[[float], None],
        live: LiveSlot,
    ) -> StrategyResult: ...


class LocalExecutor:
    """Runs attempts in this process with the file's project tools; the live view reads
    the session's CPU."""

    async def attempt(
        self,
        item: GoalItem,
        strategy: Strategy,
        budget: Budget,
        on_cancel: Callable[[float], None],
        live: LiveSlot,
    ) -> StrategyResult:
        def opened(session: ProofSession) -> None:
            live.meter = session.cpu_seconds

        def cancelled(cpu: float) -> None:
            # the session's CPU moves to the goal's report now: the slot, still shown
            # while the session closes, must not count it a second time
            live.meter = None
            on_cancel(cpu)

        return await run_attempt(
            item.file.tools,
            strategy,
            item.hole,
            item.file.text,
            budget,
            cancelled,
            on_session=opened,
        )


#: the one local executor (it keeps no state)
LOCAL = LocalExecutor()


@dataclass(frozen=True, slots=True)
class _Remote:
    """An executor elsewhere (``run.executors``), sent what ``request`` makes."""

    executor: Any
    request: Callable[[GoalItem, str, Budget], Any]

    async def attempt(
        self,
        item: GoalItem,
        strategy: Strategy,
        budget: Budget,
        on_cancel: Callable[[float], None],
        live: LiveSlot,
    ) -> StrategyResult:
        result: StrategyResult = await self.executor.attempt(
            self.request(item, strategy.name, budget), on_cancel
        )
        return result


class AttemptRunner:
    """Runs a goal's strategies: slots, grants and settles, the bandit, the ledger.

    ``run_id`` is read when an attempt is recorded (the run may start after the
    runner is made). ``executor``, when set, runs the attempts of strategies
    that do not need the ledger elsewhere (a Ray cluster), with ``request``
    making what it sends.
    """

    def __init__(
        self,
        ledger: Ledger,
        strategies: Sequence[Strategy],
        governor: CpuGovernor,
        bandit: Bandit,
        base: Budget,
        *,
        run_id: Callable[[], int],
        prover_version: Callable[[], str] = lambda: "",
        portfolio_width: int = 2,
        heavy_width: int = 1,
        live: LiveBoard | None = None,
    ) -> None:
        self.ledger = ledger
        self.strategies = {s.name: s for s in strategies}
        self.governor = governor
        self.bandit = bandit
        self.base = base
        self.run_id = run_id
        self.prover_version = prover_version
        self.portfolio_width = portfolio_width
        # expensive strategies at once: at least what the CPU target allows on this machine
        self.heavy = asyncio.Semaphore(heavy_width)
        self.live = live or LiveBoard()
        #: where attempts run (None: in this process, with the file's project tools)
        self.executor: Any = None
        #: makes an executor's request for (item, strategy name)
        self.request: Callable[[GoalItem, str, Budget], Any] | None = None
        #: attempts written to the ledger (a write that was retried counts once)
        self.recorded = 0
        #: attempts running now (this process's own CPU is shared among them)
        self.running = 0
        self._attempts = 0
        #: per strategy, the goal passes it was planned in, explored in, or rested from
        self.plans = PlanCounts()
        #: per strategy, the attempts planned by passes running now and not settled yet
        self.unsettled: dict[str, int] = {}

    @staticmethod
    def heavy_width(max_heavy: int, cpu_target: float) -> int:
        """Heavy slots: at least what the CPU target allows on this machine
        (``--cpu-target 1.0`` on two cores: two, so goals really run in parallel)."""
        return max(max_heavy, int((os.cpu_count() or 1) * cpu_target))

    def strategies_for(self, language: str) -> list[str]:
        """The strategies that work on goals of ``language``, in the profile's order."""
        return [n for n, s in self.strategies.items() if s.language == language]

    async def goal_pass(
        self, item: GoalItem, final: Callable[[StrategyResult], bool] | None = None
    ) -> RaceResult:
        """One pass over the goal: its strategies race within the goal's budget.

        The bandit ranks them for the goal's class; the cheap ones go first and
        the expensive ones share what is left (:func:`.scheduler.portfolio.goal_pass`).
        A prover error gets one retry per goal. No candidate is checked here
        beyond what its strategy did in the session; one that is not ``final``
        (it names another hole) wins only if no final one comes within the budget.
        """
        goal = item.hole.goal
        klass = goal_class(goal.statement)
        every = self.strategies_for(goal.language)
        floors = {n: self.strategies[n].min_grant_seconds for n in every}
        plan = plan_pass(
            self.bandit,
            klass,
            every,
            {n: self.strategies[n].weight == "heavy" for n in every},
            floors,
            self.bandit.rng,
            self.unsettled,
        )
        self.plans.count(plan)
        names = plan.names
        heavy = {n: self.strategies[n].weight == "heavy" for n in names}
        # the attempts this pass plans and has not settled: they count toward a
        # strategy's record while they run (``plan_pass``'s ``running``)
        pending = dict.fromkeys(names, 1)
        for name in names:
            self.unsettled[name] = self.unsettled.get(name, 0) + 1

        def settled(name: str) -> None:
            if pending.get(name, 0) > 0:
                pending[name] -= 1
                self.unsettled[name] -= 1

        async def attempt(name: str, account: GoalBudget) -> StrategyResult:
            try:
                return await self.attempt(item, name, klass, account)
            finally:
                settled(name)

        retry = not item.error_retried
        try:
            outcome = await goal_pass(
                self.bandit.rank(klass, names),
                heavy,
                plan.shares,
                item.budget,
                self.portfolio_width,
                attempt,
                retry_errors=retry,
                final=final,
                floors=plan.floors,
                boosts=plan.boosts,
            )
        finally:
            for name in names:
                settled(name)  # not run: a winner came first
        if retry and any(r.outcome is Outcome.ERROR for r in outcome.results.values()):
            item.error_retried = True
        return outcome

    def attempt_budget(self, item: GoalItem, granted: float) -> Budget:
        """An attempt's budget: its grant, and tactics timed by the goal's budget (revisits)."""
        base = self.base
        return Budget(
            cpu_seconds=granted,
            tactic_seconds=base.tactic_seconds * max(1.0, item.budget / base.cpu_seconds),
            grace_seconds=base.grace_seconds,
        )

    @contextlib.asynccontextmanager
    async def _slots(self, strategy: Strategy, uses_slot: bool) -> AsyncIterator[None]:
        """Hold what ``strategy``'s attempt waits for: a CPU slot of the governor (unless
        it waits on its own limit, or runs elsewhere) and, for a heavy strategy, a heavy
        slot; released in the reverse order, on every way out."""
        async with contextlib.AsyncExitStack() as stack:
            if uses_slot:
                await stack.enter_async_context(self.governor.slot())
            if strategy.weight == "heavy":
                await stack.enter_async_context(self.heavy)
            yield

    @contextlib.contextmanager
    def _running(self, account: _AttemptAccount) -> Iterator[None]:
        """Count the attempt as running; at its end, its share of this process's own CPU
        meanwhile (shared among the attempts running) goes to ``account.own``."""
        self.running += 1
        try:
            yield
        finally:
            account.own = (time.process_time() - account.own_start) / max(1, self.running)
            self.running -= 1

    def _executor_for(self, strategy: Strategy) -> AttemptExecutor:
        """Where ``strategy``'s attempt runs: the runner's executor (a Ray cluster) unless
        the strategy needs the ledger, else here with the file's project tools."""
        if self.executor is None or strategy.needs_ledger:
            return LOCAL
        if self.request is None:
            raise RuntimeError("an executor needs a request maker")
        return _Remote(self.executor, self.request)

    async def attempt(
        self, item: GoalItem, name: str, klass: str, account: GoalBudget
    ) -> StrategyResult:
        """One strategy on one goal: wait for its slots, draw its grant, run it where it
        runs, settle the grant (on every way out), update the bandit and record it."""
        strategy = self.strategies[name]
        # a strategy that has gone off for the rest of the run (the llm strategies once
        # their model server stopped answering) skips without opening a session
        reason = strategy.off_reason()
        if reason:
            skipped = StrategyResult(Outcome.SKIPPED, message=str(reason))
            self.record(item, name, Outcome.SKIPPED, skipped, str(reason))
            return skipped
        goal = item.hole.goal
        books = _AttemptAccount(self, item, name, klass, account)
        executor = self._executor_for(strategy)
        # model calls (the llm strategy) wait on their own limit, not on a CPU slot
        uses_slot = self.executor is None and strategy.uses_slot
        try:
            async with self._slots(strategy, uses_slot):
                # the grant is made when the strategy really starts: what the
                # strategies before it left unused is there to take
                if books.grant() <= 0:
                    return StrategyResult(Outcome.TIMEOUT, message=NO_BUDGET_LEFT, started=False)
                budget = self.attempt_budget(item, books.granted)
                books.key = self.attempt_key(item, name)
                with self._running(books):
                    try:
                        with self.live.slot(goal.name, str(goal.file), name, books.granted) as live:
                            result = await executor.attempt(
                                item, strategy, budget, books.cancelled, live
                            )
                    except (ProverError, PrefixError) as exc:
                        result = StrategyResult(
                            Outcome.ERROR, (), 0, 0.0, time.monotonic() - books.started, str(exc)
                        )
        except BaseException:
            # cancelled (another strategy won, Ctrl-C) or broken: the grant goes back
            # to the goal's account even when no session was open yet to count CPU
            books.settle(0.0)
            raise
        books.settle(result.cpu_seconds + books.own)
        self._count(item, name, klass, result, budget.cpu_seconds, books.key)
        return result

    def _count(
        self,
        item: GoalItem,
        name: str,
        klass: str,
        result: StrategyResult,
        budget: float,
        key: str,
    ) -> None:
        """An ended attempt in the goal's report, the bandit and the ledger."""
        item.report.cpu_seconds += result.cpu_seconds
        item.report.wall_seconds += result.wall_seconds
        item.report.tactics_tried += result.tactics_tried
        arm = None
        if result.outcome is not Outcome.ERROR:
            # a broken prover says nothing about the strategy; a strategy that cannot
            # run here (SKIPPED: not an attempt in the ledger's counts) did not help
            # at no cost, which keeps it from being ranked first again and again
            stats = self.bandit.update(
                klass,
                name,
                success=result.outcome is Outcome.CANDIDATE,
                cpu_seconds=result.cpu_seconds,
                censored=result.outcome is Outcome.TIMEOUT,
            )
            arm = (klass, stats)
        message = result.message
        if result.load_cpu_seconds > 0:
            # e.g. CoqHammer reading its ATP library: once per prover process
            load = f"load {result.load_cpu_seconds:.1f} CPU s, once per prover process"
            message = f"{message} ({load})" if message else load
        self.record(item, name, result.outcome, result, message, budget, arm, attempt_key=key)

    def attempt_key(self, item: GoalItem, strategy: str) -> str:
        """A key unique to this attempt: a repeated write of it is recorded once."""
        self._attempts += 1
        return f"{self.run_id()}:{item.goal_id}:{strategy}:{self._attempts}"

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
    ) -> None:
        self.ledger.record_attempt(
            run_id=self.run_id(),
            goal_id=item.goal_id,
            fingerprint=item.hole.goal.fingerprint,
            strategy=strategy,
            outcome=outcome,
            tactic=item.file.tools.join_script(result.sentences),
            tactics_tried=result.tactics_tried,
            budget_seconds=budget,
            goal_budget_seconds=item.budget,
            cpu_seconds=result.cpu_seconds,
            wall_seconds=result.wall_seconds,
            prover_version=self.prover_version(),
            message=message,
            arm=arm,
            attempt_key=attempt_key,
            tokens_in=result.tokens_in,
            tokens_out=result.tokens_out,
            cost_usd=result.cost_usd,
            llm_seconds=result.llm_seconds,
            llm_checks=result.llm_checks,
        )
        self.recorded += 1
