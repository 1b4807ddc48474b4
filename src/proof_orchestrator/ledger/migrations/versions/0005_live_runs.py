"""Live state of running commands: one row per run, rewritten about once a second.

A running ``orch fill``/``bg``/``bank`` publishes what it is doing now (slots,
queue, governor share, ETA) as one JSON document with a heartbeat time. The row
is deleted when the run ends; a row whose heartbeat is old belongs to a run
that died.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "live_runs",
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), primary_key=True),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("state", sa.JSON, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("live_runs")
