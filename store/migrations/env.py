"""Alembic environment: migrates the connection handed over by `store.migrate`, or else the
database named by ACCELOPT_DB when a developer runs the `alembic` command directly."""

import os

from alembic import context
from sqlalchemy.engine import Connection

from store.engine import WRITE_OPTION, make_engine
from store.schema import metadata

config = context.config


def _ours(name: str | None, kind: str, _parents: object) -> bool:
    """procrastinate's tables (PostgreSQL) follow its schema, not store.schema: migration
    0003 creates them from the pinned release, and autogenerate must leave them alone."""
    return not (kind == "table" and name is not None and name.startswith("procrastinate_"))


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        include_name=_ours,
    )
    with context.begin_transaction():
        context.run_migrations()


def _main() -> None:
    if context.is_offline_mode():
        raise SystemExit("accelopt migrations run online only (they create triggers per dialect)")
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    url = os.environ.get("ACCELOPT_DB")
    if not url:
        raise SystemExit("set ACCELOPT_DB to the database URL, or use `accelopt db upgrade`")
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            conn.execution_options(**{WRITE_OPTION: True})
            _run(conn)
    finally:
        engine.dispose()


_main()
