"""The only place that writes SQL.

SQLite by default, in WAL mode with a busy timeout so that a dashboard can
read while a run writes; any SQLAlchemy URL works (``ORCH_DB_URL``). Every
recorded attempt is committed at once, so a crash loses at most the attempts
that were still running.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, Integer, create_engine, event, func, select, text
from sqlalchemy.exc import OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from ..errors import LedgerError
from ..goals import Goal, Outcome
from .models import Attempt, Base, GoalRow, Proof, Run, TacticCache, utcnow

__all__ = ["Ledger", "default_ledger_url"]


def default_ledger_url(project_root: Path) -> str:
    """``ORCH_DB_URL`` if set, else ``<project>/.orch/ledger.sqlite``."""
    env = os.environ.get("ORCH_DB_URL")
    if env:
        return env
    return f"sqlite:///{project_root / '.orch' / 'ledger.sqlite'}"


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


class Ledger:
    """Runs, goals, attempts, verified proofs and the tactic cache."""

    def __init__(self, url: str, *, busy_timeout: float = 10.0) -> None:
        self.url = url
        try:
            if url.startswith("sqlite:///"):
                path = Path(url.removeprefix("sqlite:///"))
                path.parent.mkdir(parents=True, exist_ok=True)
                engine = create_engine(url, connect_args={"timeout": busy_timeout})
                event.listen(engine, "connect", _sqlite_pragmas)
            else:
                engine = create_engine(url, pool_pre_ping=True)
            Base.metadata.create_all(engine)
            with engine.connect() as connection:
                connection.execute(text("SELECT 1"))
        except (OSError, SQLAlchemyError) as exc:
            raise LedgerError(
                f"cannot open the ledger at {url}: {exc}. Check that the file is readable and "
                "writable and not locked by another program, "
                "or choose another with --db / ORCH_DB_URL."
            ) from exc
        self.engine: Engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def _session(self) -> Iterator[Session]:
        session = self._sessions()
        try:
            yield session
            session.commit()
        except OperationalError as exc:
            session.rollback()
            raise LedgerError(f"the ledger at {self.url} could not be written: {exc.orig}") from exc
        except BaseException:
            session.rollback()
            raise
        finally:
            session.close()

    # -- runs ----------------------------------------------------------------

    def start_run(self, command: str, arguments: dict[str, object], prover_version: str) -> int:
        with self._session() as s:
            run = Run(command=command, arguments=arguments, prover_version=prover_version)
            s.add(run)
            s.flush()
            return run.id

    def finish_run(self, run_id: int, status: str, summary: dict[str, object]) -> None:
        with self._session() as s:
            run = s.get(Run, run_id)
            if run is None:
                raise LedgerError(f"run {run_id} does not exist")
            run.status = status
            run.summary = summary
            run.finished_at = utcnow()

    # -- goals ---------------------------------------------------------------

    def upsert_goal(self, goal: Goal) -> int:
        with self._session() as s:
            row = s.scalar(
                select(GoalRow).where(
                    GoalRow.file == str(goal.file),
                    GoalRow.name == goal.name,
                    GoalRow.fingerprint == goal.fingerprint,
                )
            )
            if row is None:
                row = GoalRow(
                    fingerprint=goal.fingerprint,
                    file=str(goal.file),
                    name=goal.name,
                    line=goal.line,
                    statement=goal.statement,
                    language=goal.language,
                )
                s.add(row)
                s.flush()
            else:
                row.line = goal.line
                row.updated_at = utcnow()
            return row.id

    def set_goal_status(self, goal_id: int, status: str) -> None:
        with self._session() as s:
            row = s.get(GoalRow, goal_id)
            if row is not None:
                row.status = status
                row.updated_at = utcnow()

    # -- attempts --------------------------------------------------------------

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
        cpu_seconds: float = 0.0,
        wall_seconds: float = 0.0,
        prover_version: str = "",
        message: str = "",
    ) -> int:
        with self._session() as s:
            row = Attempt(
                run_id=run_id,
                goal_id=goal_id,
                fingerprint=fingerprint,
                strategy=strategy,
                outcome=outcome.value,
                tactic=tactic,
                tactics_tried=tactics_tried,
                cpu_seconds=cpu_seconds,
                wall_seconds=wall_seconds,
                prover_version=prover_version,
                message=message[:4000],
            )
            s.add(row)
            s.flush()
            return row.id

    def attempts_for(self, fingerprint: str) -> list[Attempt]:
        with self._session() as s:
            return list(s.scalars(select(Attempt).where(Attempt.fingerprint == fingerprint)))

    # -- proofs and the tactic cache -----------------------------------------

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
    ) -> int:
        with self._session() as s:
            proof = Proof(
                run_id=run_id,
                goal_id=goal_id,
                fingerprint=fingerprint,
                sentences=list(sentences),
                strategy=strategy,
                prover_version=prover_version,
                diff=diff,
                written=written,
            )
            s.add(proof)
            key = " ".join(sentences)
            cached = s.get(TacticCache, (fingerprint, key))
            if cached is None:
                s.add(TacticCache(fingerprint=fingerprint, tactic=key, successes=1))
            else:
                cached.successes += 1
                cached.last_used = utcnow()
            goal = s.get(GoalRow, goal_id)
            if goal is not None:
                goal.status = "proved"
                goal.updated_at = utcnow()
            s.flush()
            return proof.id

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

    def cached_tactics(self, fingerprint: str) -> list[str]:
        with self._session() as s:
            rows = s.scalars(
                select(TacticCache)
                .where(TacticCache.fingerprint == fingerprint)
                .order_by(TacticCache.successes.desc())
            )
            return [row.tactic for row in rows]

    # -- summaries ---------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        with self._session() as s:
            goals_by_status = dict(
                s.execute(select(GoalRow.status, func.count()).group_by(GoalRow.status)).all()
            )
            attempts_by_outcome = dict(
                s.execute(select(Attempt.outcome, func.count()).group_by(Attempt.outcome)).all()
            )
            per_strategy = [
                {
                    "strategy": strategy,
                    "attempts": n,
                    "proved": int(proved or 0),
                    "cpu_seconds": float(cpu or 0),
                }
                for strategy, n, proved, cpu in s.execute(
                    select(
                        Attempt.strategy,
                        func.count(),
                        func.sum((Attempt.outcome == Outcome.PROVED.value).cast(Integer)),
                        func.sum(Attempt.cpu_seconds),
                    ).group_by(Attempt.strategy)
                ).all()
            ]
            runs = [
                {
                    "id": r.id,
                    "command": r.command,
                    "status": r.status,
                    "started_at": _iso(r.started_at),
                    "finished_at": _iso(r.finished_at),
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
            }


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None
