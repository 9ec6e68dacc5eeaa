"""The jobs table: profiling work waiting for a device, surviving restarts.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of the column types as of this revision (store.schema may move on).
_json = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
_time = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column("job_id", sa.String(255), primary_key=True),
        sa.Column("task", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("payload", _json, nullable=False),
        sa.Column("priority", sa.Float, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("worker", sa.String(128), nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("result", _json, nullable=True),
        sa.Column("created_at", _time, nullable=False),
        sa.Column("updated_at", _time, nullable=False),
    )
    op.create_index("ix_jobs_state_priority", "jobs", ["state", "priority", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_jobs_state_priority", table_name="jobs")
    op.drop_table("jobs")
