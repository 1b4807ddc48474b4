"""Per-goal budgets: each attempt records the CPU budget of the pass it belonged to.

``--budget`` is CPU seconds per goal, all strategies together; a goal that
failed at budget B is tried next at 2B. ``goal_budget_seconds`` is that B
(``budget_seconds`` stays the strategy's own grant within it).

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.add_column(
            sa.Column("goal_budget_seconds", sa.Float, nullable=False, server_default="0")
        )


def downgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.drop_column("goal_budget_seconds")
