"""`accelopt report` on the log of a real run: three suite tasks optimized by the scripted LLM,
two searches each, one memory shared; the page opened in headless Chromium.

With ACCELOPT_SCREENSHOTS=<folder>, the screenshots are kept there (the README's pictures are
made this way, from this run)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from events.catalog import CandidateGenerated, KernelPromoted, SearchStarted
from nkibench.suites import NKI_LEGACY_SUITE as SUITE
from store.sql import SqlEventStore
from tests.support import agent_script
from tests.support.browser import browser, needs_chromium
from tests.support.cli import SEARCH, events_of
from tests.support.llm_server import running_llm
from tests.support.report_sections import assert_every_change_moves_its_version

TASKS = ("silu", "rmsnorm_matmul", "swiglu")
PROGRAM = [sys.executable, "-c", "from daemon.cli import main; main()"]


@dataclass
class Run:
    db: str
    env: dict[str, str]
    folder: Path

    def accelopt(self, *argv: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [*PROGRAM, *argv], env=self.env, capture_output=True, text=True, timeout=300,
            check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        return done


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    folder = tmp_path_factory.mktemp("report")
    db = f"sqlite:///{folder / 'accelopt.db'}"
    with running_llm(agent_script.answer) as llm:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("ACCELOPT_")},
            "ACCELOPT_HOME": str(folder / "state"),
            "ACCELOPT_DB": db,
            "ACCELOPT_LLM_PRICES": agent_script.PRICES,
            **agent_script.llm_env(llm.url),
        }
        done = Run(db, env, folder)
        done.accelopt("db", "upgrade")
        for task in TASKS:
            for _ in range(2):  # a second search of the same revision starts anew
                done.accelopt("optimize", str(SUITE / task), *SEARCH)
        yield done


def screenshot_path(run: Run, name: str) -> Path:
    kept = os.environ.get("ACCELOPT_SCREENSHOTS")
    return Path(kept) / name if kept else run.folder / name


@needs_chromium
def test_the_report_opens_offline_with_plots_tree_and_counts(run: Run) -> None:
    out = run.folder / "report.html"
    run.accelopt("report", "--out", str(out))
    generated = Counter(e.task for e in events_of(run.db, CandidateGenerated))
    promoted = Counter(e.task for e in events_of(run.db, KernelPromoted))
    assert sum(promoted.values()) >= 1, "the scripted run promotes silu's faster kernel"
    with browser() as page:
        page.open(out.as_uri())
        page.screenshot(screenshot_path(run, "report.png"))
        assert page.console() == []  # no error, no warning, nothing logged
        assert page.requests() == [out.as_uri()]  # the file itself, nothing else
        assert page.count("section.task") == len(TASKS)
        assert page.count("section.task div.plot.latency svg") == len(TASKS)
        assert page.count("#memory svg") == 1
        assert page.count("#economy svg") == 1
        for task in TASKS:
            section = f"section.task[data-task='{task}']"
            assert page.count(f"{section} tr.candidate") == generated[task]
            assert page.attribute(section, "data-promotions") == [str(promoted[task])]
            assert page.count(f"{section} tr.candidate[data-fate='promoted']") == min(
                promoted[task], generated[task]
            )
            assert page.count(f"{section} div.search") == 2
        assert page.count("section.task[data-task='silu'] .promoted-diff .add") >= 1
    shown = {t for change in report_json(run)["memory"] for t in change["shown_to"]}
    assert shown - {"silu"}, "silu's lessons reached the other tasks' planners (shared memory)"


def test_until_a_middle_position_shows_the_past_and_its_memory(run: Run) -> None:
    starts = [s for s in events_of(run.db, SearchStarted)]
    assert len(starts) == 2 * len(TASKS)
    whole = report_json(run)
    added = [c["position"] for c in whole["memory"] if c["change"] == "added"]
    assert len(set(added)) >= 2, "the run's lessons are learnt at two moments at least"
    middle = min(added)  # the first lesson is in the memory, the later ones are not yet
    past = report_json(run, "--until", str(middle))
    assert past["head"] == middle < whole["head"]
    assert past["totals"]["candidates"] < whole["totals"]["candidates"]
    memory = json.loads(run.accelopt("memory", "--as-of", str(middle), "--json").stdout)
    active = {item["item_id"] for item in memory["items"]}
    assert active == live_items(past["memory"])
    assert len(active) == added.count(middle)
    assert live_items(whole["memory"]) > active  # later lessons came after the middle


def test_each_live_section_version_moves_with_its_changes(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The log of a real run has every kind of event the report folds, lessons shown to
    other tasks' planners included (what the synthetic log of tests/daemon lacks)."""
    store = SqlEventStore.open(run.db)
    try:
        assert assert_every_change_moves_its_version(store, monkeypatch) > store.head()
    finally:
        store.close()


def report_json(run: Run, *argv: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(run.accelopt("report", "--json", *argv).stdout)
    return data


def live_items(changes: list[dict[str, Any]]) -> set[str]:
    """The lessons active after a timeline of memory changes."""
    active: set[str] = set()
    for change in changes:
        if change["change"] == "added":
            active.add(change["item_id"])
        elif change["change"] == "retired":
            active.discard(change["item_id"])
    return active
