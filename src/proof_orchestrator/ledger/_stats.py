"""Summaries over the whole ledger (``orch stats``, the dashboard's overview, reports)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from ..goals import GoalStatus, Outcome
from ._core import LedgerCore, iso, retrying
from .models import Attempt, GoalRow, Proof, Run

__all__ = ["Summaries"]


class Summaries(LedgerCore):
    """Counts and sums: goals by status, attempts by outcome, strategies, model spend."""

    @retrying
    def stats(self) -> dict[str, Any]:
        """Goals by status, attempts by outcome, proofs, CPU, strategies, recent runs, model spend.

        Skipped strategies (:attr:`Outcome.SKIPPED`: they cannot run on the
        goal) are not attempts: they are left out of ``attempts`` and of the
        CPU figures and counted apart, ``skipped`` in all and per strategy with
        its most frequent reason (``skipped_reason``).
        """
        skip = Outcome.SKIPPED.value
        modulo = self.modulo_holes()
        with self._session() as s:
            goals_by_status = dict(
                s.execute(select(GoalRow.status, func.count()).group_by(GoalRow.status)).all()
            )
            attempts_by_outcome = dict(
                s.execute(
                    select(Attempt.outcome, func.count())
                    .where(Attempt.outcome != skip)
                    .group_by(Attempt.outcome)
                ).all()
            )
            # a strategy's proofs are the verified ones (attempts only reach "candidate")
            proofs_by_strategy = dict(
                s.execute(select(Proof.strategy, func.count()).group_by(Proof.strategy)).all()
            )
            tried: dict[str, tuple[int, float]] = {
                strategy: (int(n), float(cpu or 0.0))
                for strategy, n, cpu in s.execute(
                    select(Attempt.strategy, func.count(), func.sum(Attempt.cpu_seconds))
                    .where(Attempt.outcome != skip)
                    .group_by(Attempt.strategy)
                ).all()
            }
            skipped: dict[str, dict[str, int]] = {}
            for strategy, message, n in s.execute(
                select(Attempt.strategy, Attempt.message, func.count())
                .where(Attempt.outcome == skip)
                .group_by(Attempt.strategy, Attempt.message)
            ).all():
                skipped.setdefault(strategy, {})[message or ""] = int(n)
            per_strategy = []
            for strategy in sorted({*tried, *skipped}):
                n, cpu = tried.get(strategy, (0, 0.0))
                reasons = skipped.get(strategy, {})
                per_strategy.append(
                    {
                        "strategy": strategy,
                        "attempts": n,
                        "proved": int(proofs_by_strategy.get(strategy, 0)),
                        "cpu_seconds": cpu,
                        "skipped": sum(reasons.values()),
                        "skipped_reason": _reason(reasons),
                    }
                )
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
            cpu_total = s.scalar(
                select(func.sum(Attempt.cpu_seconds)).where(Attempt.outcome != skip)
            )
            return {
                "url": self.url,
                "goals": goals_by_status,
                # proved goals: closed, or closed modulo holes still open (listed)
                "closed": int(goals_by_status.get(GoalStatus.PROVED, 0)) - len(modulo),
                "proved_modulo_holes": len(modulo),
                "modulo_holes": modulo,
                "attempts": attempts_by_outcome,
                "skipped": sum(p["skipped"] for p in per_strategy),
                "proofs": s.scalar(select(func.count()).select_from(Proof)) or 0,
                "cpu_seconds": float(cpu_total or 0.0),
                "strategies": per_strategy,
                "recent_runs": runs,
                "llm": self.llm_spend(),
                "llm_replies": self.llm_report(),
            }

    @retrying
    def modulo_holes(self) -> list[dict[str, Any]]:
        """Proved goals whose newest proof rests on holes still open, in file order.

        Each: the goal's id, name and file, ``uses`` (the holes its proof used
        when verified) and ``open`` (those not proved yet), by the prover's names.
        """
        newest = select(func.max(Proof.id)).group_by(Proof.goal_id)
        with self._session() as s:
            rows = s.execute(
                select(GoalRow.id, GoalRow.name, GoalRow.file, Proof.uses_holes, Proof.open_holes)
                .join(Proof, Proof.goal_id == GoalRow.id)
                .where(
                    Proof.id.in_(newest), Proof.holes_open > 0, GoalRow.status == GoalStatus.PROVED
                )
                .order_by(GoalRow.file, GoalRow.line, GoalRow.id)
            ).all()
        return [
            {
                "goal_id": int(goal_id),
                "name": name,
                "file": file,
                "uses": [entry["label"] for entry in uses],
                "open": [entry["label"] for entry in still],
            }
            for goal_id, name, file, uses, still in rows
        ]

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

    @retrying
    def llm_report(self, strategies: tuple[str, ...] = ("llm", "llm-search")) -> dict[str, Any]:
        """What the model strategies did over the whole ledger: attempts by outcome,
        requests and their latencies, tokens and speed, and what became of the
        replies (``Attempt.llm_checks``): scripts, gate refusals by kind, checks."""
        with self._session() as s:
            rows = s.execute(
                select(
                    Attempt.strategy,
                    Attempt.outcome,
                    Attempt.tokens_in,
                    Attempt.tokens_out,
                    Attempt.llm_checks,
                ).where(Attempt.strategy.in_(strategies))
            ).all()
        outcomes: dict[str, dict[str, int]] = {}
        sums = dict.fromkeys(
            (
                "requests",
                "cached",
                "replies",
                "scripts",
                "checked",
                "closed",
                "tokens_in",
                "tokens_out",
            ),
            0,
        )
        refused: dict[str, int] = {}
        latencies: list[float] = []
        for strategy, outcome, tokens_in, tokens_out, checks in rows:
            by = outcomes.setdefault(strategy, {})
            by[outcome] = by.get(outcome, 0) + 1
            sums["tokens_in"] += int(tokens_in or 0)
            sums["tokens_out"] += int(tokens_out or 0)
            checks = checks or {}
            for key in ("requests", "cached", "replies", "scripts", "checked", "closed"):
                sums[key] += int(checks.get(key, 0))
            for kind, n in dict(checks.get("refused", {})).items():
                refused[kind] = refused.get(kind, 0) + int(n)
            latencies += [float(x) for x in checks.get("request_seconds", [])]
        seconds = sum(latencies)
        ordered = sorted(latencies)
        middle = len(ordered) // 2
        median = (
            (ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2)
            if ordered
            else None
        )
        return {
            "attempts": outcomes,
            **sums,
            "refused": dict(sorted(refused.items())),
            "request_seconds": round(seconds, 3),
            "median_request_seconds": round(median, 3) if median is not None else None,
            "tokens_out_per_second": round(sums["tokens_out"] / seconds, 2) if seconds else None,
            "tokens_per_second": (
                round((sums["tokens_in"] + sums["tokens_out"]) / seconds, 2) if seconds else None
            ),
        }


def _reason(reasons: dict[str, int]) -> str:
    """The most frequent of a strategy's skip reasons, and how many others there are."""
    if not reasons:
        return ""
    top = max(sorted(reasons), key=lambda r: reasons[r])
    others = len(reasons) - 1
    return f"{top} (+{others} other reason{'s' if others > 1 else ''})" if others else top
