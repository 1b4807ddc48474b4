"""Runs: one row per command that ran (``orch fill``, ``orch eval``, ...)."""

from __future__ import annotations

from ..errors import LedgerError
from ..goals import RunStatus
from ._core import LedgerCore, retrying
from .models import Run, utcnow

__all__ = ["RunRecords"]


class RunRecords(LedgerCore):
    """Starting and finishing runs."""

    @retrying
    def start_run(self, command: str, arguments: dict[str, object], prover_version: str) -> int:
        with self._session() as s:
            run = Run(command=command, arguments=arguments, prover_version=prover_version)
            s.add(run)
            s.flush()
            return run.id

    @retrying
    def finish_run(self, run_id: int, status: RunStatus, summary: dict[str, object]) -> None:
        with self._session() as s:
            run = s.get(Run, run_id)
            if run is None:
                raise LedgerError(f"run {run_id} does not exist")
            run.status = status
            run.summary = summary
            run.finished_at = utcnow()
