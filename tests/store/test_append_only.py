"""The log and the blobs are append-only inside the database, whoever connects."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import sqlalchemy as sa

from events.codec import encode
from store.sql import SqlEventStore
from tests.support import factories

STATEMENTS = [
    "UPDATE events SET type = 'Forged'",
    "UPDATE events SET data = '{}' WHERE position = 1",
    "DELETE FROM events",
    "DELETE FROM events WHERE position = 1",
    "UPDATE blobs SET content = content",
    "DELETE FROM blobs",
]


@pytest.mark.parametrize("statement", STATEMENTS)
def test_update_and_delete_fail_in_the_database(
    db_url: Callable[[], str], open_stores: Callable[[str], SqlEventStore], statement: str
) -> None:
    store = open_stores(db_url())
    store.append("s", [encode(factories.removed("t"))])
    store.put_blob("kernel source")
    # A raw engine without accelopt's code path: the refusal must come from the database.
    raw = sa.create_engine(store.engine.url)
    try:
        with pytest.raises(sa.exc.DBAPIError, match="append-only"), raw.begin() as connection:
            connection.exec_driver_sql(statement)
    finally:
        raw.dispose()
    assert store.head() == 1
    assert next(store.read_all()).type == "KernelRemoved"


@pytest.mark.postgres
@pytest.mark.parametrize("table", ["events", "blobs"])
def test_truncate_fails_on_postgres(
    fresh_pg_url: Callable[[], str], open_stores: Callable[[str], SqlEventStore], table: str
) -> None:
    store = open_stores(fresh_pg_url())
    store.append("s", [encode(factories.removed("t"))])
    with pytest.raises(sa.exc.DBAPIError, match="append-only"), store.engine.begin() as c:
        c.exec_driver_sql(f"TRUNCATE {table}")
    assert store.head() == 1
