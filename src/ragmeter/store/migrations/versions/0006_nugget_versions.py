"""nugget set versions and nugget assignment labels

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-27

- nugget_set_versions: every version of a nugget set people edited in the viewer, appended (never updated).
  A set is named by `name` (the absolute path of the file a run was scored against); version counts from 1
  (version 1 is the file as it was when first edited); (name, version) is unique, so two people saving over
  the same version cannot both win. Each row keeps the whole set (`body`, ragmeter JSONL), its hash, the
  person who saved it and what changed (`changes`, a JSON list).
- labels.nugget_id, labels.nugget_set: an assignment label (kind "assignment") says how far one answer
  supports one nugget of one set version (value 1 support, 0.5 partial_support, 0 not_support).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "nugget_set_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=1000), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("set_hash", sa.String(length=40), nullable=False),
        sa.Column("parent_hash", sa.String(length=40), nullable=True),
        sa.Column("author", sa.String(length=200), nullable=False),
        sa.Column("changes", sa.JSON(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name", "version", name="uq_nugget_set_versions_name_version"),
    )
    with op.batch_alter_table("labels", schema=None) as batch_op:
        batch_op.add_column(sa.Column("nugget_id", sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column("nugget_set", sa.String(length=40), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("labels", schema=None) as batch_op:
        batch_op.drop_column("nugget_set")
        batch_op.drop_column("nugget_id")
    op.drop_table("nugget_set_versions")
