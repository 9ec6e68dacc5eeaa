"""`accelopt bench gpu --breakdown`'s accounting, on the CPU: a child's own timings are
untrusted data (dropped with a note when malformed, never a crash), the columns account for
the wall the caller measured, and the CLI prints the table. Under Triton's CPU interpreter
nothing is timed; on a GPU the same tests also see the timed runs."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import pytest

from nkibench.backend import Phase
from nkibench.backends.triton.backend import TritonBackend
from nkibench.breakdown import COLUMNS, COUNTERS_PHASES, Breakdown, recording
from nkibench.harness import fresh_seeds, profile_kernel, run_phase
from nkibench.sandbox.folders import SessionFolders
from nkibench.sandbox.isolation import Isolation
from nkibench.sandbox.process import Limits
from nkibench.sandbox.results import MalformedResult, check_timings
from nkibench.sandbox.stopwatch import RESULT_KEY
from nkibench.task.spec import load_task
from tests.support.cli import run_cli
from tests.support.triton_helpers import SILU, triton_backend

__all__ = ["triton_backend"]

GOOD = {"spans": {"imports": 1.0, "compile": 0.5}, "total_s": 2.0}


@pytest.mark.parametrize(
    ("report", "problem"),
    [
        ("fast", "not a timing report"),
        ({**GOOD, "extra": 1}, "not a timing report"),
        ({"spans": {"kernel_was_free": 0.0}, "total_s": 1.0}, "unknown span"),
        ({"spans": {f"s{i}": 1.0 for i in range(1000)}, "total_s": 1.0}, "not a small mapping"),
        ({"spans": {"compile": -1.0}, "total_s": 1.0}, "not seconds"),
        ({"spans": {"compile": math.nan}, "total_s": 1.0}, "not seconds"),
        ({"spans": {"compile": True}, "total_s": 1.0}, "not seconds"),
        ({"spans": {}, "total_s": "1"}, "total_s: not seconds"),
        ({"spans": {}, "total_s": 100.0}, "longer than the child lived"),
        ({"spans": {"compile": 3.0}, "total_s": 2.0}, "spans longer than the child's total"),
    ],
)
def test_a_malformed_timing_report_is_refused_with_what_is_wrong(report: Any, problem: str) -> None:
    with pytest.raises(MalformedResult, match=problem):
        check_timings(report, life_s=5.0)


def test_a_well_formed_timing_report_is_read_in_the_columns_order() -> None:
    spans, total = check_timings(GOOD, life_s=2.5)
    assert list(spans) == ["imports", "compile"]
    assert total == 2.0


def test_the_counters_children_are_a_column_of_their_own_and_their_replays_are_work() -> None:
    """Nsight Compute's children (its start, replays and the report's reader) take seconds a
    profile: the table shows them apart; of them, the floor counts only the counted run's
    replays (kernel runs), never their start or compile."""
    breakdown = Breakdown()
    breakdown.add("kernel", 2.0, {RESULT_KEY: {"spans": {"checked_runs": 0.5}, "total_s": 1.5}})
    counted = {"spans": {"compile": 1.0, "checked_runs": 3.0}, "total_s": 4.5}
    breakdown.add("counters", 5.0, {RESULT_KEY: counted})
    breakdown.add("counters_report", 0.25, {RESULT_KEY: {"spans": {}, "total_s": 0.1}})
    breakdown.wall_s = 8.0
    seconds = breakdown.columns()
    assert seconds["counters"] == 5.25
    assert seconds["checked_runs"] == 0.5  # the kernel child's, not the counted run
    assert seconds["compile"] == 0.0
    assert sum(seconds.values()) == pytest.approx(8.0)
    assert breakdown.to_json()["floor_s"] == 0.5 + 3.0


def test_a_child_started_ahead_counts_what_the_profile_waited_for_it() -> None:
    """The counters' child started ahead (nkibench.sandbox.ahead) lived through the other
    children: the table counts the wait, so its columns still sum to the wall; its own
    account, imports before it was begun included, is kept beside it, and no span of its
    reaches the other columns."""
    breakdown = Breakdown()
    breakdown.add("kernel", 2.0, {RESULT_KEY: {"spans": {"checked_runs": 0.5}, "total_s": 1.5}})
    own = {"spans": {"imports": 6.0, "compile": 1.0, "checked_runs": 1.5}, "total_s": 9.5}
    breakdown.add_waited("counters", 2.5, {"ok": True, RESULT_KEY: own})
    breakdown.add_waited("counters", 1.0, {"ok": True, RESULT_KEY: {"spans": {"x": 1}}})
    breakdown.wall_s = 6.0
    seconds = breakdown.columns()
    assert seconds["counters"] == 3.5
    assert seconds["imports"] == seconds["compile"] == 0.0
    assert sum(seconds.values()) == pytest.approx(6.0)
    children = breakdown.to_json()["children"]
    assert children[1]["waited"] is True
    assert children[1]["spans"]["imports"] == 6.0
    assert children[2]["spans"] is None  # malformed: dropped, with a note
    assert any("counters: timings dropped" in n for n in breakdown.notes)


def _garbage_child(kind: str, tmp_path: Path) -> tuple[dict[str, Any], Any]:
    isolation = Isolation.detect()
    with recording() as breakdown, SessionFolders(tmp_path, isolation.child_uid) as folders:
        result = run_phase(
            "kernel",
            Phase("tests.support.garbage_timings:garbage_phase", "kernel"),
            {"garbage": kind},
            folders,
            Limits(timeout_s=60),
            isolation=isolation,
        )
    return result, breakdown


@pytest.mark.parametrize(
    "kind", ["unknown span", "negative", "longer than the child", "oversized", "not seconds"]
)
def test_a_child_that_reports_garbage_timings_keeps_its_result_and_loses_its_timings(
    kind: str, tmp_path: Path
) -> None:
    result, breakdown = _garbage_child(kind, tmp_path)
    assert result == {"ok": True, "garbage": kind}  # the timings taken out, the rest kept
    [child] = breakdown.children
    assert child.spans is None
    assert child.life_s > 0
    [note] = breakdown.notes
    assert note.startswith("kernel: timings dropped (")
    seconds = breakdown.columns()
    assert seconds["child_other"] == child.life_s  # its whole life, unexplained
    assert sum(seconds.values()) == pytest.approx(breakdown.wall_s)


def test_an_honest_child_reports_its_imports_and_lives_longer_than_its_own_total(
    tmp_path: Path,
) -> None:
    _, breakdown = _garbage_child("none", tmp_path)
    [child] = breakdown.children
    assert child.spans is not None
    assert child.total_s is not None
    assert set(child.spans) == {"imports"}
    assert 0 < child.spans["imports"] <= child.total_s < child.life_s
    assert breakdown.notes == []


def test_without_a_recording_no_child_is_asked_for_timings(tmp_path: Path) -> None:
    isolation = Isolation.detect()
    with SessionFolders(tmp_path, isolation.child_uid) as folders:
        result = run_phase(
            "kernel",
            Phase("tests.support.garbage_timings:garbage_phase", "kernel"),
            {"garbage": "none"},
            folders,
            Limits(timeout_s=60),
            isolation=isolation,
        )
    assert "timings" not in result


@pytest.mark.slow
@pytest.mark.usefixtures("gpu_turn")
def test_the_phases_of_a_profile_sum_to_the_wall_its_caller_measured(
    triton_backend: TritonBackend,
) -> None:
    task = load_task(SILU)
    started = time.perf_counter()
    with recording() as breakdown:
        profile_kernel(task, backend=triton_backend, shapes="small", seeds=fresh_seeds(1))
    wall = time.perf_counter() - started
    seconds = breakdown.columns()
    assert list(seconds) == list(COLUMNS)
    assert sum(seconds.values()) == pytest.approx(wall, abs=0.05)
    assert breakdown.notes == []
    phases = [c.phase for c in breakdown.children]
    gpu = triton_backend.host.gpu is not None
    # the kernel's child times it too: no child of its own for the timing
    counted = list(COUNTERS_PHASES if gpu and triton_backend.nsight is not None else ())
    assert phases == ["reference", "kernel", "compare", *counted]
    for child in breakdown.children:
        assert child.total_s is not None
        # the task's own kernel's counters child starts ahead: its life is the wait for it
        assert child.waited == (child.phase == "counters")
        if not child.waited:
            assert child.total_s < child.life_s
    # the children account for most of the wall, and name most of their own time
    assert seconds["parent"] < 0.5 * wall
    assert 0 <= seconds["child_other"] < 0.1 * wall
    for named in ("imports", "inputs", "reference", "compile", "compare", "outputs"):
        assert seconds[named] > 0, named
    assert (seconds["timed_runs"] > 0) == gpu
    summary = breakdown.to_json()
    # the counted run's replays (the task's own kernel's counters) are kernel runs too
    replays = breakdown.counted_s()
    assert (replays > 0) == bool(counted)
    assert summary["floor_s"] == pytest.approx(
        seconds["reference"] + seconds["checked_runs"] + seconds["timed_runs"] + replays
    )
    assert summary["wall_over_floor"] > 1


@pytest.mark.slow
@pytest.mark.usefixtures("gpu_turn")
def test_bench_gpu_breakdown_prints_and_saves_a_row_per_task_with_its_wall_and_floor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACCELOPT_HOME", str(tmp_path / "home"))
    run = run_cli(
        "bench",
        "gpu",
        "--db",
        f"sqlite:///{tmp_path / 'bench.db'}",
        "--breakdown",
        "--shapes",
        "small",
        "--passes",
        "1",
        "--task",
        "silu",
        "--save",
        str(tmp_path / "bench.json"),
    )
    assert run.code == 0, run.err
    [[saved]] = json.loads((tmp_path / "bench.json").read_text())["passes"]
    breakdown = saved["breakdown"]
    assert sum(breakdown["seconds"].values()) == pytest.approx(breakdown["wall_s"])
    assert breakdown["floor_s"] > 0
    table = run.out[run.out.index("Where the time goes") :]
    header = next(line for line in table.splitlines() if "spawn+sandbox" in line)
    for heading in ("imports*", "compile*", "compare*", "wall", "floor*", "wall/floor"):
        assert heading in header
    [row] = [line for line in table.splitlines() if line.startswith("│ silu")]
    cells = [c.strip() for c in row.strip("│").split("│")]
    assert cells[1] == "1"
    assert all(float(c) >= 0 for c in cells[2:])
    assert "the child's own report" in run.out
