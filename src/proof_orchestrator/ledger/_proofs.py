"""Verified proofs and the tactic cache they feed."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, insert, select, update

from ._core import LedgerCore, retrying, upsert
from .models import GoalRow, Proof, TacticCache, utcnow

__all__ = ["ProofRecords"]


class ProofRecords(LedgerCore):
    """Recording verified proofs; finding earlier proofs and scripts to replay."""

    @retrying
    def record_proof(
        self,
        *,
        run_id: int,
        goal_id: int,
        fingerprint: str,
        sentences: Sequence[str],
        strategy: str,
        prover_version: str,
        diff: str,
        written: bool,
    ) -> None:
        """Record a verified proof, count it in the tactic cache, mark its goal proved."""
        key = " ".join(sentences)
        now = utcnow()
        with self._transaction() as connection:
            connection.execute(
                insert(Proof).values(
                    run_id=run_id,
                    goal_id=goal_id,
                    fingerprint=fingerprint,
                    sentences=list(sentences),
                    strategy=strategy,
                    prover_version=prover_version,
                    diff=diff,
                    written=written,
                    verified_at=now,
                )
            )
            connection.execute(
                upsert(
                    connection,
                    TacticCache,
                    ("fingerprint", "tactic"),
                    {"successes": TacticCache.successes + 1, "last_used": now},
                ).values(fingerprint=fingerprint, tactic=key, successes=1, last_used=now)
            )
            connection.execute(
                update(GoalRow).where(GoalRow.id == goal_id).values(status="proved", updated_at=now)
            )

    @retrying
    def mark_written(self, run_id: int, goal_ids: Sequence[int]) -> None:
        """The file holding these goals' proofs of ``run_id`` was written."""
        if not goal_ids:
            return
        with self._transaction() as connection:
            connection.execute(
                update(Proof)
                .where(Proof.run_id == run_id, Proof.goal_id.in_(list(goal_ids)))
                .values(written=True)
            )

    @retrying
    def verified_proof(self, fingerprint: str) -> tuple[str, ...] | None:
        """The newest verified proof of a fingerprint, if any."""
        with self._session() as s:
            proof = s.scalar(
                select(Proof)
                .where(Proof.fingerprint == fingerprint)
                .order_by(Proof.verified_at.desc())
                .limit(1)
            )
            return tuple(proof.sentences) if proof is not None else None

    @retrying
    def cached_tactics(self, fingerprint: str) -> list[str]:
        with self._session() as s:
            rows = s.scalars(
                select(TacticCache)
                .where(TacticCache.fingerprint == fingerprint)
                .order_by(TacticCache.successes.desc())
            )
            return [row.tactic for row in rows]

    @retrying
    def popular_scripts(self, limit: int = 30) -> list[str]:
        """Scripts that proved the most goals, best first (for cached replay)."""
        with self._session() as s:
            rows = s.execute(
                select(TacticCache.tactic, func.sum(TacticCache.successes).label("n"))
                .group_by(TacticCache.tactic)
                .order_by(func.sum(TacticCache.successes).desc(), TacticCache.tactic)
                .limit(limit)
            ).all()
            return [tactic for tactic, _ in rows]

    @retrying
    def proved_statements(
        self, language: str = "coq", limit: int = 2000
    ) -> list[tuple[str, tuple[str, ...]]]:
        """(statement, script) of the newest verified proofs, for the nearest-goal replay."""
        with self._session() as s:
            rows = s.execute(
                select(GoalRow.statement, Proof.sentences)
                .join(Proof, Proof.goal_id == GoalRow.id)
                .where(GoalRow.language == language)
                .order_by(Proof.verified_at.desc())
                .limit(limit)
            ).all()
            # the same proof may be recorded more than once (one row per run)
            found = ((statement, tuple(sentences)) for statement, sentences in rows)
            return list(dict.fromkeys(found))
