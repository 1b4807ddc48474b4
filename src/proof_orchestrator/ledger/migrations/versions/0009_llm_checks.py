"""What became of a model's replies in one attempt (the llm strategies).

``llm_checks`` holds, for an attempt of ``llm`` or ``llm-search``: the HTTP
requests made and the seconds of each, the replies, those that held a
script (or tactics), the candidates the script gate refused by kind, those
the prover checked and those that closed the goal. Empty for other strategies.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.add_column(sa.Column("llm_checks", sa.JSON, nullable=False, server_default="{}"))


def downgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.drop_column("llm_checks")
