"""Waiting for a database server that went away (a PostgreSQL restart, a network cut).

Every ledger operation is one transaction. When the server cannot be reached,
the whole operation is run again after a pause that grows (exponential backoff,
with tenacity), until it succeeds or the policy's time is spent; then
:class:`~proof_orchestrator.errors.LedgerUnavailable` is raised. An operation
that committed on the server before the connection dropped is harmless to run
again where it is idempotent: attempts carry an idempotency key, goals and
arms are upserts.

The run waits in place: while the ledger is unreachable, nothing else in the
process moves on (no attempt result is dropped, no file is written).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_delay
from tenacity.wait import wait_exponential

from ..errors import LedgerUnavailable

__all__ = ["DEFAULT_RETRY", "RetryPolicy", "call_with_retries"]

log = logging.getLogger("proof_orchestrator.ledger")

T = TypeVar("T")

#: the environment variable that sets how long to wait for the database, in seconds
RETRY_ENV = "ORCH_DB_RETRY_SECONDS"


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How long the ledger waits for an unreachable database before giving up."""

    #: total time spent waiting before :class:`LedgerUnavailable` (0: never retry)
    seconds: float = 60.0
    #: the first pause; each next one doubles, up to ``max_wait``
    first_wait: float = 0.5
    max_wait: float = 8.0

    @classmethod
    def from_env(cls) -> RetryPolicy:
        """The default policy, with ``ORCH_DB_RETRY_SECONDS`` as its time if set."""
        value = os.environ.get(RETRY_ENV)
        if value is None:
            return DEFAULT_RETRY
        try:
            seconds = float(value)
        except ValueError as exc:
            raise ValueError(f"{RETRY_ENV}={value!r} is not a number of seconds") from exc
        return cls(seconds=max(0.0, seconds))


DEFAULT_RETRY = RetryPolicy()


def call_with_retries(
    operation: Callable[[], T],
    *,
    policy: RetryPolicy,
    unreachable: Callable[[BaseException], bool],
    where: str,
) -> T:
    """Run ``operation``; while it fails because the database is unreachable, wait and rerun.

    Logs each wait and, when the database answers again, that it reconnected.
    Past ``policy.seconds`` raises :class:`LedgerUnavailable` from the last error.
    """
    started = time.monotonic()

    def waiting(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        pause = state.next_action.sleep if state.next_action is not None else 0.0
        log.warning(
            "the ledger at %s is unreachable (%s); waiting %.1f s before try %d "
            "(giving up after %.0f s)",
            where,
            _first_line(error),
            pause,
            state.attempt_number + 1,
            policy.seconds,
        )

    retrying = Retrying(
        stop=stop_after_delay(policy.seconds),
        wait=wait_exponential(multiplier=policy.first_wait, max=policy.max_wait),
        retry=retry_if_exception(unreachable),
        before_sleep=waiting,
        reraise=True,
    )
    tries = 0
    try:
        for attempt in retrying:
            tries = attempt.retry_state.attempt_number
            with attempt:
                result = operation()
    except BaseException as exc:
        if not unreachable(exc):
            raise
        raise LedgerUnavailable(
            f"the ledger at {where} could not be reached for "
            f"{time.monotonic() - started:.0f} s ({tries} tries; last error: "
            f"{_first_line(exc)}). The run stopped: no file was written without its proofs "
            "recorded, and every attempt recorded so far is kept. Start the database (or "
            f"raise {RETRY_ENV}) and run the same command again to resume."
        ) from exc
    if tries > 1:
        log.warning(
            "the ledger at %s is reachable again after %d tries (%.1f s); "
            "the operation that failed was written once, nothing was lost",
            where,
            tries,
            time.monotonic() - started,
        )
    return result


def _first_line(error: BaseException | None) -> str:
    if error is None:
        return "no error"
    cause = error.__cause__ or error
    orig = getattr(cause, "orig", None) or cause
    text = str(orig).strip().splitlines()
    return f"{type(orig).__name__}: {text[0] if text else ''}"
