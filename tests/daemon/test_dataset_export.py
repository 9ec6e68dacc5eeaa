"""The dataset export's fold and command on logs recorded here through the recorder into a real
SQLite file: it streams (a line's texts are read when its line is made, and only its own),
an origin it does not know passes through, dollars are known or null, and bad arguments or a
missing kernel text are clear errors that leave the output file as it was."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import Field

from agents.search import ids
from daemon.views.dataset import dataset_lines
from events.base import Event
from events.catalog import (
    EVENT_TYPES,
    CandidateGenerated,
    PlanProposed,
    ProfilePurpose,
    SearchStarted,
)
from events.codec import Codec
from events.envelope import StoredEvent
from store.recorder import Recorder
from store.sql import SqlEventStore
from tests.support import factories
from tests.support.cli import run_cli
from tests.support.dataset import undocumented

TASK = "t"
REVISION = "0" * 64
SEARCH = ids.search_id(TASK, REVISION, 1)


class Log:
    """One search of TASK recorded event by event, as the search records it."""

    def __init__(
        self,
        store: SqlEventStore,
        *,
        codec: Codec | None = None,
        generated: type[CandidateGenerated] = CandidateGenerated,
    ) -> None:
        self.store = store
        self.recorder = Recorder(store)
        self.codec = codec
        self.generated = generated
        self.keys = iter(range(1_000_000))
        self.record(
            f"task:{TASK}", factories.source_changed(TASK, REVISION)
        )  # fmt: skip
        self.record(
            f"search:{SEARCH}",
            SearchStarted(
                task=TASK, search_id=SEARCH, task_source_hash=REVISION,
                baseline_candidate_id=ids.baseline_id(SEARCH), backend="nkisim", target="trn2",
                shapes="small", settings={}, models={},
            ),
        )  # fmt: skip
        baseline = ids.baseline_id(SEARCH)
        self.candidate(baseline, "def kernel(): pass  # the task's own", origin="baseline")
        self.profile(baseline, "baseline")

    def record(self, stream: str, event: Event) -> None:
        key = f"k{next(self.keys)}"
        if self.codec is None:
            self.recorder.record(stream, event, key=key)
        else:  # an event this accelopt's codec does not know
            self.store.append(stream, [self.codec.encode(event, idempotency_key=key)])

    def call(self, role: str, model: str, *, priced: bool = True) -> str:
        answered = factories.llm_call(TASK).model_copy(
            update={"role": role, "model": model, "cost_usd": 0.25 if priced else 0.0,
                    "parameters": {"priced": priced}}
        )  # fmt: skip
        failed = answered.model_copy(update={"error": "HTTP 503", "cost_usd": 0.0})
        for event in (failed, answered):  # a failed attempt first, under the same call id
            self.record(f"llm:{answered.call_id}", event)
        return answered.call_id

    def plan(self, text: str) -> str:
        plan = ids.plan_id(SEARCH, 1, ids.baseline_id(SEARCH), next(self.keys))
        self.record(
            f"search:{SEARCH}",
            PlanProposed(
                task=TASK, search_id=SEARCH, iteration=1, plan_id=plan, plan_index=0,
                parent_candidate_id=ids.baseline_id(SEARCH), plan_blob=self.recorder.put(text),
                llm_call_id=self.call("planner", "planner-model"),
            ),
        )  # fmt: skip
        return plan

    def candidate(
        self,
        candidate: str,
        source: str,
        *,
        origin: str = "executor",
        plan: str | None = None,
        call: str | None = None,
        blob: str | None = None,
        **extra: Any,
    ) -> None:
        parent = None if origin == "baseline" else ids.baseline_id(SEARCH)
        self.record(
            f"search:{SEARCH}",
            self.generated.model_validate(
                {
                    "task": TASK, "search_id": SEARCH, "iteration": 0 if plan is None else 1,
                    "candidate_id": candidate, "parent_candidate_id": parent, "plan_id": plan,
                    "sample_index": 0, "origin": origin, "kernel_hash": "h" + candidate,
                    "source_blob": blob or self.recorder.put(source), "llm_call_id": call,
                    **extra,
                }
            ),
        )  # fmt: skip

    def profile(self, candidate: str, purpose: ProfilePurpose, **fields: Any) -> None:
        job = ids.profile_job_id(SEARCH, candidate, purpose)
        named = None if purpose == "baseline" else candidate
        event = factories.profile(
            TASK, REVISION, purpose=purpose, candidate_id=named, job_id=job, **fields
        )
        self.record(f"job:{job}", event)

    def executor_kernel(self, number: int, *, priced: bool = True) -> str:
        plan = self.plan(f"plan {number}")
        candidate = f"c{number}"
        call = self.call("executor", "executor-model", priced=priced)
        self.candidate(candidate, f"def kernel(): return {number}", plan=plan, call=call)
        self.profile(candidate, "candidate", latency_ms=1.0 / (number + 1))
        return candidate


@pytest.fixture
def log(fresh_sqlite_url: Callable[[], str]) -> Iterator[Log]:
    store = SqlEventStore.open(fresh_sqlite_url())
    try:
        yield Log(store)
    finally:
        store.close()


def test_a_line_is_made_when_its_profile_is_read_with_its_own_texts_only(
    log: Log, monkeypatch: pytest.MonkeyPatch
) -> None:
    for number in range(1, 6):
        log.executor_kernel(number)
    read: list[int] = []
    asked: list[set[str]] = []
    read_all, get_texts = log.store.read_all, log.store.get_texts

    def reading(**kwargs: Any) -> Iterator[StoredEvent]:
        for stored in read_all(**kwargs):
            read.append(stored.position)
            yield stored

    def texts(hashes: Iterable[str]) -> dict[str, str]:
        wanted = set(hashes)
        asked.append(wanted)
        return get_texts(wanted)

    monkeypatch.setattr(log.store, "read_all", reading)
    monkeypatch.setattr(log.store, "get_texts", texts)
    monkeypatch.setattr(log.store, "get_blob", lambda sha256: pytest.fail("one text at a time"))
    lines = dataset_lines(log.store)
    first = next(lines)
    assert first["origin"] == "baseline"
    assert read[-1] == first["position"] < log.store.head()  # the rest of the log is unread
    assert len(asked) == 1
    assert len(asked[0]) == 1
    second = next(lines)
    assert read[-1] == second["position"]
    assert len(asked) == 2
    assert len(asked[1]) == 3
    rest = list(lines)
    assert len(asked) == 2 + len(rest) == 6
    assert read[-1] == log.store.head()


def test_the_lines_of_a_recorded_search(log: Log) -> None:
    priced = log.executor_kernel(1)
    unpriced = log.executor_kernel(2, priced=False)
    log.profile(priced, "reverify")  # a second look: no second line
    failed = "c3"
    log.candidate(failed, "def kernel(): raise", plan=log.plan("plan 3"))
    log.profile(failed, "candidate", latency_ms=None)
    gave_up = "c4"
    log.candidate(gave_up, "def kernel(): return 4", origin="tunable")
    log.profile(gave_up, "candidate", latency_ms=None, error_kind="job_failed")
    log.candidate("c5", "def kernel(): return 5", origin="tunable")  # never profiled
    lines = {line["candidate_id"]: line for line in dataset_lines(log.store)}
    assert list(lines) == [ids.baseline_id(SEARCH), priced, unpriced, failed, gave_up]
    assert all(undocumented(line) == [] for line in lines.values())
    assert (lines[priced]["cost_usd"], lines[priced]["plan_cost_usd"]) == (0.25, 0.25)
    assert (lines[unpriced]["model"], lines[unpriced]["cost_usd"]) == ("executor-model", None)
    assert lines[priced]["parent_source"] == "def kernel(): pass  # the task's own"
    assert lines[priced]["plan"] == "plan 1"
    assert (lines[failed]["verdict"], lines[failed]["error_kind"]) == ("failed", "incorrect")
    assert (lines[failed]["model"], lines[failed]["plan_model"]) == (None, "planner-model")
    assert lines[gave_up]["verdict"] == "no_verdict"  # the fleet gave up: nothing said of it
    assert {line["latency_kind"] for line in lines.values() if line["latency_ms"]} == {"estimated"}
    assert {line["dialect"] for line in lines.values()} == {"nki-legacy"}


class LaterCandidateGenerated(CandidateGenerated):
    """CandidateGenerated as a later schema may write it: a kernel from a kind of author this
    accelopt does not know yet, with a field of its own."""

    schema_version: ClassVar[int] = CandidateGenerated.schema_version + 1
    origin: str  # type: ignore[assignment] # an origin this accelopt's vocabulary lacks
    reviewer: dict[str, str] = Field(default_factory=dict)

    @classmethod
    def type_name(cls) -> str:
        return "CandidateGenerated"


def test_an_origin_and_fields_this_exporter_does_not_know_reach_the_line(
    fresh_sqlite_url: Callable[[], str],
) -> None:
    later = Codec(types={**EVENT_TYPES, "CandidateGenerated": LaterCandidateGenerated})
    store = SqlEventStore.open(fresh_sqlite_url())
    try:
        log = Log(store, codec=later, generated=LaterCandidateGenerated)
        reviewer = {"team": "kernels", "model": "claude-opus-4"}
        log.candidate("c1", "def kernel(): ...", origin="reviewer", reviewer=reviewer)
        log.profile("c1", "candidate")
        (line,) = [
            line for line in dataset_lines(store, codec=later) if line["origin"] == "reviewer"
        ]
    finally:
        store.close()
    assert line["generated"]["reviewer"] == reviewer
    assert (line["model"], line["cost_usd"]) == (None, None)  # no call of accelopt's wrote it
    assert undocumented(line) == []


def test_bad_arguments_are_refused_before_any_work(log: Log, tmp_path: Path) -> None:
    url = str(log.store.engine.url)
    folder = tmp_path / "out"
    folder.mkdir()
    out = folder / "data.jsonl"
    out.write_text("kept\n")
    neither = run_cli("export-dataset", "--db", url, "--out", str(out), "--until", "yesterday")
    assert neither.code == 2
    assert "--until" in neither.err
    assert "'yesterday' is neither a position nor an ISO-8601 time" in neither.err
    nowhere = folder / "missing" / "data.jsonl"
    missing = run_cli("export-dataset", "--db", url, "--out", str(nowhere))
    assert missing.code == 2
    assert f"{nowhere.parent} is not a directory" in missing.err
    a_folder = run_cli("export-dataset", "--db", url, "--out", str(folder))
    assert a_folder.code == 2
    assert "is a directory" in a_folder.err
    no_out = run_cli("export-dataset", "--db", url)
    assert no_out.code == 2
    assert "--out" in no_out.err
    assert out.read_text() == "kept\n"
    assert sorted(folder.iterdir()) == [out]


def test_a_kernel_text_the_log_lacks_stops_the_export_and_leaves_the_file(
    log: Log, tmp_path: Path
) -> None:
    log.candidate("c1", "", blob="f" * 64)  # names a text never stored
    log.profile("c1", "candidate")
    folder = tmp_path / "out"
    folder.mkdir()
    out = folder / "data.jsonl"
    out.write_text("kept\n")
    run = run_cli("export-dataset", "--db", str(log.store.engine.url), "--out", str(out))
    assert run.code == 1
    assert "the kernel of candidate c1 (profiled at position" in run.err
    assert f"is blob {'f' * 64}, which the log does not hold" in run.err
    assert "Traceback" not in run.err
    assert out.read_text() == "kept\n"
    assert sorted(folder.iterdir()) == [out]
    done = run_cli("export-dataset", "--db", str(log.store.engine.url), "--out",
                   str(folder / "upto.jsonl"), "--until", "4")  # fmt: skip
    assert done.code == 0, done.err  # before that candidate: its baseline only
    assert "1 profiled candidates, as of position 4" in done.err
