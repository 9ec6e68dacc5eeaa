"""The event store on SQLAlchemy Core: SQLite (one host) and PostgreSQL (many hosts).

Appends are serialized so that commit order is position order and positions are dense:
SQLite serializes writers itself (`BEGIN IMMEDIATE`); on PostgreSQL the append takes
`LOCK TABLE events IN EXCLUSIVE MODE` (readers are not blocked) and assigns positions
under it, so a reader can never see position n+1 before n is committed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from typing import Any

import orjson
import psycopg
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.engine import Connection, Engine

from events.envelope import ExpectedVersion, NewEvent, StoredEvent
from store.base import (
    AppendResult,
    Checkpoint,
    EventStore,
    LocalWakeup,
    Snapshot,
    Waiter,
    blob_hash,
    compress_blob,
    decompress_blob,
    new_event_id,
    resolve_duplicate,
    validate_batch,
)
from store.engine import make_engine, read_connection, translated, write_transaction
from store.errors import BlobNotFound, StoreError, WrongExpectedVersion
from store.migrate import check_current, describe
from store.schema import (
    NOTIFY_CHANNEL,
    blobs,
    events,
    projection_checkpoints,
    projection_snapshots,
)
from store.scrub import Scrubber

__all__ = ["SqlEventStore"]

PG_LOCK_TIMEOUT = "30s"
READ_PAGE = 5000
BLOBS_PER_QUERY = 500
"""Hashes per `IN (...)` of a batch blob read (SQLite allows 32766 parameters; kept small)."""


def _event_columns(dialect: str) -> tuple[sa.ColumnElement[Any], ...]:
    """The columns of a StoredEvent, untyped on purpose: replays read millions of rows, and
    SQLAlchemy's per-column result processing costs more than the fold; `_stored` converts.
    PostgreSQL sends jsonb as text, which orjson parses twice as fast as the driver's loader."""
    selected = []
    for column in (
        events.c.position,
        events.c.event_id,
        events.c.stream_id,
        events.c.stream_version,
        events.c.type,
        events.c.schema_version,
        events.c.data,
        events.c["metadata"],
        events.c.idempotency_key,
        events.c.recorded_at,
    ):
        is_json = column.name in ("data", "metadata") and dialect == "postgresql"
        value = sa.cast(column, sa.Text) if is_json else column
        selected.append(sa.type_coerce(value, sa.types.NullType()).label(column.name))
    return tuple(selected)


EMPTY_JSON_OBJECT = ("{}", b"{}")


def _json(value: Any) -> Any:
    """SQLite hands back the JSON text; psycopg has already parsed jsonb. An empty object (most
    events' metadata) is not parsed at all."""
    if isinstance(value, str | bytes):
        return {} if value in EMPTY_JSON_OBJECT else orjson.loads(value)
    return value


def _utc(value: Any) -> datetime:
    """SQLite hands back 'YYYY-MM-DD HH:MM:SS.ffffff' in UTC; psycopg an aware datetime."""
    if isinstance(value, str):
        return datetime.fromisoformat(value + "+00:00")  # 5x faster than .replace(tzinfo=)
    assert isinstance(value, datetime)
    return value.astimezone(UTC)


def _stored(row: Any) -> StoredEvent:
    """A row of `_event_columns`, in StoredEvent's field order."""
    position, event_id, stream_id, version, type_, schema, data, meta, key, recorded = row
    return StoredEvent(
        position,
        event_id,
        stream_id,
        version,
        type_,
        schema,
        _json(data),
        _json(meta),
        key,
        _utc(recorded),
    )


def _fetch_tuples(connection: Connection, query: sa.Select[Any]) -> Sequence[Any]:
    """The rows as the driver returns them: SQLAlchemy's Row objects cost a replay a tenth of
    its time, and `_stored` reads plain tuples as well."""
    compiled = query.compile(
        dialect=connection.dialect, compile_kwargs={"render_postcompile": True}
    )
    params = compiled.construct_params()
    arguments: Any = (
        tuple(params[name] for name in compiled.positiontup or ())
        if compiled.positional
        else params
    )
    driver_error = connection.dialect.loaded_dbapi.Error
    cursor = connection.connection.cursor()
    try:
        cursor.execute(compiled.string, arguments)
        return cursor.fetchall()
    except driver_error as e:  # as SQLAlchemy would have wrapped it, for `translated`
        raise sa.exc.DBAPIError.instance(compiled.string, arguments, e, driver_error) from e
    finally:
        cursor.close()


class _PostgresListener:
    """LISTEN on a dedicated autocommit connection; notifications are wake-up hints.

    The channel is shared by every schema of the database, so a notification counts only when
    its payload ("schema:position") names this connection's schema and a position past the
    waiter's: another log's appends (another accelopt, a benchmark) wake nobody here.

    A psycopg connection must not be closed by one thread while another waits on it, so
    `close()` only flags; the waiting thread, which wakes at least every WAKE_SLICE seconds,
    closes the connection itself.
    """

    WAKE_SLICE = 0.25

    def __init__(self, url: sa.URL) -> None:
        conninfo = url.set(drivername="postgresql").render_as_string(hide_password=False)
        self._connection = psycopg.connect(conninfo, autocommit=True)
        self._connection.execute(f"LISTEN {NOTIFY_CHANNEL}")
        row = self._connection.execute("SELECT current_schema()").fetchone()
        self._schema = row[0] if row else None
        self._lock = threading.Lock()
        self._waiting = False
        self._closed = threading.Event()

    def wait(self, after: int, timeout: float) -> bool:
        with self._lock:
            if self._closed.is_set():
                return False
            self._waiting = True
        try:
            deadline = time.monotonic() + timeout
            while not self._closed.is_set():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                slice_ = min(remaining, self.WAKE_SLICE)
                for notify in self._connection.notifies(timeout=slice_, stop_after=1):
                    if self._concerns(notify.payload, after):
                        return True
            return False
        finally:
            with self._lock:
                self._waiting = False
                if self._closed.is_set():
                    self._connection.close()

    def _concerns(self, payload: str, after: int) -> bool:
        schema, _, position = payload.rpartition(":")
        return schema == self._schema and position.isdigit() and int(position) > after

    def close(self) -> None:
        with self._lock:
            self._closed.set()
            if not self._waiting:
                self._connection.close()


def _utcnow() -> datetime:
    return datetime.now(UTC)


PROBE_NAME = "accelopt:write-probe"
"""A checkpoint row no projection has: the daemon writes it to learn whether writes work."""


class SqlEventStore(EventStore):
    """The event store on a SQLite file or a PostgreSQL database at schema head."""

    def __init__(
        self, engine: Engine, *, check_schema: bool = True, scrubber: Scrubber | None = None
    ) -> None:
        if check_schema:
            check_current(engine)
        self.engine = engine
        if scrubber is not None:
            self.scrubber = scrubber
        self.dialect = engine.dialect.name
        self._columns = _event_columns(self.dialect)
        self._wakeup = LocalWakeup()

    @classmethod
    def open(
        cls, url: str | sa.URL, *, check_schema: bool = True, scrubber: Scrubber | None = None
    ) -> SqlEventStore:
        engine = make_engine(url)
        try:
            return cls(engine, check_schema=check_schema, scrubber=scrubber)
        except BaseException:
            engine.dispose()
            raise

    def close(self) -> None:
        self._wakeup.close()
        self.engine.dispose()

    def describe(self) -> str:
        return describe(self.engine.url)

    def _translated(self, action: str) -> AbstractContextManager[None]:
        """The one seam where driver errors become accelopt errors."""
        return translated(self.describe(), action)

    @contextmanager
    def _read(self, action: str = "read") -> Iterator[Connection]:
        with self._translated(action), read_connection(self.engine) as connection:
            yield connection

    @contextmanager
    def _write(self, action: str = "write") -> Iterator[Connection]:
        with self._translated(action), write_transaction(self.engine) as connection:
            yield connection

    # --- writing ---------------------------------------------------------------------------

    def _append(
        self,
        stream_id: str,
        events_: Sequence[NewEvent],
        *,
        expected_version: ExpectedVersion,
    ) -> AppendResult:
        keys = validate_batch(stream_id, events_)
        now = _utcnow()
        with self._write("append") as connection:
            result = self._append_locked(
                connection, stream_id, events_, keys, expected_version=expected_version, now=now
            )
        if not result.duplicate:
            self._wakeup.notify(result.last_position)
        return result

    def _append_locked(
        self,
        connection: Connection,
        stream_id: str,
        new_events: Sequence[NewEvent],
        keys: list[str],
        *,
        expected_version: ExpectedVersion,
        now: datetime,
    ) -> AppendResult:
        if self.dialect == "postgresql":
            connection.exec_driver_sql(f"SET LOCAL lock_timeout = '{PG_LOCK_TIMEOUT}'")
            connection.exec_driver_sql("LOCK TABLE events IN EXCLUSIVE MODE")
        if keys:
            existing = [
                _stored(row)
                for row in connection.execute(
                    sa.select(*self._columns).where(events.c.idempotency_key.in_(keys))
                )
            ]
            if existing:
                return resolve_duplicate(stream_id, new_events, existing)
        current = connection.execute(
            sa.select(sa.func.max(events.c.stream_version)).where(events.c.stream_id == stream_id)
        ).scalar_one_or_none()
        current = current or 0
        if not expected_version.admits(current):
            raise WrongExpectedVersion(stream_id, expected_version.describe(), current)
        last = connection.execute(
            sa.select(events.c.position, events.c.recorded_at)
            .order_by(events.c.position.desc())
            .limit(1)
        ).first()
        head = last.position if last is not None else 0
        # Recording times never go backwards, so "the log as of time T" is a prefix.
        recorded_at = max(now, last.recorded_at) if last is not None else now
        rows = [
            {
                "position": head + i,
                "event_id": e.event_id or new_event_id(),
                "stream_id": stream_id,
                "stream_version": current + i,
                "type": e.type,
                "schema_version": e.schema_version,
                "data": e.data,
                "metadata": e.metadata,
                "idempotency_key": e.idempotency_key,
                "recorded_at": recorded_at,
            }
            for i, e in enumerate(new_events, start=1)
        ]
        connection.execute(events.insert(), rows)
        last_position = head + len(rows)
        if self.dialect == "postgresql":
            # One notification per transaction, delivered at commit: a hint for listeners. The
            # channel is the database's, so the payload names the log (its schema).
            payload = sa.func.concat(sa.func.current_schema(), ":", str(last_position))
            connection.execute(sa.select(sa.func.pg_notify(NOTIFY_CHANNEL, payload)))
        return AppendResult(
            first_position=head + 1,
            last_position=last_position,
            stream_version=current + len(rows),
        )

    # --- reading ---------------------------------------------------------------------------

    def read_all(
        self,
        *,
        after: int = 0,
        until: int | None = None,
        types: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> Iterator[StoredEvent]:
        # Page by position: short read transactions, bounded memory, no cursor held open.
        remaining = limit
        while remaining is None or remaining > 0:
            page = READ_PAGE if remaining is None else min(READ_PAGE, remaining)
            query = sa.select(*self._columns).where(events.c.position > after)
            if until is not None:
                query = query.where(events.c.position <= until)
            if types is not None:
                query = query.where(events.c.type.in_(list(types)))
            # the page size inline, so that PostgreSQL plans each page knowing its size
            query = query.order_by(events.c.position).limit(
                sa.bindparam("page", page, literal_execute=True)
            )
            with self._read() as connection:
                rows = _fetch_tuples(connection, query)
            for row in rows:
                yield _stored(row)
            if len(rows) < page:
                return
            after = rows[-1][0]  # the position
            if remaining is not None:
                remaining -= len(rows)

    def read_stream(self, stream_id: str, *, after_version: int = 0) -> list[StoredEvent]:
        query = (
            sa.select(*self._columns)
            .where(events.c.stream_id == stream_id, events.c.stream_version > after_version)
            .order_by(events.c.stream_version)
        )
        with self._read() as connection:
            return [_stored(row) for row in connection.execute(query)]

    def _scalar(self, query: sa.Select[Any]) -> Any:
        with self._read() as connection:
            return connection.execute(query).scalar_one_or_none()

    def head(self) -> int:
        return int(self._scalar(sa.select(sa.func.max(events.c.position))) or 0)

    def stream_version(self, stream_id: str) -> int:
        query = sa.select(sa.func.max(events.c.stream_version)).where(
            events.c.stream_id == stream_id
        )
        return int(self._scalar(query) or 0)

    def position_at(self, time: datetime) -> int:
        query = sa.select(sa.func.max(events.c.position)).where(events.c.recorded_at <= time)
        return int(self._scalar(query) or 0)

    def waiter(self) -> Waiter:
        if self.dialect == "postgresql":
            try:
                return _PostgresListener(self.engine.url)
            except psycopg.Error as e:
                raise StoreError(f"{self.describe()}: cannot LISTEN for new events: {e}") from e
        return self._wakeup.subscriber()

    # --- blobs -----------------------------------------------------------------------------

    def _insert(self) -> Any:
        return pg_dialect.insert if self.dialect == "postgresql" else sqlite_dialect.insert

    def _put_blob(self, raw: bytes) -> str:
        return self._put_blobs([raw])[0]

    def _put_blobs(self, raws: list[bytes]) -> list[str]:
        """One transaction for all: on SQLite each commit is a sync to disk."""
        digests = []
        statements = []
        for raw in raws:
            digest = blob_hash(raw)
            compression, stored = compress_blob(raw)
            digests.append(digest)
            statements.append(
                self._insert()(blobs)
                .values(
                    sha256=digest,
                    size=len(raw),
                    compression=compression,
                    content=stored,
                    created_at=_utcnow(),
                )
                .on_conflict_do_nothing(index_elements=["sha256"])
            )
        with self._write() as connection:
            for statement in statements:
                connection.execute(statement)
        return digests

    def get_blob(self, sha256: str) -> bytes:
        query = sa.select(blobs.c.compression, blobs.c.content).where(blobs.c.sha256 == sha256)
        with self._read() as connection:
            row = connection.execute(query).first()
        if row is None:
            raise BlobNotFound(f"{self.describe()}: no blob {sha256}")
        return decompress_blob(row.compression, row.content)

    def get_texts(self, hashes: Iterable[str]) -> dict[str, str]:
        wanted = sorted(set(hashes))
        found = {}
        with self._read() as connection:
            for start in range(0, len(wanted), BLOBS_PER_QUERY):
                chunk = wanted[start : start + BLOBS_PER_QUERY]
                query = sa.select(blobs.c.sha256, blobs.c.compression, blobs.c.content).where(
                    blobs.c.sha256.in_(chunk)
                )
                for sha256, compression, content in connection.execute(query):
                    found[sha256] = decompress_blob(compression, content).decode("utf-8")
        return found

    # --- projections -----------------------------------------------------------------------

    def load_checkpoint(self, name: str) -> Checkpoint | None:
        c = projection_checkpoints.c
        query = sa.select(c.name, c.position, c.code_version, c.state).where(c.name == name)
        with self._read() as connection:
            row = connection.execute(query).first()
        return None if row is None else Checkpoint(*row)

    def save_checkpoint(self, checkpoint: Checkpoint, *, previous: Checkpoint | None) -> None:
        c = projection_checkpoints.c
        values = {
            "position": checkpoint.position,
            "code_version": checkpoint.code_version,
            "state": checkpoint.state,
            "updated_at": _utcnow(),
        }
        with self._write() as connection:
            # RETURNING, not rowcount: psycopg reports -1 for INSERT ... ON CONFLICT.
            if previous is None:
                written = connection.execute(
                    self._insert()(projection_checkpoints)
                    .values(name=checkpoint.name, **values)
                    .on_conflict_do_nothing(index_elements=["name"])
                    .returning(c.name)
                ).all()
            else:
                written = connection.execute(
                    projection_checkpoints.update()
                    .where(
                        c.name == checkpoint.name,
                        c.position == previous.position,
                        c.code_version == previous.code_version,
                    )
                    .values(**values)
                    .returning(c.name)
                ).all()
            if len(written) != 1:
                raise StoreError(
                    f"projection {checkpoint.name!r} was saved by another runner meanwhile; "
                    "only one process may maintain a projection"
                )

    def probe_write(self) -> None:
        """Write one small row, committed: reads can work while writes cannot (a full disk, a
        read-only database), and only a write tells. StoreError if it fails."""
        values = {"position": 0, "code_version": "probe", "state": {}, "updated_at": _utcnow()}
        statement = (
            self._insert()(projection_checkpoints)
            .values(name=PROBE_NAME, **values)
            .on_conflict_do_update(index_elements=["name"], set_=values)
        )
        with self._write("write probe") as connection:
            connection.execute(statement)

    def save_snapshot(self, snapshot: Snapshot) -> None:
        statement = (
            self._insert()(projection_snapshots)
            .values(
                name=snapshot.name,
                code_version=snapshot.code_version,
                position=snapshot.position,
                state=snapshot.state,
                created_at=_utcnow(),
            )
            .on_conflict_do_nothing(index_elements=["name", "code_version", "position"])
        )
        with self._write() as connection:
            connection.execute(statement)

    def latest_snapshot(self, name: str, code_version: str, *, at_most: int) -> Snapshot | None:
        c = projection_snapshots.c
        query = (
            sa.select(c.name, c.code_version, c.position, c.state)
            .where(c.name == name, c.code_version == code_version, c.position <= at_most)
            .order_by(c.position.desc())
            .limit(1)
        )
        with self._read() as connection:
            row = connection.execute(query).first()
        return None if row is None else Snapshot(*row)

    def prune_snapshots(self, name: str, code_version: str, *, keep: int) -> int:
        c = projection_snapshots.c
        with self._write() as connection:
            kept = [
                row.position
                for row in connection.execute(
                    sa.select(c.position)
                    .where(c.name == name, c.code_version == code_version)
                    .order_by(c.position.desc())
                    .limit(keep)
                )
            ]
            stale = sa.or_(c.code_version != code_version, c.position.not_in(kept))
            deleted = connection.execute(
                projection_snapshots.delete().where(c.name == name, stale).returning(c.position)
            ).all()
            return len(deleted)
