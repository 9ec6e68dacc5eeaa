"""The live page's sections: each one's version moves with every event that changes it, over a
synthetic log of every kind of event a long team run writes (the real run's log is checked in
tests/e2e/test_report.py); and the page's order places a new task's row and section."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from daemon.views.report.sections import Placement, page_order
from store.benchmark import fill
from store.sql import SqlEventStore
from store.synthetic import SyntheticWorkload
from tests.support.report_sections import assert_every_change_moves_its_version


def test_every_change_of_a_section_moves_its_version(
    fresh_sqlite_url: Callable[[], str],
    open_stores: Callable[[str], SqlEventStore],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = open_stores(fresh_sqlite_url())
    fill(store, SyntheticWorkload(seed=3, tasks=4), 400, 8)
    changed = assert_every_change_moves_its_version(store, monkeypatch)
    assert changed > 400  # the summary alone changes with every event


def test_a_section_goes_before_the_next_one_of_its_kind() -> None:
    assert page_order(["a", "b"]) == [
        Placement("summary", "main", None),
        Placement("row:a", "library-rows", "row:b"),
        Placement("row:b", "library-rows", None),
        Placement("task:a", "main", "task:b"),
        Placement("task:b", "main", "memory"),
        Placement("memory", "main", "economy"),
        Placement("economy", "main", None),
    ]
    assert [p.section for p in page_order([])] == ["summary", "memory", "economy"]
