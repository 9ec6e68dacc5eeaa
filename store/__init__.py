"""The event log (SQLite or PostgreSQL through SQLAlchemy Core), blobs, and projections."""

from store.base import AppendResult, Checkpoint, EventStore, Snapshot, Subscription
from store.errors import (
    DatabaseNotFound,
    IdempotencyConflict,
    InvalidPayload,
    NotAnAccelOptDatabase,
    SchemaMismatch,
    StoreBusy,
    StoreError,
    WrongExpectedVersion,
)
from store.memory import MemoryEventStore
from store.sql import SqlEventStore

__all__ = [
    "AppendResult",
    "Checkpoint",
    "DatabaseNotFound",
    "EventStore",
    "IdempotencyConflict",
    "InvalidPayload",
    "MemoryEventStore",
    "NotAnAccelOptDatabase",
    "SchemaMismatch",
    "Snapshot",
    "SqlEventStore",
    "StoreBusy",
    "StoreError",
    "Subscription",
    "WrongExpectedVersion",
]
