"""Summaries over the whole ledger (``orch stats``, the dashboard's overview, reports)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from ._core import LedgerCore, iso, retrying
from .models import Attempt, GoalRow, Proof, Run

__all__ = ["Summaries"]


class Summaries(LedgerCore):
    """Counts and sums: goals by status, attempts by outcome, strategies, model spend."""

    @retrying
    def stats(self) -> dict[str, Any]:
        with self._session() as s:
            goals_by_status = dict(
                s.execute(select(GoalRow.status, func.count()).group_by(GoalRow.status)).all()
            )
            attempts_by_outcome = dict(
                s.execute(select(Attempt.outcome, func.count()).group_by(Attempt.outcome)).all()
            )
            # a strategy's proofs are the verified ones (attempts only reach "candidate")
            proofs_by_strategy = dict(
                s.execute(select(Proof.strategy, func.count()).group_by(Proof.strategy)).all()
            )
            per_strategy = [
                {
                    "strategy": strategy,
                    "attempts": n,
                    "proved": int(proofs_by_strategy.get(strategy, 0)),
                    "cpu_seconds": float(cpu or 0),
                }
                for strategy, n, cpu in s.execute(
                    select(Attempt.strategy, func.count(), func.sum(Attempt.cpu_seconds)).group_by(
                        Attempt.strategy
                    )
                ).all()
            ]
            runs = [
                {
                    "id": r.id,
                    "command": r.command,
                    "status": r.status,
                    "started_at": iso(r.started_at),
                    "finished_at": iso(r.finished_at),
                }
                for r in s.scalars(select(Run).order_by(Run.id.desc()).limit(10))
            ]
            return {
                "url": self.url,
                "goals": goals_by_status,
                "attempts": attempts_by_outcome,
                "proofs": s.scalar(select(func.count()).select_from(Proof)) or 0,
                "cpu_seconds": float(s.scalar(select(func.sum(Attempt.cpu_seconds))) or 0.0),
                "strategies": per_strategy,
                "recent_runs": runs,
                "llm": self.llm_spend(),
            }

    @retrying
    def llm_spend(self, run_id: int | None = None) -> dict[str, float]:
        """Tokens, cost and model time recorded on attempts (of one run, or all)."""
        with self._session() as s:
            query = select(
                func.count(),
                func.sum(Attempt.tokens_in),
                func.sum(Attempt.tokens_out),
                func.sum(Attempt.cost_usd),
                func.sum(Attempt.llm_seconds),
            ).where((Attempt.tokens_in > 0) | (Attempt.tokens_out > 0) | (Attempt.cost_usd > 0))
            if run_id is not None:
                query = query.where(Attempt.run_id == run_id)
            n, tokens_in, tokens_out, cost, seconds = s.execute(query).one()
            return {
                "attempts": int(n or 0),
                "tokens_in": int(tokens_in or 0),
                "tokens_out": int(tokens_out or 0),
                "cost_usd": float(cost or 0.0),
                "llm_seconds": float(seconds or 0.0),
            }
