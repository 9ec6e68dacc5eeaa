"""The runs of a job that the infrastructure failed, kept in its row.

A job whose runs keep failing (its worker died, its device was lost) ends `failed` once it
failed enough runs on enough devices (store.jobs.base.GiveUp), instead of being queued again
for ever; the row keeps each failed run's device and error to decide it. Rows written before
this revision have none (NULL).

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    document = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
    with op.batch_alter_table("jobs") as table:
        table.add_column(sa.Column("failed_runs", document, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as table:
        table.drop_column("failed_runs")
