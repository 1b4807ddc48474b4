"""Read-only queries for the dashboard."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, select

from ..goals import GoalStatus, Outcome
from ._core import iso
from .models import Attempt, GoalRow, Proof, Run
from .store import Ledger

__all__ = ["LedgerReader"]

#: goal statuses of broken proofs (``orch repair``), which are not holes
_NOT_HOLES = (GoalStatus.BROKEN, GoalStatus.REPAIRED)


class LedgerReader:
    """Read-only queries for the dashboard. Opens no transaction that writes."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def tickets(self) -> list[dict[str, Any]]:
        """Every helper-lemma ticket, newest first."""
        return [
            {
                "id": t.id,
                "state": t.state,
                "name": t.name,
                "statement": t.statement,
                "parent_goal_id": t.parent_goal_id,
                "priority": t.priority,
                "claimed_by": t.claimed_by,
                "lease_until": t.lease_until.isoformat() if t.lease_until else None,
                "proof": " ".join(t.proof) if t.proof else None,
                "created_at": t.created_at.isoformat(),
            }
            for t in reversed(self.ledger.tickets())
        ]

    @staticmethod
    def _winner() -> Any:
        """The strategy of a goal's proof (a subquery correlated to the goal's row)."""
        return (
            select(func.max(Proof.strategy))
            .where(Proof.goal_id == GoalRow.id)
            .correlate(GoalRow)
            .scalar_subquery()
        )

    @classmethod
    def _goal_filters(cls, status: str | None, file: str | None, strategy: str | None) -> list[Any]:
        filters: list[Any] = []
        if status:
            filters.append(GoalRow.status == status)
        if file:
            filters.append(GoalRow.file.contains(file))
        if strategy:
            filters.append(cls._winner() == strategy)
        return filters

    def goals(
        self,
        *,
        status: str | None = None,
        file: str | None = None,
        strategy: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[dict[str, Any]]:
        """Goals in (file, line) order with their attempt count and proving strategy.

        ``limit`` and ``offset`` page the list. The attempt count and the
        strategy are looked up for the returned goals only (correlated
        subqueries on the indexed ``goal_id`` columns), so a page does not
        aggregate the whole attempts table.
        """
        attempts = (  # a skipped strategy (it cannot run there) is not an attempt
            select(func.count())
            .select_from(Attempt)
            .where(Attempt.goal_id == GoalRow.id, Attempt.outcome != Outcome.SKIPPED.value)
            .correlate(GoalRow)
            .scalar_subquery()
        )
        query = (
            select(
                GoalRow.id,
                GoalRow.file,
                GoalRow.name,
                GoalRow.line,
                GoalRow.statement,
                GoalRow.status,
                GoalRow.fingerprint,
                attempts.label("n"),
                self._winner().label("strategy"),
            )
            .where(*self._goal_filters(status, file, strategy))
            .order_by(GoalRow.file, GoalRow.line, GoalRow.id)
            .offset(offset)
        )
        if limit is not None:
            query = query.limit(limit)
        with self.ledger.engine.connect() as connection:
            return [
                {
                    "id": row.id,
                    "file": row.file,
                    "name": row.name,
                    "line": row.line,
                    "statement": row.statement,
                    "status": row.status,
                    "attempts": int(row.n or 0),
                    "strategy": row.strategy or "",
                    "fingerprint": row.fingerprint,
                }
                for row in connection.execute(query).all()
            ]

    def count_goals(
        self, *, status: str | None = None, file: str | None = None, strategy: str | None = None
    ) -> int:
        """How many goals :meth:`goals` lists with the same filters and no page."""
        query = (
            select(func.count())
            .select_from(GoalRow)
            .where(*self._goal_filters(status, file, strategy))
        )
        with self.ledger.engine.connect() as connection:
            return int(connection.execute(query).scalar_one())

    def open_statements(self) -> list[str]:
        """The statements of the holes not proved yet (the overview's difficulty chart).

        Only the statement column of those rows: no join, no attempt counts.
        """
        with self.ledger.engine.connect() as connection:
            return list(
                connection.execute(
                    select(GoalRow.statement).where(
                        GoalRow.status.not_in((GoalStatus.PROVED, *_NOT_HOLES))
                    )
                ).scalars()
            )

    def goal(self, goal_id: int) -> dict[str, Any] | None:
        with self.ledger.engine.connect() as connection:
            row = connection.execute(select(GoalRow).where(GoalRow.id == goal_id)).first()
            if row is None:
                return None
            attempts = connection.execute(
                select(Attempt).where(Attempt.goal_id == goal_id).order_by(Attempt.id)
            ).all()
            proof = connection.execute(
                select(Proof).where(Proof.goal_id == goal_id).order_by(Proof.id.desc()).limit(1)
            ).first()
            goal = row
            return {
                "id": goal.id,
                "file": goal.file,
                "name": goal.name,
                "line": goal.line,
                "statement": goal.statement,
                "status": goal.status,
                "fingerprint": goal.fingerprint,
                "attempts": [
                    {
                        "strategy": a.strategy,
                        "tactic": a.tactic,
                        "outcome": a.outcome,
                        "cpu_seconds": a.cpu_seconds,
                        "wall_seconds": a.wall_seconds,
                        "budget_seconds": a.budget_seconds,
                        "message": a.message,
                        "created_at": iso(a.created_at),
                    }
                    for a in attempts
                ],
                "proof": None
                if proof is None
                else {
                    "script": " ".join(proof.sentences),
                    "strategy": proof.strategy,
                    "diff": proof.diff,
                    "written": proof.written,
                    "verified_at": iso(proof.verified_at),
                    # the holes it rested on when verified, and those still open
                    "uses_holes": [entry["label"] for entry in proof.uses_holes or []],
                    "open_holes": [entry["label"] for entry in proof.open_holes or []],
                },
            }

    def repairs(self, limit: int = 500) -> list[dict[str, Any]]:
        """Goals that ``orch repair`` found broken (status ``broken``, or ``repaired`` since),
        in (file, line) order, at most ``limit``: each with its cause (the message of its
        newest ``detect`` attempt: the kind of break, the failing sentence, the prover's
        error), its old proof (that attempt's script) and, once repaired, the new one."""
        with self.ledger.engine.connect() as connection:
            goals = connection.execute(
                select(GoalRow.id, GoalRow.file, GoalRow.name, GoalRow.line, GoalRow.status)
                .where(GoalRow.status.in_(_NOT_HOLES))
                .order_by(GoalRow.file, GoalRow.line, GoalRow.id)
                .limit(limit)
            ).all()
            ids = [g.id for g in goals]
            detected: dict[int, tuple[str, str]] = {}
            for goal_id, tactic, message in connection.execute(
                select(Attempt.goal_id, Attempt.tactic, Attempt.message)
                .where(Attempt.goal_id.in_(ids), Attempt.strategy == "detect")
                .order_by(Attempt.id)
            ).all():
                detected[goal_id] = (tactic, message)
            proofs: dict[int, tuple[list[str], str]] = {}
            for goal_id, sentences, strategy in connection.execute(
                select(Proof.goal_id, Proof.sentences, Proof.strategy)
                .where(Proof.goal_id.in_(ids))
                .order_by(Proof.id)
            ).all():
                proofs[goal_id] = (sentences, strategy)
        rows = []
        for g in goals:
            old, cause = detected.get(g.id, ("", ""))
            new, strategy = (
                proofs.get(g.id, ([], "")) if g.status == GoalStatus.REPAIRED else ([], "")
            )
            rows.append(
                {
                    "id": g.id,
                    "file": g.file,
                    "name": g.name,
                    "line": g.line,
                    "status": g.status,
                    "cause": cause,
                    "old": old,
                    "new": " ".join(new),
                    "strategy": strategy,
                }
            )
        return rows

    def live(self) -> list[dict[str, Any]]:
        """What running commands are doing now (see :meth:`Ledger.live_runs`)."""
        return self.ledger.live_runs()

    def runs(self) -> list[dict[str, Any]]:
        with self.ledger.engine.connect() as connection:
            rows = connection.execute(select(Run).order_by(Run.id.desc()).limit(50)).all()
            return [
                {
                    "id": r.id,
                    "command": r.command,
                    "status": r.status,
                    "started_at": iso(r.started_at),
                    "finished_at": iso(r.finished_at),
                    "prover_version": r.prover_version,
                    "summary": r.summary or {},
                }
                for r in rows
            ]

    def proofs_over_time(self, max_points: int = 500) -> list[tuple[datetime, int]]:
        """(time, cumulative number of verified proofs), at most ``max_points`` of them.

        With more proofs than that, evenly spaced points are kept (the first and
        the last among them), each with its exact cumulative count: a chart of
        20,000 proofs stays a few hundred points.
        """
        with self.ledger.engine.connect() as connection:
            times = [
                t
                for (t,) in connection.execute(
                    select(Proof.verified_at).order_by(Proof.verified_at)
                )
            ]
        points = [(t, i + 1) for i, t in enumerate(times)]
        if len(points) <= max_points:
            return points
        last, keep = len(points) - 1, max(2, max_points)
        return [points[round(j * last / (keep - 1))] for j in range(keep)]

    def files(self) -> list[dict[str, Any]]:
        with self.ledger.engine.connect() as connection:
            rows = connection.execute(
                select(GoalRow.file, GoalRow.status, func.count())
                .where(GoalRow.status.not_in(_NOT_HOLES))
                .group_by(GoalRow.file, GoalRow.status)
            ).all()
        per: dict[str, dict[str, int]] = {}
        for file, status, n in rows:
            per.setdefault(file, {"total": 0, "proved": 0, "open": 0})
            per[file]["total"] += n
            per[file]["proved" if status == GoalStatus.PROVED else "open"] += n
        return [{"file": f, **counts} for f, counts in sorted(per.items())]
