"""What every command shares: the settings, read once, and the database it works on."""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass

import click

from daemon.settings import Settings
from store.sql import SqlEventStore

__all__ = ["AppContext", "app_context"]


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
