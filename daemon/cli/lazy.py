"""A click group whose commands are imported only when one is run: click's documented
"lazily loading subcommands" pattern. Its table names each command's module and attribute and
carries the command's short help, so that `accelopt --help` lists every command without
importing any (a test holds each entry to its command's own docstring)."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import click

__all__ = ["LazyCommand", "LazyGroup"]


@dataclass(frozen=True)
class LazyCommand:
    target: str
    """"module:attribute" of the click command."""
    help: str
    """The first sentence of the command's docstring (what `--help` lists)."""

    def short_help(self, limit: int) -> str:
        """The help as click lists it in `limit` characters (as it shortens a docstring)."""
        return click.Command(None, help=self.help).get_short_help_str(limit)

    def load(self) -> click.Command:
        module, _, attribute = self.target.partition(":")
        command = getattr(importlib.import_module(module), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.target} is not a click command")
        return command


class LazyGroup(click.Group):
    """A group whose `lazy` commands are imported when resolved, not before."""

    def __init__(self, *args: Any, lazy: Mapping[str, LazyCommand], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            self.add_command(self.lazy[cmd_name].load(), cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """As click lists commands, but one not yet imported by the short help in its entry."""
        entries: list[tuple[str, LazyCommand | click.Command]] = []
        for name in self.list_commands(ctx):
            if name not in self.commands and name in self.lazy:
                entries.append((name, self.lazy[name]))
            elif (command := self.get_command(ctx, name)) is not None and not command.hidden:
                entries.append((name, command))
        if not entries:
            return
        limit = formatter.width - 6 - max(len(name) for name, _ in entries)
        rows = [
            (
                name,
                entry.short_help(limit)
                if isinstance(entry, LazyCommand)
                else entry.get_short_help_str(limit),
            )
            for name, entry in entries
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)
