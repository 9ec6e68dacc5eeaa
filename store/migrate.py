"""Schema migrations (Alembic) and the check that a database is an accelopt database.

Tables are created by migrations only, never by `metadata.create_all`, so that every
database in the field has a revision and can be upgraded from it.
"""

from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Engine

from store.engine import WRITE_OPTION, sqlite_path
from store.errors import (
    DatabaseNotFound,
    DatabaseUnreachable,
    NotAnAccelOptDatabase,
    SchemaMismatch,
    StoreError,
)

__all__ = ["check_current", "describe", "head_revision", "inspect_revision", "upgrade"]

_OUR_TABLES = frozenset(
    {"alembic_version", "events", "blobs", "projection_checkpoints", "projection_snapshots"}
)


def describe(url: sa.URL) -> str:
    """How to name this database to a user (no password)."""
    path = sqlite_path(url)
    if path is not None:
        return str(path)
    return url.set(drivername=url.get_backend_name()).render_as_string(hide_password=True)


def _config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(Path(__file__).with_name("migrations")))
    return config


def _script() -> ScriptDirectory:
    return ScriptDirectory.from_config(_config())


def head_revision() -> str:
    head = _script().get_current_head()
    assert head is not None
    return head


def _translate(error: sa.exc.DBAPIError, url: sa.URL) -> StoreError:
    text = str(error.orig)
    if "not a database" in text:
        return NotAnAccelOptDatabase(f"{describe(url)} is not an SQLite database ({text})")
    if isinstance(error, sa.exc.OperationalError):
        # the server or the file cannot be reached: the documented exit status 3
        return DatabaseUnreachable(f"cannot open the database {describe(url)}: {text.strip()}")
    return StoreError(f"database {describe(url)}: {text.strip()}")


def inspect_revision(engine: Engine) -> str | None:
    """The schema revision of the database; None for an empty one.

    Raises NotAnAccelOptDatabase when the database is not SQLite, or holds other tables.
    """
    url = engine.url
    path = sqlite_path(url)
    if path is not None and not path.exists():
        raise DatabaseNotFound(
            f"no database at {path}: run `accelopt db upgrade` (or start the daemon) to create it"
        )
    try:
        with engine.connect() as connection:
            tables = set(sa.inspect(connection).get_table_names())
            revision = MigrationContext.configure(connection).get_current_revision()
    except sa.exc.DBAPIError as e:
        raise _translate(e, url) from e
    if revision is None and tables:
        foreign = ", ".join(sorted(tables - _OUR_TABLES)[:5])
        raise NotAnAccelOptDatabase(
            f"{describe(url)} is not an accelopt database (it holds other tables: {foreign}); "
            "choose another --db"
        )
    if revision is not None and revision not in {r.revision for r in _script().walk_revisions()}:
        raise SchemaMismatch(
            f"{describe(url)} is at schema revision {revision!r}, which this accelopt does not "
            "know: it was written by a newer accelopt or belongs to another application"
        )
    return revision


def check_current(engine: Engine) -> None:
    """Raise unless the database exists and is at this code's schema revision."""
    revision = inspect_revision(engine)
    if revision is None:
        raise DatabaseNotFound(
            f"{describe(engine.url)} has no accelopt tables yet: run `accelopt db upgrade`"
        )
    if revision != head_revision():
        raise SchemaMismatch(
            f"{describe(engine.url)} is at schema revision {revision}, this accelopt needs "
            f"{head_revision()}: run `accelopt db upgrade`"
        )


def upgrade(engine: Engine) -> tuple[str | None, str]:
    """Migrate to head; returns (revision before, revision after). Creates a SQLite file."""
    path = sqlite_path(engine.url)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(exist_ok=True)
    before = inspect_revision(engine)
    config = _config()
    try:
        with engine.connect() as connection:
            connection.execution_options(**{WRITE_OPTION: True})
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
            connection.commit()
    except sa.exc.DBAPIError as e:
        raise _translate(e, engine.url) from e
    return before, head_revision()
