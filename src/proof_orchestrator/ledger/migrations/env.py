"""Alembic environment: migrations run on the connection the ledger hands over."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from proof_orchestrator.ledger.models import Base

connection: Connection | None = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("the ledger's migrations run through Ledger(url), not the alembic command")
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
