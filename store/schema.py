"""The tables of the event database, in one place. Only Alembic creates them.

The log is append-only: triggers written by the migrations make UPDATE and DELETE (and
TRUNCATE on PostgreSQL) fail inside the database, whoever connects.
"""

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Dialect

__all__ = [
    "APPEND_ONLY_TABLES",
    "NOTIFY_CHANNEL",
    "blobs",
    "events",
    "jobs",
    "metadata",
    "projection_checkpoints",
    "projection_snapshots",
]

NOTIFY_CHANNEL = "accelopt_events"
APPEND_ONLY_TABLES = ("events", "blobs")


class UTCDateTime(sa.types.TypeDecorator[datetime]):
    """Aware UTC datetimes on both databases (SQLite keeps no zone; PostgreSQL uses timestamptz)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        assert isinstance(value, datetime)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


JSONDocument = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
Position = sa.BigInteger().with_variant(sa.Integer(), "sqlite")  # SQLite: rowid alias

metadata = sa.MetaData()

events = sa.Table(
    "events",
    metadata,
    sa.Column("position", Position, primary_key=True, autoincrement=False),
    sa.Column("event_id", sa.String(36), nullable=False, unique=True),
    sa.Column("stream_id", sa.String(255), nullable=False),
    sa.Column("stream_version", sa.Integer, nullable=False),
    sa.Column("type", sa.String(128), nullable=False),
    sa.Column("schema_version", sa.Integer, nullable=False),
    sa.Column("data", JSONDocument, nullable=False),
    sa.Column("metadata", JSONDocument, nullable=False),
    sa.Column("idempotency_key", sa.String(512), nullable=True, unique=True),
    sa.Column("recorded_at", UTCDateTime, nullable=False),
    sa.UniqueConstraint("stream_id", "stream_version", name="uq_events_stream_version"),
    sa.Index("ix_events_type_position", "type", "position"),
    sa.Index("ix_events_recorded_at", "recorded_at"),
)

blobs = sa.Table(
    "blobs",
    metadata,
    sa.Column("sha256", sa.String(64), primary_key=True),
    sa.Column("size", sa.BigInteger, nullable=False),
    sa.Column("compression", sa.String(16), nullable=False),
    sa.Column("content", sa.LargeBinary, nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
)

projection_checkpoints = sa.Table(
    "projection_checkpoints",
    metadata,
    sa.Column("name", sa.String(128), primary_key=True),
    sa.Column("position", sa.BigInteger, nullable=False),
    sa.Column("code_version", sa.String(64), nullable=False),
    sa.Column("state", JSONDocument, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
)
"""A projection's state and the position it reflects, in one row: written together or not."""

projection_snapshots = sa.Table(
    "projection_snapshots",
    metadata,
    sa.Column("name", sa.String(128), primary_key=True),
    sa.Column("code_version", sa.String(64), primary_key=True),
    sa.Column("position", sa.BigInteger, primary_key=True),
    sa.Column("state", JSONDocument, nullable=False),
    sa.Column("created_at", UTCDateTime, nullable=False),
)
"""A cache of states at past positions; never the truth, dropped when code_version changes."""

jobs = sa.Table(
    "jobs",
    metadata,
    sa.Column("job_id", sa.String(255), primary_key=True),
    sa.Column("task", sa.String(255), nullable=False),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("payload", JSONDocument, nullable=False),
    sa.Column("priority", sa.Float, nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("worker", sa.String(128), nullable=True),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("result", JSONDocument, nullable=True),
    sa.Column("created_at", UTCDateTime, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
    sa.Column("started_at", UTCDateTime, nullable=True),
    sa.Column("finished_at", UTCDateTime, nullable=True),
    sa.Column("queue", sa.String(255), nullable=True),
    sa.Column("failed_runs", JSONDocument, nullable=True),
    sa.Index("ix_jobs_state_priority", "state", "priority", "created_at"),
)
"""Work waiting for a device (profiles): a queue, mutable, not part of the log. A job's
result is recorded as an event by whoever asked for it; the row only carries it across a
restart, so that finished work is never done again. `queue` is the queue it was submitted on
(store.jobs.base: routing is an argument, never read from the payload). `failed_runs`: the
runs the infrastructure failed, `[{"worker", "error"}]` (None: none), which decide when the job
ends `failed` (store.jobs.base.GiveUp)."""
