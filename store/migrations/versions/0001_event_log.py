"""The event log: events, blobs, projection checkpoints and snapshots, append-only triggers.

Revision ID: 0001
Revises:
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of the column types as of this revision (store.schema may move on).
_json = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
_position = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_time = sa.DateTime(timezone=True)

_APPEND_ONLY = ("events", "blobs")


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column("position", _position, primary_key=True, autoincrement=False),
        sa.Column("event_id", sa.String(36), nullable=False, unique=True),
        sa.Column("stream_id", sa.String(255), nullable=False),
        sa.Column("stream_version", sa.Integer, nullable=False),
        sa.Column("type", sa.String(128), nullable=False),
        sa.Column("schema_version", sa.Integer, nullable=False),
        sa.Column("data", _json, nullable=False),
        sa.Column("metadata", _json, nullable=False),
        sa.Column("idempotency_key", sa.String(512), nullable=True, unique=True),
        sa.Column("recorded_at", _time, nullable=False),
        sa.UniqueConstraint("stream_id", "stream_version", name="uq_events_stream_version"),
    )
    op.create_index("ix_events_type_position", "events", ["type", "position"])
    op.create_index("ix_events_recorded_at", "events", ["recorded_at"])
    op.create_table(
        "blobs",
        sa.Column("sha256", sa.String(64), primary_key=True),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("compression", sa.String(16), nullable=False),
        sa.Column("content", sa.LargeBinary, nullable=False),
        sa.Column("created_at", _time, nullable=False),
    )
    op.create_table(
        "projection_checkpoints",
        sa.Column("name", sa.String(128), primary_key=True),
        sa.Column("position", sa.BigInteger, nullable=False),
        sa.Column("code_version", sa.String(64), nullable=False),
        sa.Column("state", _json, nullable=False),
        sa.Column("updated_at", _time, nullable=False),
    )
    op.create_table(
        "projection_snapshots",
        sa.Column("name", sa.String(128), primary_key=True),
        sa.Column("code_version", sa.String(64), primary_key=True),
        sa.Column("position", sa.BigInteger, primary_key=True),
        sa.Column("state", _json, nullable=False),
        sa.Column("created_at", _time, nullable=False),
    )
    if op.get_bind().dialect.name == "sqlite":
        for table in _APPEND_ONLY:
            for action in ("UPDATE", "DELETE"):
                op.execute(
                    f"CREATE TRIGGER {table}_no_{action.lower()} BEFORE {action} ON {table} "
                    f"BEGIN SELECT RAISE(ABORT, 'accelopt: table {table} is append-only'); END"
                )
    else:
        op.execute(
            """
            CREATE FUNCTION accelopt_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                RAISE EXCEPTION 'accelopt: table % is append-only (% refused)', TG_TABLE_NAME, TG_OP
                    USING ERRCODE = 'restrict_violation';
            END
            $$
            """
        )
        for table in _APPEND_ONLY:
            op.execute(
                f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION accelopt_append_only()"
            )
            op.execute(
                f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
                "FOR EACH STATEMENT EXECUTE FUNCTION accelopt_append_only()"
            )


def downgrade() -> None:
    raise RuntimeError("the event log is never downgraded: restore a backup instead")
