"""What an agent may do with the project: the tools of ``orch mcp``, without the protocol.

Every operation on a hole is recorded as one attempt in the ledger, with the
strategy ``mcp:<client name>``, its CPU and its outcome. Nothing here writes
a file except :meth:`AgentService.submit_proof` (and ``run_strategies``,
through it), and only as ``orch fill`` does: the script gate, the whole-file
recompilation and axiom audit, then an atomic write that first checks the
file still holds the text the proof was found for (or a git branch). A lock
per file serialises submissions, across processes too.
"""

from __future__ import annotations

import contextlib
import functools
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..backends import backend_for, scan_text
from ..errors import (
    AgentError,
    OrchError,
    PrefixError,
    ProverError,
    ScriptRejected,
)
from ..goals import GoalStatus, Outcome, RunStatus
from ..ledger import Ledger
from ..ledger.leases import Leases
from ..project.locks import file_lock
from ..provers.base import TacticStatus
from ..run.attempts import AttemptRunner, FileState, GoalItem
from ..run.lineup import build_lineup
from ..run.pipeline import collect_files
from ..run.reports import Candidate, FileReport, FileStatus, FillOptions, FillReport, GoalReport
from ..run.toolbox import Toolbox
from ..run.writing import verify_and_write
from ..scheduler.bandit import Bandit
from ..scheduler.governor import CpuGovernor
from ..strategies.base import Strategy
from ..workflows.gitops import GitRepo, publish
from .broken import Located, broken_proofs, submit_repair
from .results import (
    BrokenInfo,
    EarlierError,
    GoalInfo,
    HoleInfo,
    Premise,
    ProvedNeighbour,
    RunResult,
    SubmitResult,
    SubmitStatus,
    TicketInfo,
    TryResult,
    TryStatus,
    ticket_info,
)

__all__ = [
    "AgentService",
    "BrokenInfo",
    "GoalInfo",
    "HoleInfo",
    "RunResult",
    "SubmitResult",
    "TicketInfo",
    "TryResult",
]

#: seconds a ticket claimed by an agent stays reserved for it; renewed while the agent
#: keeps calling the tools (it is gone once it made no call for a whole lease)
LEASE_SECONDS = 1800.0


class AgentService:
    """The project's holes, provers, verifier and ledger, as an agent sees them."""

    def __init__(
        self,
        root: Path,
        ledger: Ledger,
        options: FillOptions | None = None,
        *,
        git: GitRepo | None = None,
        strategies: Sequence[Strategy] | None = None,
        lease_seconds: float = LEASE_SECONDS,
    ) -> None:
        self.root = root.resolve()
        self.ledger = ledger
        self.options = options or FillOptions()
        self.git = git
        orch = self.options.orch
        self.governor = CpuGovernor.for_settings(orch)
        self.tools = Toolbox(self.options, self.governor.gate)
        self._strategies = list(strategies) if strategies is not None else None
        self._runner: AttemptRunner | None = None
        self._run_id: int | None = None
        #: the claims of the agents, renewed while each agent is active
        self.leases = Leases(ledger, lease_seconds)
        #: per client, when it last called a tool (monotonic seconds)
        self._seen: dict[str, float] = {}
        #: owns what runs while the service is open (the governor's ticks, the leases)
        self._open: contextlib.AsyncExitStack | None = None

    # -- lifetime ------------------------------------------------------------------

    async def __aenter__(self) -> AgentService:
        async with contextlib.AsyncExitStack() as stack:
            await stack.enter_async_context(self.governor.running())
            await stack.enter_async_context(self.leases)
            self._open = stack.pop_all()
        self._run_id = self.ledger.start_run("mcp", {"root": str(self.root)}, "")
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        opened, self._open = self._open, None
        if opened is not None:
            await opened.aclose()  # the governor stops ticking, the leases are let go
        await self.tools.aclose()
        if self._run_id is not None:
            self.ledger.finish_run(self._run_id, RunStatus.FINISHED, {})
            self._run_id = None

    @property
    def run_id(self) -> int:
        if self._run_id is None:
            raise AgentError("the agent service is not started (use `async with`)")
        return self._run_id

    # -- paths and holes ---------------------------------------------------------------

    def resolve(self, path: str) -> Path:
        """``path`` (relative to the project, or absolute) inside the project; else AgentError."""
        resolved = (self.root / path).resolve()
        if not resolved.is_relative_to(self.root):
            raise AgentError(f"{path} is outside the project {self.root}; refused")
        return resolved

    def _relative(self, path: Path) -> str:
        return str(path.relative_to(self.root))

    def list_holes(self, path: str | None = None, status: str | None = None) -> list[HoleInfo]:
        target = self.resolve(path) if path else self.root
        counts = self.ledger.attempt_counts()
        found: list[HoleInfo] = []
        for file in collect_files([target]):
            text = file.read_text(encoding="utf-8")
            for hole in scan_text(file, text):
                goal = hole.goal
                goal_id = self.ledger.upsert_goal(goal)
                row = self.ledger.goal_row(goal_id)
                state = row.status if row is not None else GoalStatus.OPEN
                if status is not None and state != status:
                    continue
                found.append(
                    HoleInfo(
                        goal_id,
                        self._relative(file),
                        goal.line,
                        goal.name,
                        goal.statement,
                        state,
                        counts.get(goal_id, 0),
                    )
                )
        return found

    def _locate(self, hole_id: int) -> Located:
        row = self.ledger.goal_row(hole_id)
        if row is None:
            raise AgentError(f"no hole has id {hole_id}; list_holes gives the ids")
        path = Path(row.file).resolve()
        if not path.is_relative_to(self.root):
            raise AgentError(f"hole {hole_id} is in {row.file}, outside the project; refused")
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise AgentError(f"cannot read {row.file}: {exc}") from exc
        for hole in scan_text(path, text):
            if hole.goal.name == row.name and hole.goal.fingerprint == row.fingerprint:
                return Located(path, text, hole, hole_id)
        raise AgentError(
            f"hole {hole_id} ({row.name}) is no longer open in {self._relative(path)}: "
            "it was proved, or the file changed (list_holes again)"
        )

    def _sentences(self, located: Located, script: str) -> tuple[str, ...]:
        """The script's sentences through the language's script gate (ScriptRejected if not)."""
        tools = self.tools.for_hole(located.hole)
        return tuple(tools.gate(tools.parse_script(script)))

    def _record(
        self,
        located: Located,
        client: str,
        outcome: Outcome,
        script: Sequence[str] | str,
        *,
        cpu: float = 0.0,
        wall: float = 0.0,
        message: str = "",
        budget: float = 0.0,
        tried: int = 0,
    ) -> None:
        self._touch(client)
        self.ledger.record_attempt(
            run_id=self.run_id,
            goal_id=located.goal_id,
            fingerprint=located.hole.goal.fingerprint,
            strategy=f"mcp:{client}"[:64],
            outcome=outcome,
            tactic=(
                script if isinstance(script, str) else backend_for(located.path).join_script(script)
            ),
            tactics_tried=tried,
            budget_seconds=budget,
            cpu_seconds=cpu,
            wall_seconds=wall,
            message=message,
        )

    # -- reading a goal --------------------------------------------------------------------

    async def goal(self, hole_id: int, client: str) -> GoalInfo:
        located = self._locate(hole_id)
        tools = self.tools.for_hole(located.hole)
        errors = self.ledger.attempt_errors(located.hole.goal.fingerprint)
        started = time.monotonic()
        side = backend_for(located.path).agent()
        async with self.governor.slot(), tools.open_session(located.hole, located.text) as session:
            display, found, near = await side.describe(
                session, located.hole.goal, self.ledger.proved_statements(), errors
            )
            premises = [Premise(n, s) for n, s in found]
            neighbours = [ProvedNeighbour(s, p) for s, p in near]
            cpu = session.cpu_seconds()
        self._record(
            located,
            client,
            Outcome.INSPECTED,
            "",
            cpu=cpu,
            wall=time.monotonic() - started,
            message="goal: read the goal (no proof tried)",
        )
        goal = located.hole.goal
        return GoalInfo(
            hole_id,
            goal.name,
            goal.statement,
            display,
            premises,
            neighbours,
            [EarlierError(*e) for e in errors],
        )

    # -- trying tactics (writes nothing) ------------------------------------------------------

    async def try_tactics(self, hole_id: int, script: str, cpu_s: float, client: str) -> TryResult:
        located = self._locate(hole_id)
        cpu_s = max(1.0, min(cpu_s, self.options.orch.budget_cap))
        started = time.monotonic()
        try:
            sentences = self._sentences(located, script)
        except ScriptRejected as exc:
            self._record(located, client, Outcome.REJECTED, script, message=str(exc))
            return TryResult(TryStatus.REJECTED, error=str(exc))
        tools = self.tools.for_hole(located.hole)
        timeout = max(1.0, min(cpu_s, 10.0))
        result = TryResult(TryStatus.COMPLETE)
        try:
            async with (
                self.governor.slot(),
                tools.open_session(located.hole, located.text) as session,
            ):
                state = session.root
                for sentence in sentences:
                    if session.cpu_seconds() >= cpu_s:
                        result = TryResult(
                            TryStatus.TIMEOUT,
                            error="the CPU budget ran out",
                            failing_sentence=sentence,
                        )
                        break
                    step = await session.run_tactic(sentence, state, timeout=timeout)
                    if not step.ok:
                        kind = (
                            TryStatus.TIMEOUT
                            if step.status is TacticStatus.TIMEOUT
                            else TryStatus.ERROR
                        )
                        result = TryResult(kind, list(result.goals), step.message.strip(), sentence)
                        break
                    state = step.state
                    result = TryResult(
                        TryStatus.COMPLETE
                        if step.status is TacticStatus.COMPLETE
                        else TryStatus.GOALS,
                        list(step.goals),
                    )
                result.cpu_seconds = session.cpu_seconds()
        except (ProverError, PrefixError) as exc:
            self._record(located, client, Outcome.ERROR, sentences, message=str(exc))
            raise AgentError(f"the prover failed on hole {hole_id}: {exc}") from exc
        outcome = {
            TryStatus.COMPLETE: Outcome.CANDIDATE,
            TryStatus.TIMEOUT: Outcome.TIMEOUT,
        }.get(result.status, Outcome.FAILED)
        message = (
            f"{result.failing_sentence} -> {result.error}"
            if result.failing_sentence
            else f"{len(result.goals)} goal(s) remain"
            if result.status is TryStatus.GOALS
            else ""
        )
        self._record(
            located,
            client,
            outcome,
            sentences,
            cpu=result.cpu_seconds,
            wall=time.monotonic() - started,
            message=message,
            budget=cpu_s,
            tried=len(sentences),
        )
        return result

    # -- broken proofs (:mod:`.broken`) ---------------------------------------------------

    async def broken_proofs(self, path: str | None = None) -> list[BrokenInfo]:
        return await broken_proofs(self, path)

    # -- submitting a proof ---------------------------------------------------------------

    async def submit_proof(self, hole_id: int, script: str, client: str) -> SubmitResult:
        row = self.ledger.goal_row(hole_id)
        if row is not None and row.status == GoalStatus.BROKEN:
            return await submit_repair(self, hole_id, script, client)
        located = self._locate(hole_id)
        try:
            sentences = self._sentences(located, script)
        except ScriptRejected as exc:
            self._record(located, client, Outcome.REJECTED, script, message=f"gate: {exc}")
            return SubmitResult(SubmitStatus.REJECTED, f"gate: {exc}")
        return await self._verify_and_write(located, sentences, f"mcp:{client}", client)

    async def _verify_and_write(
        self,
        located: Located,
        sentences: tuple[str, ...],
        strategy: str,
        client: str,
        *,
        cpu: float = 0.0,
    ) -> SubmitResult:
        """The one verify-and-write step (:func:`~..run.writing.verify_and_write`), under
        the file's lock, on what the file holds now; or a git branch with ``--git``."""
        started = time.monotonic()
        async with file_lock(located.path):
            # the file may have changed while we waited: work on what is on disk now
            try:
                located = self._locate(located.goal_id)
            except AgentError as exc:
                self._record(located, client, Outcome.REJECTED, sentences, message=str(exc))
                return SubmitResult(SubmitStatus.REJECTED, str(exc), script=list(sentences))
            tools = self.tools.for_hole(located.hole)
            goal_report = GoalReport(
                located.hole.goal, Outcome.CANDIDATE, strategy, sentences, hole=located.hole
            )
            file_report = FileReport(located.path, FileStatus.PENDING)
            candidate = Candidate.of(located.hole, goal_report, located.goal_id)
            try:
                async with self.governor.slot():
                    cpu_before = tools.verifier.cpu_seconds
                    done = await verify_and_write(
                        located.path,
                        located.text,
                        [candidate],
                        tools,
                        self.ledger,
                        self.run_id,
                        "",
                        file_report,
                        write=self.git is None,
                        strict_holes=self.options.orch.strict_holes,
                    )
                    cpu += tools.verifier.cpu_seconds - cpu_before
                branch = (
                    self._branch(located, sentences, strategy)
                    if done.accepted and (self.git is not None)
                    else ""
                )
            except OrchError as exc:
                self._record(located, client, Outcome.REJECTED, sentences, message=str(exc))
                return SubmitResult(SubmitStatus.REJECTED, str(exc), script=list(sentences))
            wall = time.monotonic() - started
            if not done.accepted:
                # verify_and_write recorded the rejection with the verifier's reason
                return SubmitResult(
                    SubmitStatus.REJECTED, goal_report.message, script=list(sentences)
                )
            if done.error is not None:
                # verified and in the ledger, but the file changed (or the disk failed):
                # not written; the next run writes it
                self._record(located, client, Outcome.REJECTED, sentences, message=str(done.error))
                return SubmitResult(SubmitStatus.REJECTED, str(done.error), script=list(sentences))
            written = self._relative(located.path) if done.written else ""
            self._record(
                located,
                client,
                Outcome.PROVED,
                sentences,
                cpu=cpu,
                wall=wall,
                message=f"written to {written}" if written else f"branch {branch}",
            )
            return SubmitResult(SubmitStatus.VERIFIED, "", written, branch, list(sentences))

    def _branch(self, located: Located, sentences: tuple[str, ...], strategy: str) -> str:
        if self.git is None:  # pragma: no cover - the caller checked
            raise AgentError("no git repository")
        goal_report = GoalReport(
            located.hole.goal, Outcome.PROVED, strategy, sentences, hole=located.hole
        )
        report = FillReport(run_id=self.run_id)
        report.files.append(
            FileReport(located.path, FileStatus.DONE, [goal_report], original_text=located.text)
        )
        branches, notes = publish(self.git, report)
        if not branches:
            raise AgentError("; ".join(notes) or "no branch was made")
        return branches[0].branch

    # -- the portfolio on one hole -----------------------------------------------------------

    def strategies(self) -> list[Strategy]:
        """The lineup ``orch fill`` runs with the same settings (``--allow-import`` included)."""
        if self._strategies is None:
            self._strategies = build_lineup(self.options.orch, self.ledger, root=self.root)
        return self._strategies

    def runner(self) -> AttemptRunner:
        """The attempt engine of this service, made on first use (its bandit is seeded)."""
        if self._runner is None:
            orch = self.options.orch
            bandit = Bandit(orch.bandit, random.Random(orch.seed), self.ledger.load_bandit())
            self._runner = AttemptRunner(
                self.ledger,
                self.strategies(),
                self.governor,
                bandit,
                self.options.budget,
                run_id=lambda: self.run_id,
                portfolio_width=orch.portfolio,
                heavy_width=AttemptRunner.heavy_width(orch.max_heavy, orch.cpu_target),
            )
        return self._runner

    async def run_strategies(self, hole_id: int, cpu_s: float, client: str) -> RunResult:
        """``orch fill``'s pass over one hole, through the same engine, then verify and write."""
        located = self._locate(hole_id)
        cpu_s = max(1.0, min(cpu_s, self.options.orch.budget_cap))
        tools = self.tools.for_hole(located.hole)
        runner = self.runner()
        state = FileState(
            located.path, located.text, tools, FileReport(located.path, FileStatus.PENDING), 1
        )
        report = GoalReport(located.hole.goal, Outcome.FAILED, hole=located.hole)
        item = GoalItem(located.hole, state, located.goal_id, report, cpu_s)
        outcome = await runner.goal_pass(item)
        spent = report.cpu_seconds
        outcomes = {name: r.outcome.value for name, r in outcome.results.items()}
        if outcome.winner is None:
            return RunResult(
                SubmitStatus.FAILED,
                outcomes=outcomes,
                cpu_seconds=spent,
                reason="no strategy found a proof",
            )
        found = outcome.results[outcome.winner]
        try:
            sentences = tuple(tools.gate(found.sentences))
        except ScriptRejected as exc:
            runner.record(item, outcome.winner, Outcome.REJECTED, found, str(exc))
            return RunResult(
                SubmitStatus.REJECTED, outcome.winner, list(found.sentences), str(exc), outcomes
            )
        submitted = await self._verify_and_write(
            located, sentences, outcome.winner, client, cpu=spent
        )
        return RunResult(
            submitted.status,
            outcome.winner,
            list(sentences),
            submitted.reason,
            outcomes,
            spent,
        )

    # -- the ledger and the market -------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        return self.ledger.stats()

    def tickets(self) -> list[TicketInfo]:
        alive = [t for t in self.ledger.tickets() if t.state in ("open", "claimed")]
        return [ticket_info(t) for t in alive]

    def _touch(self, client: str) -> None:
        self._seen[client] = time.monotonic()

    def _active(self, client: str) -> bool:
        """Whether ``client`` called a tool within the last lease (its claims are renewed)."""
        seen = self._seen.get(client)
        return seen is not None and time.monotonic() - seen < self.leases.lease_seconds

    def claim_ticket(self, ticket_id: int, client: str) -> TicketInfo:
        """Claim a ticket for ``client``: its lease is renewed while the client keeps
        calling tools, and runs out one lease after its last call."""
        self._touch(client)
        self.ledger.expire_leases()
        ticket = self.leases.claim(
            f"mcp:{client}", ticket_id, alive=functools.partial(self._active, client)
        )
        if ticket is None:
            raise AgentError(f"ticket {ticket_id} is not open (claimed by another, or closed)")
        return ticket_info(ticket)

    async def complete_ticket(self, ticket_id: int, script: str, client: str) -> SubmitResult:
        """Check a helper lemma's proof in the parent goal's file, then complete the ticket."""
        self._touch(client)
        ticket = self.ledger.ticket(ticket_id)
        worker = f"mcp:{client}"
        if ticket is None or ticket.state != "claimed" or ticket.claimed_by != worker:
            raise AgentError(f"ticket {ticket_id} is not claimed by {worker}: claim_ticket first")
        if ticket.parent_goal_id is None:
            raise AgentError(f"ticket {ticket_id} has no parent goal to check its proof in")
        located = self._locate(ticket.parent_goal_id)
        try:
            sentences = self._sentences(located, script)
        except ScriptRejected as exc:
            self._record(located, client, Outcome.REJECTED, script, message=f"gate: {exc}")
            return SubmitResult(SubmitStatus.REJECTED, f"gate: {exc}")
        hole = located.hole
        tools = self.tools.for_hole(hole)
        side = backend_for(located.path).agent()
        started = time.monotonic()
        async with self.governor.slot():
            ok, reason, cpu = await side.check_helper(
                tools,
                hole,
                located.text,
                ticket.name or f"helper_{ticket_id}",
                ticket.statement,
                sentences,
            )
        if not ok:
            self._record(
                located,
                client,
                Outcome.REJECTED,
                sentences,
                cpu=cpu,
                wall=time.monotonic() - started,
                message=f"ticket {ticket_id}: {reason}",
            )
            return SubmitResult(SubmitStatus.REJECTED, reason, script=list(sentences))
        if not self.leases.complete(ticket_id, worker, sentences):
            raise AgentError(f"ticket {ticket_id} was taken back before it was completed")
        self._record(
            located,
            client,
            Outcome.CANDIDATE,
            sentences,
            cpu=cpu,
            wall=time.monotonic() - started,
            message=f"ticket {ticket_id} completed",
        )
        return SubmitResult(
            SubmitStatus.VERIFIED, f"ticket {ticket_id} completed", script=list(sentences)
        )
