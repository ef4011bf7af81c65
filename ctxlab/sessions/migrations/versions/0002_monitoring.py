"""Monitoring: the compression history table and the counters on each context record.

Revision ID: 0002
Revises: 0001
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

COUNTERS = ("times_applied", "times_triggered", "tokens_saved", "messages_removed")


def upgrade() -> None:
    """Add the counters (0 for records written before) and the compressions table."""
    with op.batch_alter_table("context_records") as batch:
        for name in COUNTERS:
            batch.add_column(sa.Column(name, sa.Integer, nullable=False, server_default="0"))
    op.create_table(
        "compressions",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("session_id", sa.String(32), sa.ForeignKey("sessions.id", ondelete="CASCADE"), nullable=False),
        sa.Column("applied_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("turn", sa.Integer, nullable=False),
        sa.Column("strategy", sa.String(300), nullable=False),
        sa.Column("triggered", sa.Boolean, nullable=False),
        sa.Column("tokens_before", sa.Integer, nullable=False),
        sa.Column("tokens_after", sa.Integer, nullable=False),
        sa.Column("messages_before", sa.Integer, nullable=False),
        sa.Column("messages_after", sa.Integer, nullable=False),
        sa.Column("summarized", sa.JSON, nullable=False),
        sa.Column("dropped", sa.JSON, nullable=False),
        sa.Column("cleared", sa.JSON, nullable=False),
    )
    op.create_index("ix_compressions_session_id", "compressions", ["session_id"])


def downgrade() -> None:
    """Remove the compressions table and the counters."""
    op.drop_table("compressions")
    with op.batch_alter_table("context_records") as batch:
        for name in COUNTERS:
            batch.drop_column(name)
