"""Goals and the attempts made on them."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import func, insert, select, update

from ..errors import LedgerError
from ..goals import ArmStats, Goal, GoalStatus, Outcome
from ._bandit import write_arm
from ._core import LedgerCore, insert_ignore, retrying, table_of
from .models import Attempt, GoalRow, utcnow

__all__ = ["GoalRecords"]


class GoalRecords(LedgerCore):
    """Goals by file, name and fingerprint; every attempt on them, and what it left behind."""

    @retrying
    def upsert_goal(self, goal: Goal) -> int:
        where = (
            GoalRow.file == str(goal.file),
            GoalRow.name == goal.name,
            GoalRow.fingerprint == goal.fingerprint,
        )
        now = utcnow()
        with self._transaction() as connection:
            # insert unless present, then read the id: safe when several writers race
            connection.execute(
                insert_ignore(connection, GoalRow, ("file", "name", "fingerprint")).values(
                    fingerprint=goal.fingerprint,
                    file=str(goal.file),
                    name=goal.name,
                    line=goal.line,
                    statement=goal.statement,
                    language=goal.language,
                    status=GoalStatus.OPEN,
                    first_seen=now,
                    updated_at=now,
                )
            )
            found = connection.execute(select(GoalRow.id).where(*where)).scalar()
            if found is None:
                raise LedgerError(f"the ledger at {self.url} returned no id for a goal")
            connection.execute(
                update(GoalRow).where(GoalRow.id == found).values(line=goal.line, updated_at=now)
            )
            return int(found)

    @retrying
    def set_goal_status(self, goal_id: int, status: GoalStatus) -> None:
        with self._session() as s:
            row = s.get(GoalRow, goal_id)
            if row is not None:
                row.status = status
                row.updated_at = utcnow()

    @retrying
    def goal_row(self, goal_id: int) -> GoalRow | None:
        with self._session() as s:
            return s.get(GoalRow, goal_id)

    # -- attempts --------------------------------------------------------------

    @retrying
    def record_attempt(
        self,
        *,
        run_id: int,
        goal_id: int,
        fingerprint: str,
        strategy: str,
        outcome: Outcome,
        tactic: str = "",
        tactics_tried: int = 0,
        budget_seconds: float = 0.0,
        cpu_seconds: float = 0.0,
        wall_seconds: float = 0.0,
        prover_version: str = "",
        message: str = "",
        arm: tuple[str, ArmStats] | None = None,
        goal_budget_seconds: float = 0.0,
        attempt_key: str | None = None,
        tokens_in: int = 0,
        tokens_out: int = 0,
        cost_usd: float = 0.0,
        llm_seconds: float = 0.0,
        llm_checks: Mapping[str, Any] | None = None,
    ) -> bool:
        """Record one attempt (and, with ``arm=(goal_class, stats)``, the bandit arm) at once.

        With an ``attempt_key``, writing the same attempt again is a no-op: the
        method returns False and leaves the bandit arm alone.
        """
        values = {
            "run_id": run_id,
            "goal_id": goal_id,
            "fingerprint": fingerprint,
            "strategy": strategy,
            "outcome": outcome.value,
            "tactic": tactic,
            "tactics_tried": tactics_tried,
            "budget_seconds": budget_seconds,
            "goal_budget_seconds": goal_budget_seconds,
            "cpu_seconds": cpu_seconds,
            "wall_seconds": wall_seconds,
            "prover_version": prover_version,
            "message": message[:4000],
            "created_at": utcnow(),
            "attempt_key": attempt_key,
            "tokens_in": tokens_in,
            "tokens_out": tokens_out,
            "cost_usd": cost_usd,
            "llm_seconds": llm_seconds,
            "llm_checks": dict(llm_checks or {}),
        }
        with self._transaction() as connection:
            statement = (
                insert_ignore(connection, Attempt, ("attempt_key",))
                if attempt_key is not None
                else insert(table_of(Attempt))
            ).returning(table_of(Attempt).c.id)
            # a skipped insert returns no row (rowcount is not reliable with RETURNING)
            written = connection.execute(statement, values).first() is not None
            if written and arm is not None:
                write_arm(connection, arm[0], strategy, arm[1])
            return written

    @retrying
    def history(self, fingerprint: str) -> tuple[int, datetime | None, float]:
        """(failed attempts, first attempt time, largest goal budget a failed attempt had).

        The goal budget is the CPU seconds of the whole pass over the goal the
        attempt belonged to (attempts from before per-goal budgets count with 0).
        """
        failed = (Outcome.FAILED.value, Outcome.TIMEOUT.value)
        with self._transaction() as connection:
            rows = connection.execute(
                select(Attempt.outcome, Attempt.goal_budget_seconds, Attempt.created_at).where(
                    Attempt.fingerprint == fingerprint
                )
            ).all()
        failures = 0
        first: datetime | None = None
        largest = 0.0
        for outcome, budget, created in rows:
            if first is None or created < first:
                first = created
            if outcome in failed:
                failures += 1
                largest = max(largest, float(budget or 0.0))
        return failures, first, largest

    @retrying
    def candidate_script(self, fingerprint: str) -> str | None:
        """The newest script a strategy found for this fingerprint (not yet verified).

        It comes back as recorded, one string; the prover's tools split it
        (the ledger knows no prover's syntax).
        """
        with self._session() as s:
            attempt = s.scalar(
                select(Attempt)
                .where(
                    Attempt.fingerprint == fingerprint,
                    Attempt.outcome == Outcome.CANDIDATE.value,
                    Attempt.tactic != "",
                )
                .order_by(Attempt.id.desc())
                .limit(1)
            )
            if attempt is None:
                return None
            rejected = s.scalar(
                select(func.count())
                .select_from(Attempt)
                .where(
                    Attempt.fingerprint == fingerprint,
                    Attempt.outcome == Outcome.REJECTED.value,
                    Attempt.tactic == attempt.tactic,
                )
            )
            return None if rejected else attempt.tactic

    @retrying
    def attempt_counts(self) -> dict[int, int]:
        """How many attempts each goal (by id) has had (skipped strategies are not attempts)."""
        with self._session() as s:
            rows = s.execute(
                select(Attempt.goal_id, func.count())
                .where(Attempt.outcome != Outcome.SKIPPED.value)
                .group_by(Attempt.goal_id)
            ).all()
            return {int(goal_id): int(n) for goal_id, n in rows}

    @retrying
    def attempt_errors(self, fingerprint: str, limit: int = 5) -> list[tuple[str, str, str]]:
        """(strategy, script, message) of the newest failed attempts with a message."""
        failed = (Outcome.FAILED.value, Outcome.REJECTED.value, Outcome.ERROR.value)
        with self._session() as s:
            rows = s.execute(
                select(Attempt.strategy, Attempt.tactic, Attempt.message)
                .where(
                    Attempt.fingerprint == fingerprint,
                    Attempt.outcome.in_(failed),
                    Attempt.message != "",
                )
                .order_by(Attempt.id.desc())
                .limit(limit)
            ).all()
            return [(str(a), str(b), str(c)) for a, b, c in rows]
