"""The queue a job was submitted on, kept in its row.

Routing is an argument of the job queue's port (`submit(queue=...)`), never read from a job's
payload: the fleet queues a job again (`recover`) on the queue it was submitted on, so the row
must say which. Rows written before this revision get the queue their payload's backend and
target named (where both are there), as the fleet routed them until then.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-28
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as table:
        table.add_column(sa.Column("queue", sa.String(255), nullable=True))
    if op.get_bind().dialect.name == "postgresql":
        backend, target = "(payload->>'backend')", "(payload->>'target')"
    else:
        backend, target = "json_extract(payload, '$.backend')", "json_extract(payload, '$.target')"
    # the name store.jobs.base.queue_name gives, frozen here as of this revision
    op.execute(
        f"UPDATE jobs SET queue = 'profile.' || {backend} || '.' || {target} "
        f"WHERE {backend} IS NOT NULL AND {target} IS NOT NULL"
    )


def downgrade() -> None:
    with op.batch_alter_table("jobs") as table:
        table.drop_column("queue")
