"""The LLM strategy and the MCP server: spend per attempt, and the model-response cache.

Attempts gain the tokens, cost and model latency of the model calls they
made (zero for every other strategy). ``llm_responses`` caches a model's
replies by (provider, model, prompt hash, sampling settings), so a rerun of
the same prompt costs nothing.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.add_column(sa.Column("tokens_in", sa.Integer, nullable=False, server_default="0"))
        batch.add_column(sa.Column("tokens_out", sa.Integer, nullable=False, server_default="0"))
        batch.add_column(sa.Column("cost_usd", sa.Float, nullable=False, server_default="0"))
        batch.add_column(sa.Column("llm_seconds", sa.Float, nullable=False, server_default="0"))
    op.create_table(
        "llm_responses",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("provider", sa.String(32), nullable=False),
        sa.Column("model", sa.String(128), nullable=False),
        sa.Column("prompt_hash", sa.String(64), nullable=False),
        sa.Column("settings", sa.JSON, nullable=False),
        sa.Column("texts", sa.JSON, nullable=False),
        sa.Column("tokens_in", sa.Integer, nullable=False),
        sa.Column("tokens_out", sa.Integer, nullable=False),
        sa.Column("cost_usd", sa.Float, nullable=False),
        sa.Column("latency_seconds", sa.Float, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_llm_responses_key", "llm_responses", ["key"], unique=True)


def downgrade() -> None:
    op.drop_index("ix_llm_responses_key", table_name="llm_responses")
    op.drop_table("llm_responses")
    with op.batch_alter_table("attempts") as batch:
        batch.drop_column("llm_seconds")
        batch.drop_column("cost_usd")
        batch.drop_column("tokens_out")
        batch.drop_column("tokens_in")
