"""The ledger as first released: runs, goals, attempts, proofs, tactic cache, bandit arms.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("command", sa.String(32), nullable=False),
        sa.Column("arguments", sa.JSON, nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("prover_version", sa.String(64), nullable=False),
        sa.Column("summary", sa.JSON, nullable=False),
    )
    op.create_table(
        "goals",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("file", sa.Text, nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("line", sa.Integer, nullable=False),
        sa.Column("statement", sa.Text, nullable=False),
        sa.Column("language", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("first_seen", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("file", "name", "fingerprint"),
    )
    op.create_index("ix_goals_fingerprint", "goals", ["fingerprint"])
    op.create_table(
        "attempts",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("goal_id", sa.Integer, sa.ForeignKey("goals.id"), nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("strategy", sa.String(64), nullable=False),
        sa.Column("tactic", sa.Text, nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("tactics_tried", sa.Integer, nullable=False),
        sa.Column("cpu_seconds", sa.Float, nullable=False),
        sa.Column("wall_seconds", sa.Float, nullable=False),
        sa.Column("prover_version", sa.String(64), nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_attempts_run_id", "attempts", ["run_id"])
    op.create_index("ix_attempts_goal_id", "attempts", ["goal_id"])
    op.create_index("ix_attempts_fp_strategy", "attempts", ["fingerprint", "strategy"])
    op.create_table(
        "proofs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("goal_id", sa.Integer, sa.ForeignKey("goals.id"), nullable=False),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("sentences", sa.JSON, nullable=False),
        sa.Column("strategy", sa.String(64), nullable=False),
        sa.Column("prover_version", sa.String(64), nullable=False),
        sa.Column("diff", sa.Text, nullable=False),
        sa.Column("written", sa.Boolean, nullable=False),
        sa.Column("verified_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_proofs_fingerprint", "proofs", ["fingerprint"])
    op.create_index("ix_proofs_goal_id", "proofs", ["goal_id"])
    op.create_table(
        "tactic_cache",
        sa.Column("fingerprint", sa.String(64), primary_key=True),
        sa.Column("tactic", sa.Text, primary_key=True),
        sa.Column("successes", sa.Integer, nullable=False),
        sa.Column("last_used", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "bandit_arms",
        sa.Column("goal_class", sa.String(128), primary_key=True),
        sa.Column("strategy", sa.String(64), primary_key=True),
        sa.Column("pulls", sa.Integer, nullable=False),
        sa.Column("successes", sa.Integer, nullable=False),
        sa.Column("failures", sa.Float, nullable=False),
        sa.Column("cpu_seconds", sa.Float, nullable=False),
        sa.Column("reward", sa.Float, nullable=False),
    )


def downgrade() -> None:
    for table in ("bandit_arms", "tactic_cache", "proofs", "attempts", "goals", "runs"):
        op.drop_table(table)
