"""Errors of the event store. Driver exceptions are translated into these inside the adapters."""

from typing import ClassVar

from events.errors import AccelOptError

__all__ = [
    "BlobNotFound",
    "DatabaseNotFound",
    "IdempotencyConflict",
    "InvalidPayload",
    "NotAnAccelOptDatabase",
    "SchemaMismatch",
    "StoreBusy",
    "StoreError",
    "WrongExpectedVersion",
]


class StoreError(AccelOptError):
    """Something went wrong in the event database."""


class BlobNotFound(StoreError):
    """The log holds no blob with this hash (an event naming text that was never stored)."""


class WrongExpectedVersion(StoreError):
    """Optimistic concurrency: the stream is not at the version the appender expected."""

    exit_code: ClassVar[int] = 6

    def __init__(self, stream_id: str, expected: str, actual: int) -> None:
        actual_text = "does not exist" if actual == 0 else f"is at version {actual}"
        super().__init__(f"stream {stream_id!r} {actual_text}; the append expected {expected}")
        self.stream_id = stream_id
        self.actual = actual


class IdempotencyConflict(StoreError):
    """An idempotency key was reused for a different append."""

    exit_code: ClassVar[int] = 6


class InvalidPayload(StoreError):
    """An event payload that no database could store as given (NaN, NUL, non-JSON types)."""


class StoreBusy(StoreError):
    """The database stayed locked by another writer past the timeout."""

    exit_code: ClassVar[int] = 7


class DatabaseNotFound(StoreError):
    exit_code: ClassVar[int] = 3


class DatabaseUnreachable(StoreError):
    """The database cannot be reached at all (no server there, no such database, no
    permission)."""

    exit_code: ClassVar[int] = 3


class BadDatabaseUrl(StoreError):
    """A database URL that does not parse, or names a database accelopt does not speak."""

    exit_code: ClassVar[int] = 2


class NotAnAccelOptDatabase(StoreError):
    exit_code: ClassVar[int] = 3


class SchemaMismatch(StoreError):
    """The database schema is older or newer than this code's."""

    exit_code: ClassVar[int] = 4
