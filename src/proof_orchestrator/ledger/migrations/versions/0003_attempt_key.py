"""Attempts carry an idempotency key, so a retried write never records an attempt twice.

When a worker node dies and its attempt is rescheduled, or a write is retried
after a lost connection, the same key is written again and the second insert is
skipped. Older rows have no key (NULL, which a unique index allows many times).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.add_column(sa.Column("attempt_key", sa.String(64), nullable=True))
        batch.create_index("ix_attempts_attempt_key", ["attempt_key"], unique=True)


def downgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.drop_index("ix_attempts_attempt_key")
        batch.drop_column("attempt_key")
