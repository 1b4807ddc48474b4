"""The live state of running commands: one row per run, replaced about every second."""

from __future__ import annotations

from datetime import UTC
from typing import Any

from sqlalchemy import delete, select

from ._core import LedgerCore, retrying, upsert
from .models import LiveRun, Run, utcnow

__all__ = ["LIVE_STALE_SECONDS", "LiveState"]

#: a live run whose heartbeat is older than this is shown as dead (it publishes about every second)
LIVE_STALE_SECONDS = 5.0


class LiveState(LedgerCore):
    """Publishing, clearing and listing what running commands are doing."""

    def publish_live(self, run_id: int, state: dict[str, Any]) -> None:
        """Replace the live state of ``run_id`` and beat its heartbeat: one UPSERT."""
        now = utcnow()
        with self._transaction() as connection:
            connection.execute(
                upsert(
                    connection, LiveRun, ("run_id",), {"heartbeat_at": now, "state": state}
                ).values(run_id=run_id, heartbeat_at=now, state=state)
            )

    @retrying
    def clear_live(self, run_id: int) -> None:
        """Forget the live state of ``run_id`` (its run ended)."""
        with self._transaction() as connection:
            connection.execute(delete(LiveRun).where(LiveRun.run_id == run_id))

    @retrying
    def live_runs(self, stale_after: float = LIVE_STALE_SECONDS) -> list[dict[str, Any]]:
        """Every published live state, oldest run first, with ``dead`` for stale heartbeats.

        A run that died without clearing its row (killed, machine lost) keeps it
        until it is cleared; its heartbeat tells it apart from a running one.
        """
        now = utcnow()
        with self._transaction() as connection:
            rows = connection.execute(
                select(LiveRun.run_id, LiveRun.heartbeat_at, LiveRun.state, Run.command)
                .join(Run, Run.id == LiveRun.run_id)
                .order_by(LiveRun.run_id)
            ).all()
        runs = []
        for run_id, heartbeat, state, command in rows:
            # SQLite gives back naive datetimes; every time in the ledger is UTC
            beat = heartbeat if heartbeat.tzinfo else heartbeat.replace(tzinfo=UTC)
            age = max((now - beat).total_seconds(), 0.0)
            runs.append(
                {
                    "run_id": run_id,
                    "command": command,
                    "heartbeat_at": beat.isoformat(),
                    "heartbeat_age_seconds": round(age, 2),
                    "dead": age > stale_after,
                    "state": state or {},
                }
            )
        return runs
