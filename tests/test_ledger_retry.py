"""The ledger's waiting for an unreachable database, on operations that fail on purpose.

The real thing (a PostgreSQL server restarted mid-run) is in tests/test_faults.py.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from proof_orchestrator.errors import LedgerError, LedgerUnavailable
from proof_orchestrator.ledger import Ledger
from proof_orchestrator.ledger.retry import RetryPolicy, call_with_retries

QUICK = RetryPolicy(seconds=2.0, first_wait=0.01, max_wait=0.05)


class Down(Exception):
    """The database is unreachable (what the predicate recognises)."""


def _failing(times: int) -> tuple[list[int], Callable[[], str]]:
    calls: list[int] = []

    def operation() -> str:
        calls.append(1)
        if len(calls) <= times:
            raise Down("connection refused")
        return "written"

    return calls, operation


def test_an_operation_is_run_again_until_the_database_answers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls, operation = _failing(3)
    with caplog.at_level(logging.WARNING, logger="proof_orchestrator.ledger"):
        result = call_with_retries(
            operation,
            policy=QUICK,
            unreachable=lambda e: isinstance(e, Down),
            where="db",
        )
    assert result == "written"
    assert len(calls) == 4
    messages = [r.getMessage() for r in caplog.records]
    assert sum("is unreachable" in m for m in messages) == 3
    assert "reachable again after 4 tries" in messages[-1]


def test_past_the_limit_it_is_ledger_unavailable() -> None:
    calls, operation = _failing(10_000)
    with pytest.raises(LedgerUnavailable, match="could not be reached") as caught:
        call_with_retries(
            operation,
            policy=RetryPolicy(seconds=0.2, first_wait=0.01, max_wait=0.02),
            unreachable=lambda e: isinstance(e, Down),
            where="db",
        )
    assert isinstance(caught.value.__cause__, Down)
    assert len(calls) > 2


def test_other_errors_are_not_retried() -> None:
    calls: list[int] = []

    def operation() -> None:
        calls.append(1)
        raise ValueError("a bug, not an outage")

    with pytest.raises(ValueError, match="a bug"):
        call_with_retries(operation, policy=QUICK, unreachable=lambda e: False, where="db")
    assert calls == [1]


def test_a_sqlite_ledger_fails_at_once(tmp_path: Path) -> None:
    ledger = Ledger(f"sqlite:///{tmp_path / 'l.sqlite'}", retry=RetryPolicy(seconds=30.0))
    try:
        (tmp_path / "l.sqlite").unlink()
        (tmp_path / "l.sqlite").mkdir()  # the file is gone and cannot be made again
        ledger.engine.dispose()
        with pytest.raises(LedgerError) as caught:
            ledger.start_run("fill", {}, "")
        assert not isinstance(caught.value, LedgerUnavailable)
    finally:
        ledger.close()


def test_the_wait_is_set_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORCH_DB_RETRY_SECONDS", "5")
    assert RetryPolicy.from_env().seconds == 5.0
    monkeypatch.setenv("ORCH_DB_RETRY_SECONDS", "soon")
    with pytest.raises(ValueError, match="ORCH_DB_RETRY_SECONDS"):
        RetryPolicy.from_env()
