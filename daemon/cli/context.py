"""What every command shares: the settings, read once, the database it works on, the secrets
kept out of what it records, and the sandbox its kernels run in."""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass, field
from functools import cached_property

import click

from daemon.secrets import scrubber_for
from daemon.settings import Settings
from nkibench.sandbox.isolation import Isolation
from store.engine import make_engine
from store.migrate import upgrade
from store.scrub import Scrubber
from store.sql import SqlEventStore

__all__ = ["AppContext", "app_context", "open_migrated_store"]

UNSAFE_WARNING = (
    "accelopt: WARNING: no OS sandbox ({reason}); kernels run behind the Python-level checks "
    "alone, which do not stop a determined kernel from reading files or secrets"
)


@dataclass
class AppContext:
    settings: Settings
    db_override: str | None
    unsafe_sandbox: bool = False
    _isolation: Isolation | None = field(default=None, repr=False)

    @property
    def database_url(self) -> str:
        return self.settings.database_url(self.db_override)

    @cached_property
    def scrubber(self) -> Scrubber:
        return scrubber_for(self.settings, self.database_url)

    def open_store(self, ctx: click.Context) -> SqlEventStore:
        """The event store for this command, closed when the command ends."""
        store = SqlEventStore.open(self.database_url, scrubber=self.scrubber)
        return ctx.with_resource(closing(store))

    def isolation(self) -> Isolation:
        """The OS sandbox for this command's kernels (detected once): bubblewrap, or with
        --unsafe-sandbox the Python checks alone, said on stderr."""
        if self._isolation is None:
            self._isolation = self.settings.isolation(allow_unsafe=self.unsafe_sandbox)
            if not self._isolation.contained:
                click.echo(UNSAFE_WARNING.format(reason=self._isolation.reason), err=True)
        return self._isolation


def app_context(ctx: click.Context) -> AppContext:
    app = ctx.find_object(AppContext)
    assert app is not None
    return app


def open_migrated_store(ctx: click.Context) -> SqlEventStore:
    """The command's event store, its database first migrated as the daemon does at start
    (a fresh machine needs no `db upgrade`)."""
    app = app_context(ctx)
    engine = make_engine(app.database_url)
    try:
        upgrade(engine)
    finally:
        engine.dispose()
    return app.open_store(ctx)
