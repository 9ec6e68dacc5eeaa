"""What every command shares: the settings, read once, and the database it works on."""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass

import click

from daemon.settings import Settings
from store.engine import make_engine
from store.migrate import upgrade
from store.sql import SqlEventStore

__all__ = ["AppContext", "app_context", "open_migrated_store"]


@dataclass
class AppContext:
    settings: Settings
    db_override: str | None

    @property
    def database_url(self) -> str:
        return self.settings.database_url(self.db_override)

    def open_store(self, ctx: click.Context) -> SqlEventStore:
        """The event store for this command, closed when the command ends."""
        return ctx.with_resource(closing(SqlEventStore.open(self.database_url)))


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
