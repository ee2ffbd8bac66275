"""run records and metric values

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23

- runs.record: the run record (what rebuilds the run), null for runs stored before.
- metric_values: one row per (run, query, metric), each value stored once. Runs stored before keep their
  values inside query_results.result, where the reader still finds them.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("record", sa.JSON(), nullable=True))
    op.create_table(
        "metric_values",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.String(length=40), nullable=False),
        sa.Column("query_id", sa.String(length=500), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("version", sa.String(length=200), nullable=True),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("run_id", "query_id", "name", name="uq_metric_values_run_query_name"),
    )
    with op.batch_alter_table("metric_values", schema=None) as batch_op:
        batch_op.create_index("ix_metric_values_run_name", ["run_id", "name"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("metric_values", schema=None) as batch_op:
        batch_op.drop_index("ix_metric_values_run_name")
    op.drop_table("metric_values")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("record")
