"""Tables of the ledger (SQLAlchemy 2 declarative models).

The schema in a database is made and upgraded by the Alembic migrations in
``migrations/versions``; a test checks that they and these models agree.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from ..goals import RunStatus

__all__ = [
    "Attempt",
    "BanditArm",
    "Base",
    "GoalRow",
    "LiveRun",
    "LlmResponse",
    "Proof",
    "Run",
    "TacticCache",
    "Ticket",
]


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    pass


class Run(Base):
    __tablename__ = "runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    command: Mapped[str] = mapped_column(String(32))
    arguments: Mapped[dict[str, object]] = mapped_column(JSON, default=dict)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    #: running / finished / interrupted / failed
    status: Mapped[str] = mapped_column(String(16), default=RunStatus.RUNNING)
    prover_version: Mapped[str] = mapped_column(String(64), default="")
    summary: Mapped[dict[str, object]] = mapped_column(JSON, default=dict)


class GoalRow(Base):
    __tablename__ = "goals"
    __table_args__ = (UniqueConstraint("file", "name", "fingerprint"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64), index=True)
    file: Mapped[str] = mapped_column(Text)
    name: Mapped[str] = mapped_column(String(255))
    line: Mapped[int] = mapped_column(Integer)
    statement: Mapped[str] = mapped_column(Text)
    language: Mapped[str] = mapped_column(String(16), default="coq")
    #: open / proved / failed / rejected (the whole-file check refused its proof) / error / skipped
    status: Mapped[str] = mapped_column(String(16), default="open")
    first_seen: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Attempt(Base):
    __tablename__ = "attempts"
    __table_args__ = (
        Index("ix_attempts_fp_strategy", "fingerprint", "strategy"),
        Index("ix_attempts_attempt_key", "attempt_key", unique=True),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"), index=True)
    goal_id: Mapped[int] = mapped_column(ForeignKey("goals.id"), index=True)
    fingerprint: Mapped[str] = mapped_column(String(64))
    strategy: Mapped[str] = mapped_column(String(64))
    #: the script found (or the last one tried), sentences joined by spaces
    tactic: Mapped[str] = mapped_column(Text, default="")
    outcome: Mapped[str] = mapped_column(String(16))
    tactics_tried: Mapped[int] = mapped_column(Integer, default=0)
    #: the CPU budget the strategy was given (0 when not budgeted, e.g. replays)
    budget_seconds: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    #: the CPU budget of the whole pass over the goal this attempt was part of
    goal_budget_seconds: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    cpu_seconds: Mapped[float] = mapped_column(Float, default=0.0)
    wall_seconds: Mapped[float] = mapped_column(Float, default=0.0)
    prover_version: Mapped[str] = mapped_column(String(64), default="")
    message: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    #: idempotency key of the attempt (a retried write of the same attempt is skipped)
    attempt_key: Mapped[str | None] = mapped_column(String(64), nullable=True, default=None)
    #: model tokens sent and received by the attempt (the ``llm`` strategy; 0 otherwise)
    tokens_in: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    tokens_out: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    #: what those tokens cost, from the configured price table (USD)
    cost_usd: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    #: seconds spent waiting for the model
    llm_seconds: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    #: what became of the model's replies (requests, scripts, gate refusals by kind,
    #: prover checks; see ``coq.strategies.llm.LLMChecks``); empty for other strategies
    llm_checks: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict, server_default="{}")


class Proof(Base):
    """A proof that passed the whole-file check and the axiom audit."""

    __tablename__ = "proofs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64), index=True)
    goal_id: Mapped[int] = mapped_column(ForeignKey("goals.id"), index=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"))
    sentences: Mapped[list[str]] = mapped_column(JSON)
    strategy: Mapped[str] = mapped_column(String(64))
    prover_version: Mapped[str] = mapped_column(String(64), default="")
    #: the unified diff the proof made to its file
    diff: Mapped[str] = mapped_column(Text, default="")
    written: Mapped[bool] = mapped_column(default=False)
    verified_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    #: the holes of the project the proof rested on when verified (``HoleUse.as_dict``
    #: each): "proved using A, B"; empty for a closed proof
    uses_holes: Mapped[list[dict[str, str]]] = mapped_column(
        JSON, default=list, server_default="[]"
    )
    #: those still open: a hole leaves once its own proof is written (and the holes that
    #: proof rests on come in); empty: the proof is closed
    open_holes: Mapped[list[dict[str, str]]] = mapped_column(
        JSON, default=list, server_default="[]"
    )
    #: ``len(open_holes)``, to find the proofs that are closed modulo holes
    holes_open: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class TacticCache(Base):
    """Which scripts proved which fingerprints, and how often."""

    __tablename__ = "tactic_cache"

    fingerprint: Mapped[str] = mapped_column(String(64), primary_key=True)
    tactic: Mapped[str] = mapped_column(Text, primary_key=True)
    successes: Mapped[int] = mapped_column(Integer, default=0)
    last_used: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class BanditArm(Base):
    """What the bandit learned about one strategy on one goal class."""

    __tablename__ = "bandit_arms"

    goal_class: Mapped[str] = mapped_column(String(128), primary_key=True)
    strategy: Mapped[str] = mapped_column(String(64), primary_key=True)
    pulls: Mapped[int] = mapped_column(Integer, default=0)
    successes: Mapped[int] = mapped_column(Integer, default=0)
    failures: Mapped[float] = mapped_column(Float, default=0.0)
    cpu_seconds: Mapped[float] = mapped_column(Float, default=0.0)
    reward: Mapped[float] = mapped_column(Float, default=0.0)


class Ticket(Base):
    """A helper-lemma request on the market (see :mod:`.coq.strategies.market`)."""

    __tablename__ = "tickets"
    __table_args__ = (Index("ix_tickets_state_priority", "state", "priority"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    #: fingerprint of the helper statement (requests are deduplicated by it)
    fingerprint: Mapped[str] = mapped_column(String(64), index=True)
    #: the closed statement (``forall ..., goal``), without ``Lemma name :``
    statement: Mapped[str] = mapped_column(Text)
    name: Mapped[str] = mapped_column(String(255))
    #: the goal that needed the helper
    parent_goal_id: Mapped[int | None] = mapped_column(ForeignKey("goals.id"), nullable=True)
    priority: Mapped[float] = mapped_column(Float, default=0.0)
    #: open / claimed / completed / expired / cancelled
    state: Mapped[str] = mapped_column(String(16), default="open")
    claimed_by: Mapped[str | None] = mapped_column(String(128), nullable=True)
    lease_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    #: the helper's proof script once completed
    proof: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class LiveRun(Base):
    """What a running command is doing now; deleted when the run ends.

    ``state`` holds the slots (goal, strategy, budget, CPU so far), the queue
    length, the governor's target and measured share, and the ETA. A heartbeat
    older than a few seconds means the run died without clearing its row.
    """

    __tablename__ = "live_runs"

    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id"), primary_key=True)
    heartbeat_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    state: Mapped[dict[str, object]] = mapped_column(JSON, default=dict)


class LlmResponse(Base):
    """A model's replies to one prompt, cached by (provider, model, prompt hash, settings)."""

    __tablename__ = "llm_responses"
    __table_args__ = (Index("ix_llm_responses_key", "key", unique=True),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    #: sha256 of provider, model, prompt hash and sampling settings
    key: Mapped[str] = mapped_column(String(64))
    provider: Mapped[str] = mapped_column(String(32))
    model: Mapped[str] = mapped_column(String(128))
    prompt_hash: Mapped[str] = mapped_column(String(64))
    settings: Mapped[dict[str, object]] = mapped_column(JSON, default=dict)
    #: the sampled replies, as the model wrote them
    texts: Mapped[list[str]] = mapped_column(JSON, default=list)
    tokens_in: Mapped[int] = mapped_column(Integer, default=0)
    tokens_out: Mapped[int] = mapped_column(Integer, default=0)
    cost_usd: Mapped[float] = mapped_column(Float, default=0.0)
    latency_seconds: Mapped[float] = mapped_column(Float, default=0.0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
