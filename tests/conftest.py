"""Fixtures: a real SQLite file, a fresh schema on a real PostgreSQL server, the memory store.

PostgreSQL comes from ACCELOPT_TEST_PG_URL (default: the local server every development and
CI machine runs). If it cannot be reached the PostgreSQL tests fail; they never skip.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from store.base import EventStore
from store.engine import make_engine, normalize_url
from store.memory import MemoryEventStore
from store.migrate import upgrade
from store.sql import SqlEventStore
from tests.support.daemon_process import HOST_SETTINGS
from tests.support.postgres import PostgresServer

pytest_plugins = ["tests.support.gpu"]

# One BLAS thread in each process the tests start (xdist's workers, daemons, workers, the
# CLI): four workers on two cores each ran a BLAS thread per core, and OpenBLAS's threads spin
# while they wait for a core. The matmul ladder's fixture took 16 CPU seconds that way beside
# four busy processes, and 4.4 s with one thread. Sandboxed children set their own thread
# counts (nkibench.sandbox.environment).
for _blas in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_blas, "1")

PG_URL = os.environ.get("ACCELOPT_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
E2E = Path(__file__).with_name("e2e")
E2E_TIMEOUT_S = 900


TEST_KNOBS = (
    "ACCELOPT_TEST_PG_URL",
    "ACCELOPT_NEURON",
    "ACCELOPT_NEURON_CORE",
    *HOST_SETTINGS,
)
"""The suite's own settings (read as its files are imported), and the host's sandbox settings
(a GPU host in gVisor runs without bubblewrap: ACCELOPT_SANDBOX=none), not a developer's."""


@pytest.fixture(scope="session", autouse=True)
def clean_environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """No test sees the developer's accelopt settings (ACCELOPT_DB, ACCELOPT_LLM_*, ...), and
    none writes under their home: ACCELOPT_HOME is a temporary folder for the whole session. A
    test that wants a setting sets it itself."""
    home = tmp_path_factory.mktemp("accelopt-home")
    with pytest.MonkeyPatch.context() as patch:
        for key in [k for k in os.environ if k.startswith("ACCELOPT_") and k not in TEST_KNOBS]:
            patch.delenv(key)
        patch.setenv("ACCELOPT_HOME", str(home))
        yield home


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Everything under tests/e2e runs accelopt's own processes end to end (daemons, workers,
    the scripted LLM server): `e2e` and `slow`. `make test` leaves them to `make e2e`, and CI
    runs both. They wait on purpose (kills, restarts, a soak, many hosts) for up to
    E2E_TIMEOUT_S each: on a 2-core host of this kind that ran 2.5x slower one day than the
    next, a search of thirty tasks over three hosts once took 300 s. Files keep the order of
    their names: putting the end-to-end files first (so that quick files fill the gaps at the
    end) ran up to a dozen processes at once on two cores, took as long, and made a timing
    test fail."""
    for item in items:
        if E2E in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.slow)
            if item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(E2E_TIMEOUT_S))


UrlFactory = Callable[[], str]


SCHEMA_PREFIX = "accelopt_test_"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@pytest.fixture(scope="session")
def pg_admin() -> Iterator[sa.Engine]:
    engine = make_engine(PG_URL)
    try:
        with engine.begin() as connection:
            schemas = connection.execute(
                sa.text("SELECT nspname FROM pg_namespace WHERE starts_with(nspname, :prefix)"),
                {"prefix": SCHEMA_PREFIX},
            ).scalars()
            # Schemas of test runs that were killed before their teardown: drop them.
            for schema in list(schemas):
                pid = schema.removeprefix(SCHEMA_PREFIX).split("_")[0]
                if pid.isdigit() and not _alive(int(pid)):
                    connection.exec_driver_sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    except sa.exc.OperationalError as e:
        pytest.fail(f"PostgreSQL at {PG_URL} is unreachable (set ACCELOPT_TEST_PG_URL): {e.orig}")
    yield engine
    engine.dispose()


@pytest.fixture
def postgres_server(pg_admin: sa.Engine) -> Iterator[PostgresServer]:
    server = PostgresServer()
    yield server
    server.close()


@pytest.fixture
def fresh_pg_url(pg_admin: sa.Engine, postgres_server: PostgresServer) -> Iterator[UrlFactory]:
    """Makes migrated PostgreSQL databases: each a schema of its own, dropped afterwards."""
    schemas: list[str] = []

    def make() -> str:
        schema = f"{SCHEMA_PREFIX}{os.getpid()}_{uuid.uuid4().hex[:12]}"
        with pg_admin.begin() as connection:
            connection.exec_driver_sql(f"CREATE SCHEMA {schema}")
        schemas.append(schema)
        url = normalize_url(PG_URL).update_query_dict({"options": f"-csearch_path={schema}"})
        text = url.render_as_string(hide_password=False)
        engine = make_engine(text)
        upgrade(engine)
        engine.dispose()
        return text

    yield make
    with pg_admin.begin() as connection:
        for schema in schemas:
            connection.exec_driver_sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite file, copied for every database a test asks for."""
    path = tmp_path_factory.mktemp("template") / "template.db"
    engine = make_engine(f"sqlite:///{path}")
    upgrade(engine)
    engine.dispose()
    return path


@pytest.fixture
def fresh_sqlite_url(tmp_path: Path, sqlite_template: Path) -> UrlFactory:
    counter = iter(range(1_000_000))

    def make() -> str:
        path = tmp_path / f"events-{next(counter)}.db"
        shutil.copyfile(sqlite_template, path)
        return f"sqlite:///{path}"

    return make


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest) -> UrlFactory:
    """A factory of fresh migrated databases of each SQL backend."""
    name = "fresh_sqlite_url" if request.param == "sqlite" else "fresh_pg_url"
    factory: UrlFactory = request.getfixturevalue(name)
    return factory


@pytest.fixture
def open_stores() -> Iterator[Callable[[str], SqlEventStore]]:
    """Opens SqlEventStores on a URL and closes them all at the end of the test."""
    opened: list[SqlEventStore] = []

    def open_store(url: str) -> SqlEventStore:
        store = SqlEventStore.open(url)
        opened.append(store)
        return store

    yield open_store
    for store in opened:
        store.close()


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(
    request: pytest.FixtureRequest, open_stores: Callable[[str], SqlEventStore]
) -> Iterator[EventStore]:
    """Every adapter of the EventStore port, fresh."""
    if request.param == "memory":
        memory = MemoryEventStore()
        yield memory
        memory.close()
        return
    name = "fresh_sqlite_url" if request.param == "sqlite" else "fresh_pg_url"
    yield open_stores(request.getfixturevalue(name)())


from tests.support.nki_helpers import shadow_modules  # noqa: E402, F401 - a fixture for nkisim tests
