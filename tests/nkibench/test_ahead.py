"""Children started ahead of their work (nkibench.sandbox.ahead, the Gate of
nkibench.sandbox.process): a real sandboxed child that imports its phase, then waits; its
request, and so any task or kernel code, only after `begin`; its timeout from then; and `end`
stops it, begun or not. Then the harness: a session ends what its backend started ahead."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from nkibench.backend import Phase, Session
from nkibench.backends.nkisim.backend import NkisimBackend
from nkibench.breakdown import recording
from nkibench.harness import CHILD, profile_kernel
from nkibench.sandbox.ahead import Ahead
from nkibench.sandbox.folders import SessionFolders
from nkibench.sandbox.isolation import Isolation
from nkibench.sandbox.process import Cancelled, ChildOutcome, Gate, Limits, run_child
from nkibench.task.spec import TaskSpec, load_task
from tests.support import REPOSITORY
from tests.support.ahead_probe import AHEAD_MARKS

PROBE = "tests.support.ahead_probe:phase"
SILU = REPOSITORY / "nkibench" / "suites" / "nki" / "silu"
STARTUP_S = 120.0
"""The most a child's start (bubblewrap, the interpreter, the probe's import) may take on a
loaded host before a test gives up waiting for its mark."""


@pytest.fixture
def folders(tmp_path: Path) -> Iterator[SessionFolders]:
    with SessionFolders(tmp_path, Isolation.detect().child_uid) as made:
        yield made


def _start(
    folders: SessionFolders,
    marks: Path,
    timeout_s: float = 60.0,
    cancel: threading.Event | None = None,
) -> Ahead:
    isolation = Isolation.detect()

    def run(gate: Gate, stop: threading.Event) -> dict[str, Any]:
        outcome = run_child(
            CHILD,
            {"entry": PROBE},
            workdir=folders.fresh("work"),
            limits=Limits(timeout_s=timeout_s, memory_mb=None),
            isolation=isolation,
            writable=[marks],
            environment={AHEAD_MARKS: str(marks)},
            cancel=stop,
            gate=gate,
        )
        return {"outcome": outcome}

    return Ahead("probe", run, [marks], cancel)


def _imported(marks: Path) -> float:
    """When the child had imported its phase, once it has (the mark it leaves)."""
    deadline = time.monotonic() + STARTUP_S
    while not (marks / "imported").exists():
        assert time.monotonic() < deadline, "the child started ahead never imported its phase"
        time.sleep(0.05)
    return time.monotonic()


def _ran(marks: Path) -> None:
    """Once the child's phase has begun (the mark it leaves)."""
    deadline = time.monotonic() + STARTUP_S
    while not (marks / "ran").exists():
        assert time.monotonic() < deadline, "the child begun never ran its phase"
        time.sleep(0.05)


def _answer(started: Ahead) -> tuple[dict[str, Any], ChildOutcome]:
    outcome = started.result()["outcome"]
    assert outcome.result, outcome.stderr_tail
    return json.loads(outcome.result), outcome


def test_a_child_started_ahead_imports_then_runs_nothing_until_begun(
    folders: SessionFolders,
) -> None:
    marks = folders.fresh("marks")
    started = _start(folders, marks)
    try:
        _imported(marks)
        time.sleep(0.5)  # room to run, were it not waiting for its request
        assert not (marks / "ran").exists()
        begun = time.monotonic()
        started.begin({"x": 7})
        answer, outcome = _answer(started)
    finally:
        started.end()
    assert answer["x"] == 7  # the request handed over at begin
    assert answer["imported_at"] < begun <= answer["ran_at"]
    assert outcome.returncode == 0


def test_a_child_started_ahead_has_its_whole_timeout_from_begin(
    folders: SessionFolders,
) -> None:
    marks = folders.fresh("marks")
    launched = time.monotonic()
    started = _start(folders, marks, timeout_s=2.0)
    try:
        _imported(marks)
        time.sleep(max(0.0, launched + 3.0 - time.monotonic()))  # past 2 s since its start
        started.begin({"x": 1})
        answer, outcome = _answer(started)
    finally:
        started.end()
    assert not outcome.timed_out
    assert answer["ok"] is True


@pytest.mark.parametrize("begun", [False, True], ids=["never begun", "begun and hanging"])
def test_ending_a_child_started_ahead_stops_it(folders: SessionFolders, begun: bool) -> None:
    marks = folders.fresh("marks")
    started = _start(folders, marks)
    _imported(marks)
    if begun:
        started.begin({"hang": True})
        _ran(marks)
    started.end()  # returns once the child is gone
    with pytest.raises(Cancelled):
        started.result()
    assert (marks / "ran").exists() is begun


def test_a_drain_stops_a_child_started_ahead_while_its_result_is_awaited(
    folders: SessionFolders,
) -> None:
    """The session's cancel flag (a daemon that drains) reaches a begun child too, though it
    runs in a thread of its own: whoever waits for its result gets Cancelled, not a wait for
    the child's whole time limit."""
    marks = folders.fresh("marks")
    drain = threading.Event()
    started = _start(folders, marks, timeout_s=600.0, cancel=drain)
    try:
        _imported(marks)
        started.begin({"hang": True})
        _ran(marks)
        threading.Timer(0.5, drain.set).start()  # once the wait below has begun
        with pytest.raises(Cancelled):
            started.result()
    finally:
        started.end()


class AheadNkisim(NkisimBackend):
    """nkisim, starting the probe's child ahead of each evaluation's work, beginning it once
    the kernel's child ended and waiting for it in the measurement, as the triton backend does
    with its counters (nkibench.backends.triton.backend)."""

    def __init__(self) -> None:
        super().__init__()
        self.started: list[Ahead] = []
        self.answers: list[dict[str, Any]] = []

    phases = MappingProxyType({**NkisimBackend.phases, "probe": Phase(PROBE, "backend")})

    def begin(self, session: Session, profile: bool) -> None:
        marks = session.folder("marks")
        self.started.append(session.start_ahead("probe", writes=[marks]))

    def trusted_check(self, session: Session, kernel: dict[str, Any], profile: bool) -> Any:
        session.ahead["probe"].begin({"x": session.seeds[0]})
        return super().trusted_check(session, kernel, profile)

    def measure(self, session: Session, kernel: dict[str, Any]) -> None:
        super().measure(session, kernel)
        self.answers.append(session.ahead["probe"].result())


@pytest.fixture(scope="module")
def silu() -> TaskSpec:
    return load_task(SILU)


def test_a_session_waits_for_what_it_began_and_ends_what_it_did_not(silu: TaskSpec) -> None:
    backend = AheadNkisim()
    with recording() as breakdown:
        result = profile_kernel(silu, backend=backend, shapes="small")
    assert result.correct, result.message
    (answer,) = backend.answers
    assert answer["x"] == result.seeds[0]  # begun with the session's request, waited for
    # the breakdown counts the wait for it, with its own account (its imports) beside it
    (probe,) = [c for c in breakdown.children if c.phase == "probe"]
    assert probe.waited
    assert probe.spans is not None
    assert "imports" in probe.spans
    assert sum(breakdown.columns().values()) == pytest.approx(breakdown.wall_s)

    # a kernel that fails in its child: the probe is never begun, and the session's end
    # stops it
    failing = silu.kernel_source.replace("assert M % P == 0", "assert M < 0", 1)
    assert failing != silu.kernel_source
    failed = profile_kernel(silu, backend=backend, shapes="small", kernel_source=failing)
    assert failed.error_kind == "runtime", failed.message
    assert len(backend.started) == 2
    with pytest.raises(Cancelled):
        backend.started[-1].result()
