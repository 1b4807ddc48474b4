"""Proofs that use other holes: which holes a proof rested on, and which are still open.

A proof whose only new assumptions are holes of the project (other goals,
still ``Admitted``/``sorry``) is written closed modulo them. ``uses_holes``
keeps what it used when verified; ``open_holes`` (and its length,
``holes_open``) shrinks as those holes are proved: empty means closed.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("proofs") as batch:
        batch.add_column(sa.Column("uses_holes", sa.JSON, nullable=False, server_default="[]"))
        batch.add_column(sa.Column("open_holes", sa.JSON, nullable=False, server_default="[]"))
        batch.add_column(sa.Column("holes_open", sa.Integer, nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("proofs") as batch:
        batch.drop_column("holes_open")
        batch.drop_column("open_holes")
        batch.drop_column("uses_holes")
