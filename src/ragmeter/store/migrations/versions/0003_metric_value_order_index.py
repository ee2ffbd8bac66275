"""an index that reads a run's metric values in value order

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24

- ix_metric_values_run_name_value (run_id, name, value, query_id): the viewer's page of a run's queries
  sorted or filtered by one metric reads the values in order from the index alone, so a 10,000-query run
  pages as fast as a small one.
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_metric_values_run_name_value",
        "metric_values",
        ["run_id", "name", "value", "query_id"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_metric_values_run_name_value", table_name="metric_values")
