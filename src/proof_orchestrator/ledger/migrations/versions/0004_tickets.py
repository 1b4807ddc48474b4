"""The helper-lemma market: tickets with states and leases.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tickets",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("statement", sa.Text, nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("parent_goal_id", sa.Integer, sa.ForeignKey("goals.id"), nullable=True),
        sa.Column("priority", sa.Float, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("claimed_by", sa.String(128), nullable=True),
        sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("proof", sa.JSON, nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_tickets_fingerprint", "tickets", ["fingerprint"])
    op.create_index("ix_tickets_state_priority", "tickets", ["state", "priority"])


def downgrade() -> None:
    op.drop_table("tickets")
