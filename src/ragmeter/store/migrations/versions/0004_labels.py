"""labels from people

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24

- labels: every label a person gave, appended (never updated): a relevance label of (dataset hash, query
  id, doc id) or an answer label of (run id, query id, metric, hash of the answer text). item_key is the
  hash of that identity; version counts the item's labels from 1, and (item_key, version) is unique, so
  two people saving over the same version cannot both win. The current label of an item is its newest.
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
        "labels",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("item_key", sa.String(length=64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("dataset_hash", sa.String(length=80), nullable=True),
        sa.Column("run_id", sa.String(length=40), nullable=True),
        sa.Column("query_id", sa.String(length=500), nullable=False),
        sa.Column("doc_id", sa.String(length=500), nullable=True),
        sa.Column("metric", sa.String(length=200), nullable=True),
        sa.Column("answer_hash", sa.String(length=64), nullable=True),
        sa.Column("value", sa.Float(), nullable=False),
        sa.Column("annotator", sa.String(length=200), nullable=False),
        sa.Column("source", sa.String(length=20), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("item_key", "version", name="uq_labels_item_version"),
    )
    op.create_index("ix_labels_run", "labels", ["run_id", "query_id"], unique=False)
    op.create_index("ix_labels_dataset", "labels", ["dataset_hash", "query_id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_labels_dataset", table_name="labels")
    op.drop_index("ix_labels_run", table_name="labels")
    op.drop_table("labels")
