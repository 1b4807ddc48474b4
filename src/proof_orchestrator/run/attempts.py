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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import PrefixError, ProverError
from ..goals import Budget, Outcome
from ..ledger import Ledger
from ..provers.backend import ProjectTools
from ..scheduler.bandit import ArmStats, Bandit, goal_class
from ..scheduler.budget import GoalBudget
from ..scheduler.governor import CpuGovernor
from ..scheduler.portfolio import RaceResult, goal_pass
from ..scheduler.queue import Mentions
from ..strategies.base import Strategy, StrategyResult
from .live import LiveBoard
from .reports import Candidate, FileReport, GoalReport

__all__ = [
    "NO_BUDGET_LEFT",
    "AttemptRunner",
    "FileState",
    "GoalItem",
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
    holes: list[Any] | None = None
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

    hole: Any
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
    tools: Any,
    strategy: Strategy,
    hole: Any,
    text: str,
    budget: Budget,
    on_cancel: Callable[[float], None] | None = None,
    *,
    on_session: Callable[[Any], None] | None = None,
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
        except asyncio.CancelledError:
            if on_cancel is not None:
                on_cancel(session.cpu_seconds())
            raise
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
        names = self.strategies_for(goal.language)
        klass = goal_class(goal.statement)
        heavy = {n: self.strategies[n].weight == "heavy" for n in names}
        shares = {n: self.bandit.success_rate(klass, n) for n in names if heavy[n]}
        floors = {n: self.strategies[n].min_grant_seconds for n in shares}

        async def attempt(name: str, account: GoalBudget) -> StrategyResult:
            return await self.attempt(item, name, klass, account)

        retry = not item.error_retried
        outcome = await goal_pass(
            self.bandit.rank(klass, names),
            heavy,
            shares,
            item.budget,
            self.portfolio_width,
            attempt,
            retry_errors=retry,
            final=final,
            floors=floors,
        )
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

    async def attempt(
        self, item: GoalItem, name: str, klass: str, account: GoalBudget
    ) -> StrategyResult:
        strategy = self.strategies[name]
        goal = item.hole.goal
        started = time.monotonic()
        result: StrategyResult
        granted = 0.0
        budget = self.base
        key = ""
        own_start = time.process_time()
        settled = False

        def settle(used: float) -> None:
            nonlocal settled
            if not settled:
                settled = True
                account.settle(granted, used)

        def cancelled(cpu: float) -> None:
            spent = StrategyResult(Outcome.CANCELLED, (), 0, cpu, time.monotonic() - started)
            self.record(item, name, Outcome.CANCELLED, spent, "", granted, attempt_key=key)
            item.report.cpu_seconds += cpu
            settle(cpu)

        # a strategy that has gone off for the rest of the run (the llm strategies once
        # their model server stopped answering) skips without opening a session
        reason = strategy.off_reason()
        if reason:
            result = StrategyResult(Outcome.SKIPPED, message=str(reason))
            self.record(item, name, Outcome.SKIPPED, result, str(reason))
            return result
        remote = self.executor is not None and not strategy.needs_ledger
        # model calls (the llm strategy) wait on their own limit, not on a CPU slot
        uses_slot = self.executor is None and strategy.uses_slot
        slot = self.governor.slot() if uses_slot else contextlib.nullcontext(None)
        own = 0.0
        try:
            async with slot:
                heavy = self.heavy if strategy.weight == "heavy" else None
                if heavy is not None:
                    await heavy.acquire()
                try:
                    # the grant is made when the strategy really starts: what the
                    # strategies before it left unused is there to take
                    granted = account.grant(name)
                    if granted <= 0:
                        return StrategyResult(
                            Outcome.TIMEOUT, message=NO_BUDGET_LEFT, started=False
                        )
                    budget = self.attempt_budget(item, granted)
                    key = self.attempt_key(item, name)
                    self.running += 1
                    try:
                        with self.live.slot(goal.name, str(goal.file), name, granted) as live:
                            if not remote:

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
                                if self.request is None:
                                    raise RuntimeError("an executor needs a request maker")
                                request = self.request(item, name, budget)
                                result = await self.executor.attempt(request, cancelled)
                    except (ProverError, PrefixError) as exc:
                        result = StrategyResult(
                            Outcome.ERROR, (), 0, 0.0, time.monotonic() - started, str(exc)
                        )
                    finally:
                        # this process's own CPU meanwhile, shared among the attempts running
                        own = (time.process_time() - own_start) / max(1, self.running)
                        self.running -= 1
                finally:
                    if heavy is not None:
                        heavy.release()
        except BaseException:
            # cancelled (another strategy won, Ctrl-C) or broken: the grant goes back
            # to the goal's account even when no session was open yet to count CPU
            settle(0.0)
            raise
        settle(result.cpu_seconds + own)
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
        self.record(
            item,
            name,
            result.outcome,
            result,
            message,
            budget.cpu_seconds,
            arm,
            attempt_key=key,
        )
        return result

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
