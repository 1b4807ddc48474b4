"""Working on goals: the queue, the racing strategies, the ledger records, the file checks."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import difflib
import random
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .checking import replay_script, verify_candidates
from .coqscript import check_script
from .errors import FileChangedError, FileWriteError, ProverError, ScriptRejected
from .executors import AttemptRequest, RayExecutor, run_attempt
from .goals import Budget, Outcome
from .leanscript import check_lean_script
from .ledger import Ledger
from .live import LiveBoard
from .market import MarketStrategy
from .project import coq_holes, lean_holes
from .project.coqproject import CoqProject
from .project.holes import Hole
from .project.lean_holes import LeanHole
from .project.patch import Patch, apply_patches, write_atomic
from .provers.coq import CoqProver, PrefixError
from .provers.coq_verify import CoqVerifier
from .provers.lean import LeanProject, LeanProver, LeanSettings, LeanVerifier
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
from .scheduler.bandit import ArmStats, Bandit, goal_class
from .scheduler.governor import CpuGovernor
from .scheduler.portfolio import race
from .scheduler.queue import GoalQueue, Mentions, priority
from .strategies.base import Strategy, StrategyResult
from .strategies.hammer import (
    FOUND_WITH_TACTICS,
    HammerStrategy,
    SautoStrategy,
    hammer_environment,
)
from .strategies.knn import FileModels
from .strategies.lean_tactics import LeanQuickStrategy
from .strategies.micro import (
    CachedStrategy,
    InductionStrategy,
    MicroStrategy,
    nearest_first,
)
from .strategies.search import SearchStrategy

__all__ = [
    "MAX_REVISITS_PER_RUN",
    "FileState",
    "GoalItem",
    "GoalRun",
    "LeanTools",
    "ProjectTools",
    "Tools",
    "default_strategies",
    "strong_strategies",
]

#: within one run, a goal whose strategies timed out is revisited once with doubled
#: budgets; after that it is parked, and later runs (or `orch bg` cycles) double
#: again from the ledger's record, up to `budget_cap`
MAX_REVISITS_PER_RUN = 1


def default_strategies(
    ledger: Ledger, profile: int, allowed_imports: frozenset[str] = frozenset()
) -> list[Strategy]:
    """The strategies of a profile, in the order preferred before anything is learned.

    Profile 0 is the quick tactics. Profile 1 (the default) adds best-first
    search (with the k-NN model mined from the file's earlier proofs and
    retrieved premises), and, in files that load CoqHammer, the ``sauto``
    family and ``hammer`` (in a side session where the file does not load
    CoqHammer). Profile 2 adds the helper-lemma market
    (:mod:`proof_orchestrator.market`). ``allowed_imports`` holding
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
            ledger.proved_statements(), "hammer-tactics" in allowed_imports
        )
    if profile >= 2:
        strategies.append(MarketStrategy(ledger))
    return strategies


def strong_strategies(
    proved: Sequence[tuple[str, Sequence[str]]] = (), allow_tactics_import: bool = False
) -> list[Strategy]:
    """Search, ``sauto`` and ``hammer``.

    ``proved`` (statement, script) pairs seed the search's k-NN model with the
    proofs found before (the ledger's), besides the file's own earlier proofs.
    """
    return [
        SearchStrategy(FileModels(proved)),
        SautoStrategy(allow_tactics_import),
        HammerStrategy(allow_tactics_import),
    ]


def language_of_strategy(strategy: Strategy) -> str:
    """The language whose goals a strategy works on (Coq unless it says otherwise)."""
    return str(getattr(strategy, "language", "coq"))


def _mentions(text: str, name: str) -> int:
    """How many times ``name`` appears in ``text`` as a whole identifier."""
    return Mentions(text).after(name)


class ProjectTools:
    """One prover and one verifier per Coq project (per set of flags)."""

    language = "coq"

    def __init__(self, project: CoqProject, options: FillOptions, governor: CpuGovernor) -> None:
        cwd = str(project.root)
        sessions = options.orch.max_light + options.orch.max_heavy
        coq = dataclasses.replace(
            options.coq,
            max_idle=max(options.coq.max_idle, sessions),
            memory_mb=options.coq.memory_mb or options.orch.prover_memory_mb,
        )
        hammer_environment()  # the provers started here find CoqHammer's ATP helpers
        self.prover = CoqProver(project.flags, cwd=cwd, settings=coq, throttle=governor.gate)
        self.verifier = CoqVerifier(project.flags, cwd=cwd, coqc=coq.coqc, coqtop=coq.coqtop)

    def open_session(self, hole: Hole, text: str) -> AbstractAsyncContextManager[Any]:
        if not isinstance(hole, coq_holes.CoqHole):
            raise TypeError("a Coq project got a hole of another language")
        return self.prover.session(hole.goal, text, hole.prefix_end, hole.statement_start)

    @staticmethod
    def gate(sentences: Sequence[str]) -> tuple[str, ...]:
        return check_script(sentences)

    @staticmethod
    def declared_axioms(text: str) -> set[str]:
        return set(coq_holes.declared_axioms(text))

    async def aclose(self) -> None:
        await self.prover.aclose()
        await self.verifier.aclose()


class LeanTools:
    """One REPL pool and one verifier per Lean project."""

    language = "lean"

    def __init__(
        self,
        project: LeanProject,
        options: FillOptions,
        governor: CpuGovernor,
        settings: LeanSettings | None = None,
    ) -> None:
        settings = settings or LeanSettings(
            max_idle=options.orch.max_light + options.orch.max_heavy
        )
        self.prover = LeanProver(project, settings, throttle=governor.gate)
        self.verifier = LeanVerifier(project, settings)

    def open_session(self, hole: Hole, text: str) -> AbstractAsyncContextManager[Any]:
        if not isinstance(hole, LeanHole):
            raise TypeError("a Lean project got a hole of another language")
        return self.prover.session(hole, text)

    @staticmethod
    def gate(sentences: Sequence[str]) -> tuple[str, ...]:
        return check_lean_script(sentences)

    @staticmethod
    def declared_axioms(text: str) -> set[str]:
        return lean_holes.declared_axioms(text)

    async def aclose(self) -> None:
        await self.prover.aclose()
        await self.verifier.aclose()


Tools = ProjectTools | LeanTools


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
    #: CPU budget of each strategy still in play
    budgets: dict[str, float]
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
        self.heavy = asyncio.Semaphore(options.orch.max_heavy)
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

    @property
    def run_id(self) -> int:
        if self.report.run_id is None:
            raise ValueError("the run has not been started in the ledger")
        return self.report.run_id

    # -- planning --------------------------------------------------------------

    def budgets_for(self, failed: dict[str, float], language: str = "coq") -> dict[str, float]:
        """Each strategy's budget: the base, doubled past every budget it already failed at.

        Only strategies for ``language`` get one.
        """
        base = self.options.budget.cpu_seconds
        budgets: dict[str, float] = {}
        for name, strategy in self.strategies.items():
            if language_of_strategy(strategy) != language:
                continue
            budget = base
            while budget <= failed.get(name, 0.0):
                budget *= 2
            if budget <= self.options.orch.budget_cap:
                budgets[name] = budget
        return budgets

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
        names = [n for n in self.strategies if n in item.budgets]
        if not names:
            item.report.outcome = (
                Outcome.FAILED if item.report.outcome is Outcome.CANDIDATE else item.report.outcome
            )
            await self.goal_done(item, None)
            return
        klass = goal_class(goal.statement)
        ranked = self.bandit.rank(klass, names)

        async def attempt(name: str) -> StrategyResult:
            return await self.attempt(item, name, klass)

        outcome = await race(ranked, self.options.orch.portfolio, attempt)
        errored = [n for n, r in outcome.results.items() if r.outcome is Outcome.ERROR]
        if outcome.winner is None and errored and not item.error_retried:
            # a prover error says nothing about the goal: those strategies go once more,
            # each in a fresh session (a broken prover never goes back to the pool)
            item.error_retried = True
            retry = await race(errored, self.options.orch.portfolio, attempt)
            outcome.results.update(retry.results)
            outcome.winner = retry.winner
            outcome.cancelled += retry.cancelled
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
        # no candidate: strategies that ran out of time get a doubled budget later
        timed_out = {
            n: item.budgets[n] * 2
            for n, r in outcome.results.items()
            if r.outcome is Outcome.TIMEOUT
        }
        doubled = {n: b for n, b in timed_out.items() if b <= self.options.orch.budget_cap}
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
                f"{name}: {result.message}" for name, result in outcome.results.items()
            )[:2000]
            self.ledger.set_goal_status(item.goal_id, Outcome.ERROR.value)
            await self.goal_done(item, None)
            return
        item.report.outcome = Outcome.TIMEOUT if Outcome.TIMEOUT in worst else Outcome.FAILED
        if doubled and item.revisits < MAX_REVISITS_PER_RUN:
            item.budgets = doubled
            item.revisits += 1
            self.enqueue(item)  # parked: revisited after fresher goals
            return
        self.ledger.set_goal_status(item.goal_id, "failed")
        await self.goal_done(item, None)

    async def attempt(self, item: GoalItem, name: str, klass: str) -> StrategyResult:
        strategy = self.strategies[name]
        base = self.options.budget
        cpu = item.budgets[name]
        budget = Budget(
            cpu_seconds=cpu,
            tactic_seconds=base.tactic_seconds * cpu / base.cpu_seconds,
            grace_seconds=base.grace_seconds,
        )
        goal = item.hole.goal
        started = time.monotonic()
        result: StrategyResult
        key = self.attempt_key(item, name)

        def cancelled(cpu: float) -> None:
            spent = StrategyResult(Outcome.CANCELLED, (), 0, cpu, time.monotonic() - started)
            self.record(
                item, name, Outcome.CANCELLED, spent, "", budget.cpu_seconds, attempt_key=key
            )
            item.report.cpu_seconds += cpu

        # model calls (the llm strategy) wait on their own limit, not on a CPU slot
        uses_slot = self.executor is None and getattr(strategy, "uses_slot", True)
        slot = self.governor.slot() if uses_slot else contextlib.nullcontext(None)
        async with slot:
            heavy = self.heavy if getattr(strategy, "weight", "light") == "heavy" else None
            if heavy is not None:
                await heavy.acquire()
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
                if heavy is not None:
                    heavy.release()
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
    ) -> None:
        self.ledger.record_attempt(
            run_id=self.run_id,
            goal_id=item.goal_id,
            fingerprint=item.hole.goal.fingerprint,
            strategy=strategy,
            outcome=outcome,
            tactic=" ".join(result.sentences),
            tactics_tried=result.tactics_tried,
            budget_seconds=budget,
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

    async def replay(self, item: GoalItem) -> GoalReport | None:
        """Re-check a proof the ledger already has; no search."""
        fingerprint = item.hole.goal.fingerprint
        for source, known in (
            (LEDGER_REPLAY, self.ledger.verified_proof(fingerprint)),
            (CANDIDATE_REPLAY, self.ledger.candidate_script(fingerprint)),
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
