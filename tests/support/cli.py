"""Running `accelopt` in the test's own process (its one exit point, `main`), and the search
sizes the end-to-end tests use."""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass
from typing import Any, TypeVar

from daemon.cli import main
from events.base import Event
from events.codec import decode
from store.sql import SqlEventStore

__all__ = ["ONE_STEP", "SEARCH", "Run", "events_of", "run_cli", "search_args"]

E = TypeVar("E", bound=Event)


def search_args(*, iterations: int, beam: int, plans: int, samples: int) -> list[str]:
    """A search's size on the command line, at small shapes (nkisim is fast there)."""
    return [
        "--iterations",
        str(iterations),
        "--beam",
        str(beam),
        "--plans",
        str(plans),
        "--samples",
        str(samples),
        "--shapes",
        "small",
    ]


SEARCH = search_args(iterations=2, beam=2, plans=2, samples=2)
ONE_STEP = [*search_args(iterations=1, beam=1, plans=1, samples=1), "--json"]


@dataclass
class Run:
    """What one command did: its exit status and what it printed."""

    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.out.splitlines()]


def run_cli(*argv: str) -> Run:
    """`accelopt *argv` in this process, its output captured."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(argv))
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    return Run(code, out.getvalue(), err.getvalue())


def events_of(db: str, kind: type[E]) -> list[E]:
    """The events of one type in the database at `db`, decoded, in log order."""
    store = SqlEventStore.open(db)
    try:
        return [
            e
            for stored in store.read_all(types=[kind.type_name()])
            if isinstance(e := decode(stored).event, kind)
        ]
    finally:
        store.close()
