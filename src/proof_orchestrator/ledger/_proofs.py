"""Verified proofs and the tactic cache they feed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from sqlalchemy import func, insert, select, update

from ..goals import GoalStatus, HoleUse
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
        uses_holes: Sequence[HoleUse] = (),
    ) -> None:
        """Record a verified proof, count it in the tactic cache, mark its goal proved.

        ``uses_holes``: the holes of the project the proof rests on (closed modulo
        them until they are proved, :meth:`close_holes`).
        """
        key = " ".join(sentences)
        uses = [use.as_dict() for use in uses_holes]
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
                    uses_holes=uses,
                    open_holes=uses,
                    holes_open=len(uses),
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
                update(GoalRow)
                .where(GoalRow.id == goal_id)
                .values(status=GoalStatus.PROVED, updated_at=now)
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
    def close_holes(self, file: str, proved: Mapping[str, Sequence[HoleUse]]) -> list[int]:
        """Holes of ``file`` (by name) now proved and written, with the holes each proof rests on.

        Every proof that was closed modulo one of them rests on what its proof
        rests on instead; the goals (ids) whose proofs are now closed are returned.
        No proof is run again: the file it is in is unchanged, only what it rests on.
        """
        if not proved:
            return []
        where = _same_file(file)
        closed: list[int] = []
        with self._transaction() as connection:
            rows = connection.execute(
                select(Proof.id, Proof.goal_id, Proof.open_holes).where(Proof.holes_open > 0)
            ).all()
            for proof_id, goal_id, still in rows:
                kept: dict[tuple[str, str], dict[str, str]] = {}
                changed = False
                for entry in still:
                    if entry["name"] in proved and _same_file(entry["file"]) == where:
                        changed = True
                        for use in proved[entry["name"]]:
                            kept.setdefault((use.file, use.name), use.as_dict())
                    else:
                        kept.setdefault((entry["file"], entry["name"]), entry)
                if not changed:
                    continue
                connection.execute(
                    update(Proof)
                    .where(Proof.id == proof_id)
                    .values(open_holes=list(kept.values()), holes_open=len(kept))
                )
                if not kept:
                    closed.append(int(goal_id))
        return closed

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


def _same_file(file: str) -> str:
    """A file's path as the ledger compares it (the goal rows keep paths as given)."""
    try:
        return str(Path(file).resolve())
    except OSError:
        return file
