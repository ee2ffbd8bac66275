"""a repeat index on metric values

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24

- metric_values.repeat (integer, not null, 0 by default): a judge metric of a run judged N times per query
  (`ragmeter run --repeat N`) has one row per repeat, 0 to N - 1. Every value stored before is repeat 0, so
  old runs read as they did.
- The unique key becomes (run_id, query_id, name, repeat): each repeat of each metric of each query is
  still stored exactly once.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # batch mode: SQLite changes a unique constraint by copying the table (PostgreSQL alters it in place)
    with op.batch_alter_table("metric_values", schema=None) as batch_op:
        batch_op.add_column(sa.Column("repeat", sa.Integer(), nullable=False, server_default="0"))
        batch_op.drop_constraint("uq_metric_values_run_query_name", type_="unique")
        batch_op.create_unique_constraint(
            "uq_metric_values_run_query_name_repeat", ["run_id", "query_id", "name", "repeat"]
        )


def downgrade() -> None:
    # A run with repeats keeps its repeat 0 (what a single judgment would have been).
    op.execute(sa.text("DELETE FROM metric_values WHERE repeat <> 0"))
    with op.batch_alter_table("metric_values", schema=None) as batch_op:
        batch_op.drop_constraint("uq_metric_values_run_query_name_repeat", type_="unique")
        batch_op.create_unique_constraint("uq_metric_values_run_query_name", ["run_id", "query_id", "name"])
        batch_op.drop_column("repeat")
