"""The `accelopt` command line, through its one exit point and as an installed program."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from daemon.cli import main
from events.codec import encode
from events.envelope import NewEvent
from nkibench.suites import NKI_LEGACY_SUITE, NKI_SUITE
from store.jobs.base import Job
from store.jobs.sql import SqlJobQueue
from store.migrate import head_revision
from store.projections.library import LibraryProjection
from store.projections.runner import ProjectionRunner
from store.sql import SqlEventStore
from tests.support import DATA, factories
from tests.support.cli import Run


@pytest.fixture
def accelopt(capsys: pytest.CaptureFixture[str]) -> Callable[..., Run]:
    def run(*argv: str) -> Run:
        with pytest.raises(SystemExit) as info:
            main(list(argv))
        captured = capsys.readouterr()
        code = info.value.code
        return Run(code if isinstance(code, int) else 1, captured.out, captured.err)

    return run


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("ACCELOPT_DB", raising=False)
    monkeypatch.setenv("ACCELOPT_HOME", str(tmp_path / "state"))
    return tmp_path / "state"


def story(url: str) -> SqlEventStore:
    """A small library: rmsnorm baselined and improved, silu invalid."""
    store = SqlEventStore.open(url)
    for stream, event in [
        ("task:rmsnorm", factories.source_changed("rmsnorm", "h1")),
        ("job:1", factories.profile("rmsnorm", "h1", latency_ms=2.0)),
        (
            "job:2",
            factories.profile(
                "rmsnorm", "h1", purpose="candidate", candidate_id="c1", latency_ms=0.5
            ),
        ),
        ("task:silu", factories.invalid("silu", "s1", "line 2: no get_inputs()")),
    ]:
        store.append(stream, [encode(event)])
    return store


def test_db_upgrade_creates_the_default_database(home: Path, accelopt: Callable[..., Run]) -> None:
    first = accelopt("db", "upgrade", "--json")
    assert first.code == 0
    assert first.json() == {
        "database": str(home / "accelopt.db"),
        "from_revision": None,
        "to_revision": head_revision(),
    }
    assert (home / "accelopt.db").exists()
    again = accelopt("db", "upgrade")
    assert again.code == 0
    assert f"already at schema revision {head_revision()}" in again.out


def test_db_option_beats_environment(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, accelopt: Callable[..., Run]
) -> None:
    monkeypatch.setenv("ACCELOPT_DB", f"sqlite:///{tmp_path / 'env.db'}")
    assert accelopt("db", "upgrade").code == 0
    assert (tmp_path / "env.db").exists()
    assert accelopt("--db", f"sqlite:///{tmp_path / 'flag.db'}", "db", "upgrade").code == 0
    assert (tmp_path / "flag.db").exists()
    assert not (home / "accelopt.db").exists()


def test_events_lists_the_log(
    fresh_sqlite_url: Callable[[], str], accelopt: Callable[..., Run]
) -> None:
    url = fresh_sqlite_url()
    story(url).close()
    listed = accelopt("--db", url, "events", "--json")
    assert listed.code == 0
    lines = listed.lines()
    assert [line["position"] for line in lines] == [1, 2, 3, 4]
    assert set(lines[0]) >= {
        "position",
        "stream_id",
        "stream_version",
        "type",
        "schema_version",
        "recorded_at",
        "data",
    }
    assert lines[0]["type"] == "KernelSourceChanged"
    assert lines[0]["data"]["task"] == "rmsnorm"
    since = accelopt("--db", url, "events", "--since", "2", "--json").lines()
    assert [line["position"] for line in since] == [3, 4]
    typed = accelopt("--db", url, "events", "--type", "ProfileRecorded", "--limit", "1", "--json")
    assert [line["position"] for line in typed.lines()] == [2]
    human = accelopt("--db", url, "events")
    assert human.code == 0
    assert "TaskInvalid v1" in human.out
    assert "task:silu@1" in human.out


def test_events_follow_prints_new_events(
    fresh_sqlite_url: Callable[[], str], accelopt: Callable[..., Run]
) -> None:
    url = fresh_sqlite_url()
    store = story(url)
    appender = threading.Timer(
        0.3, lambda: store.append("task:x", [encode(factories.removed("x"))])
    )
    appender.start()
    followed = accelopt("--db", url, "events", "--since", "3", "--follow", "--limit", "2", "--json")
    appender.join()
    store.close()
    assert [line["position"] for line in followed.lines()] == [4, 5]
    done = accelopt("--db", url, "events", "--follow", "--limit", "2", "--json")
    assert [line["position"] for line in done.lines()] == [1, 2]  # returns, does not wait


def test_replay_as_of_a_position_and_a_time(
    fresh_sqlite_url: Callable[[], str], accelopt: Callable[..., Run]
) -> None:
    url = fresh_sqlite_url()
    store = story(url)
    second = list(store.read_all())[1].recorded_at
    store.close()
    whole = accelopt("--db", url, "replay", "--projection", "library", "--json").json()
    assert isinstance(whole, dict)
    assert whole["position"] == 4
    assert set(whole["state"]["tasks"]) == {"rmsnorm", "silu"}
    assert whole["state"]["tasks"]["rmsnorm"]["platforms"]["nkisim:trn1"]["best_ms"] == 0.5
    early = accelopt("--db", url, "replay", "--projection", "library", "--until", "2", "--json")
    state = early.json()
    assert isinstance(state, dict)
    assert state["position"] == 2
    assert set(state["state"]["tasks"]) == {"rmsnorm"}
    assert state["state"]["tasks"]["rmsnorm"]["platforms"]["nkisim:trn1"]["best_ms"] == 2.0
    by_time = accelopt(
        "--db", url, "replay", "--projection", "library", "--until", second.isoformat(), "--json"
    ).json()
    assert isinstance(by_time, dict)
    assert by_time["position"] >= 2
    assert by_time["state"]["tasks"]["rmsnorm"]["state"] == "optimizing"
    before = accelopt(
        "--db", url, "replay", "--projection", "library", "--until", "2000-01-01", "--json"
    ).json()
    assert isinstance(before, dict)
    assert (before["position"], before["state"]["tasks"]) == (0, {})
    table = accelopt("--db", url, "replay", "--projection", "library")
    assert table.code == 0
    assert "rmsnorm" in table.out
    assert "(e)" in table.out  # estimated latencies say so


def test_replay_rejects_a_bad_until(
    fresh_sqlite_url: Callable[[], str], accelopt: Callable[..., Run]
) -> None:
    result = accelopt(
        "--db", fresh_sqlite_url(), "replay", "--projection", "library", "--until", "soon"
    )
    assert result.code == 2
    assert "neither a position nor an ISO-8601 time" in result.err


@pytest.mark.parametrize(
    ("bad", "type_name", "reason"),
    [
        (
            NewEvent("KernelTeleported", 1, {"task": "rmsnorm"}),
            "KernelTeleported",
            "unknown event type",
        ),
        (NewEvent("KernelRemoved", 1, {"task_dir": "/k"}), "KernelRemoved", "task: Field required"),
    ],
)
def test_replay_halts_on_an_undecodable_event_unless_asked_to_skip(
    fresh_sqlite_url: Callable[[], str],
    accelopt: Callable[..., Run],
    bad: NewEvent,
    type_name: str,
    reason: str,
) -> None:
    url = fresh_sqlite_url()
    store = story(url)
    store.append("future", [bad])
    store.append("task:late", [encode(factories.source_changed("late", "l1"))])
    store.close()
    halted = accelopt("--db", url, "replay", "--projection", "library")
    assert halted.code == 5
    assert f"event at position 5 of type {type_name!r} does not decode" in halted.err
    assert reason in halted.err
    assert "Traceback" not in halted.err
    skipping = accelopt(
        "--db", url, "replay", "--projection", "library", "--skip-unknown", "--json"
    )
    assert skipping.code == 0
    assert f"skipped event at position 5 of type {type_name!r}" in skipping.err
    result = skipping.json()
    assert isinstance(result, dict)
    assert [s["position"] for s in result["skipped"]] == [5]
    assert result["position"] == 6
    assert set(result["state"]["tasks"]) == {"rmsnorm", "silu", "late"}


def test_status(fresh_sqlite_url: Callable[[], str], accelopt: Callable[..., Run]) -> None:
    url = fresh_sqlite_url()
    store = story(url)
    ProjectionRunner(store, LibraryProjection()).catch_up()  # a checkpoint at 4 ...
    store.append("task:silu", [encode(factories.removed("silu"))])  # ... and one event after it
    store.close()
    status = accelopt("--db", url, "status", "--json").json()
    assert isinstance(status, dict)
    assert status["log"]["events"] == 5
    assert status["log"]["size_bytes"] > 0
    assert status["position"] == 5
    tasks = {t["task"]: t for t in status["tasks"]}
    assert tasks["silu"]["state"] == "removed"
    assert tasks["rmsnorm"]["dialect"] == "nki-legacy"  # as its revision recorded it
    rms = tasks["rmsnorm"]["platforms"][0]
    assert (rms["baseline_ms"], rms["best_ms"], rms["speedup"]) == (2.0, 0.5, 4.0)
    assert rms["latency_kind"] == "estimated"
    human = accelopt("--db", url, "status")
    assert human.code == 0
    assert "4.00x" in human.out
    assert "nki-legacy" in human.out
    assert "log: 5 events" in human.out
    assert "NEW JOBS PAUSED" not in human.out
    assert status["state_disk"]["new_jobs_paused"] is False


def test_status_says_when_the_state_disk_is_under_its_floor(
    fresh_sqlite_url: Callable[[], str],
    accelopt: Callable[..., Run],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = fresh_sqlite_url()
    story(url).close()
    monkeypatch.setenv("ACCELOPT_MIN_FREE_MB", str(2**40))  # more than any disk has
    human = accelopt("--db", url, "status")
    assert human.code == 0
    assert "NEW JOBS PAUSED on this host: the state disk" in human.out
    disk = accelopt("--db", url, "status", "--json").json()["state_disk"]
    assert disk["new_jobs_paused"] is True
    assert disk["free_bytes"] < disk["floor_bytes"] == 2**60


def test_databases_that_are_not_accelopt_get_a_clear_message(
    tmp_path: Path, accelopt: Callable[..., Run]
) -> None:
    missing = accelopt("--db", f"sqlite:///{tmp_path / 'none.db'}", "status")
    assert missing.code == 3
    assert "no database at" in missing.err
    assert not (tmp_path / "none.db").exists()
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"\x00\x01not sqlite at all" * 512)
    for command in (
        ["status"],
        ["events"],
        ["replay", "--projection", "library"],
        ["db", "upgrade"],
    ):
        result = accelopt("--db", f"sqlite:///{garbage}", *command)
        assert result.code == 3, command
        assert "is not an SQLite database" in result.err
        assert "Traceback" not in result.err
    assert garbage.read_bytes().startswith(b"\x00\x01not sqlite")
    unreachable = accelopt("--db", "postgresql://nobody@127.0.0.1:1/none", "status")
    assert unreachable.code == 3  # "no such database": the documented status (once 1)
    assert "cannot open the database postgresql://nobody@127.0.0.1:1/none" in unreachable.err


def test_bench_store_prints_its_numbers(accelopt: Callable[..., Run]) -> None:
    result = accelopt("bench", "store", "--events", "3000", "--json")
    assert result.code == 0
    numbers = result.json()
    assert isinstance(numbers, dict)
    assert numbers["database"] == "sqlite"
    assert numbers["events"] == 3000
    for key in ("append_single_per_s", "append_batch_per_s", "replay_per_s", "replay_peak_rss_mb"):
        assert numbers[key] > 0, key
    # the anchor read the same rows; the ratio is the two speeds, replay over raw
    assert numbers["raw_read_per_s"] > numbers["replay_per_s"]
    ratio = numbers["replay_per_s"] / numbers["raw_read_per_s"]
    assert numbers["replay_over_raw"] == pytest.approx(ratio, rel=0.05)


def test_installed_program(tmp_path: Path) -> None:
    program = Path(sys.executable).with_name("accelopt")
    assert program.exists(), "the console script is not installed next to this Python"
    result = subprocess.run(
        [program, "--db", f"sqlite:///{tmp_path / 'x.db'}", "status"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 3
    assert result.stderr.startswith("accelopt: error: no database at")


def test_default_database_follows_xdg_state_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, accelopt: Callable[..., Run]
) -> None:
    monkeypatch.delenv("ACCELOPT_DB", raising=False)
    monkeypatch.delenv("ACCELOPT_HOME", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    upgraded = accelopt("db", "upgrade", "--json").json()
    assert isinstance(upgraded, dict)
    assert upgraded["database"] == str(tmp_path / "xdg" / "accelopt" / "accelopt.db")


SUITE = NKI_LEGACY_SUITE  # the shipped NKI suite


def test_check_reports_one_json_object_and_its_exit_status(
    tmp_path: Path, accelopt: Callable[..., Run]
) -> None:
    good = accelopt(
        "check",
        str(SUITE / "silu"),
        "--shapes",
        "small",
        "--seeds",
        "0",
        "--devices",
        "0",
        "--json",
    )  # `--devices 0`, the documented default: device 0, not a count of none
    assert good.code == 0, good.err
    verdict = good.json()
    assert isinstance(verdict, dict)
    assert {"task", "backend", "compiled", "correct", "error_kind", "message", "max_rel_l2"} <= set(
        verdict
    )
    assert (verdict["task"], verdict["backend"], verdict["correct"]) == ("silu", "nkisim", True)

    broken = tmp_path / "silu"
    shutil.copytree(SUITE / "silu", broken)
    (broken / "kernel.py").write_text(
        (SUITE / "silu" / "kernel.py").read_text().replace("j * cols:(j + 1) * cols", "0:cols")
    )
    failed = accelopt("check", str(broken), "--shapes", "small", "--seeds", "0", "--json")
    assert failed.code == 1
    verdict = failed.json()
    assert isinstance(verdict, dict)
    assert (verdict["correct"], verdict["error_kind"]) == (False, "incorrect")

    (broken / "reference.py").write_text(
        "M = 256\nN = 2048\n\ndef get_inputs():\n    return 1\n\ndef forward():\n    pass\n"
    )
    bad_task = accelopt("check", str(broken), "--json")
    assert bad_task.code == 2
    verdict = bad_task.json()
    assert isinstance(verdict, dict)
    assert verdict["error_kind"] == "task"
    assert "get_inputs() returned a int" in verdict["message"]

    missing = accelopt("check", str(tmp_path / "nowhere"))
    assert missing.code == 2
    assert "not a directory" in missing.err
    unknown_shapes = accelopt("check", str(SUITE / "silu"), "--shapes", "huge")
    assert unknown_shapes.code == 2
    assert "no shape set 'huge'" in unknown_shapes.err


def test_profile_prints_an_estimate_against_the_roofline(
    tmp_path: Path, accelopt: Callable[..., Run]
) -> None:
    run = accelopt("profile", str(SUITE / "silu"), "--shapes", "small", "--seeds", "0", "--json")
    assert run.code == 0, run.err
    profile = run.json()
    assert isinstance(profile, dict)
    assert profile["task"] == "silu"
    assert (profile["backend"], profile["latency_kind"], profile["correct"]) == (
        "nkisim",
        "estimated",
        True,
    )
    assert profile["latency_ms"] > 0
    assert 0 < profile["pct_of_peak"] <= 100
    assert profile["bound_by"] in {"tensor", "vector", "scalar", "gpsimd", "dma", "dependencies"}
    assert profile["counters"]["hbm_read_bytes"] == 256 * 2048 * 4
    assert profile["fingerprint"]["cost_model"] == profile["model_version"]

    trn2 = accelopt(
        "profile",
        str(SUITE / "silu"),
        "--shapes",
        "small",
        "--seeds",
        "0",
        "--target",
        "trn2",
        "--json",
    )
    assert trn2.code == 0
    assert trn2.json()["target"] == "trn2"

    people = accelopt("profile", str(SUITE / "silu"), "--shapes", "small", "--seeds", "0")
    assert "(estimated by the cost model" in people.out
    assert "% of peak" in people.out

    broken = tmp_path / "silu"
    shutil.copytree(SUITE / "silu", broken)
    (broken / "kernel.py").write_text(
        (SUITE / "silu" / "kernel.py").read_text().replace("j * cols:(j + 1) * cols", "0:cols")
    )
    failed = accelopt("profile", str(broken), "--shapes", "small", "--seeds", "0", "--json")
    assert failed.code == 1
    verdict = failed.json()
    assert isinstance(verdict, dict)
    assert (verdict["error_kind"], verdict["latency_ms"]) == ("incorrect", None)


def test_profile_on_neuron_without_neuron_says_what_is_missing(
    accelopt: Callable[..., Run], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    run = accelopt("profile", str(SUITE / "silu"), "--backend", "neuron")
    assert run.code == 2
    assert "the neuron backend cannot run here" in run.err
    assert "neuron-profile is not on PATH" in run.err


def test_bench_nkibench_prints_percent_of_peak(accelopt: Callable[..., Run]) -> None:
    run = accelopt(
        "bench", "nkibench", "--shapes", "small", "--tasks", "silu,matmul", "--seeds", "0", "--json"
    )
    assert run.code == 0, run.err
    result = run.json()
    assert isinstance(result, dict)
    assert [row["task"] for row in result["tasks"]] == ["silu", "matmul"]  # as asked
    for row in result["tasks"]:
        assert row["correct"]
        assert row["latency_kind"] == "estimated"
        assert row["pct_of_peak"] == pytest.approx(100 * row["roofline_ms"] / row["latency_ms"])
        # a ratio of two wall times (the schedule's and the simulation's): its target lives in
        # the benchmark's table (median_schedule_overhead), not here, where a busy host's stall
        # in either moves it (a CI run read 1.008 at small shapes)
        assert row["schedule_overhead"] > 0
        assert row["schedule_overhead"] == pytest.approx(row["schedule_s"] / row["nkisim_s"])
    pcts = [row["pct_of_peak"] for row in result["tasks"]]
    assert result["geomean_pct_of_peak"] == pytest.approx((pcts[0] * pcts[1]) ** 0.5)
    assert "accelopt_rank_correlation" not in result  # AccelOpt measured full shapes only
    table = accelopt("bench", "nkibench", "--shapes", "small", "--tasks", "silu", "--seeds", "0")
    assert "geomean % of peak" in table.out
    assert "latency ms (e)" in table.out


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (("gpu", "--task", "silu", "--task", "no_such_task"), "--task"),
        (("nkisim", "--tasks", "silu,no_such_task", "--shapes", "small"), "--tasks"),
        (("nkibench", "--tasks", "no_such_task", "--shapes", "small"), "--tasks"),
    ],
)
def test_a_benchmark_asked_for_an_unknown_suite_task_says_so(
    accelopt: Callable[..., Run], argv: tuple[str, ...], option: str
) -> None:
    """A usage error naming the option and the task (exit 2), before any device is opened
    (this host has no GPU), not a traceback."""
    run = accelopt("bench", *argv)
    assert run.code == 2, run.err
    assert f"Invalid value for {option}" in run.err
    assert "no_such_task" in run.err
    assert "Traceback" not in run.err


def test_jobs_lists_the_one_host_queue_with_runs_and_devices(
    fresh_sqlite_url: Callable[[], str], accelopt: Callable[..., Run]
) -> None:
    url = fresh_sqlite_url()
    store = SqlEventStore.open(url)
    try:
        queue = SqlJobQueue(store.engine)
        for job_id in ("a", "b"):
            queue.submit(
                job_id, queue="profile.nkisim.trn2", task="silu", kind="profile", payload={},
                priority=0.0,
            )  # fmt: skip
        stop = threading.Event()

        def one_and_stop(job: Job) -> dict[str, Any]:
            stop.set()  # serve ends after the job in hand: "a" (the older) runs, "b" waits
            return {"ok": True}

        queue.serve("host/cpu0", one_and_stop, stop=stop, idle_s=0.1)
    finally:
        store.close()
    listed = accelopt("jobs", "--json", "--db", url)
    assert listed.code == 0, listed.err
    by_id = {job["job_id"]: job for job in json.loads(listed.out)["jobs"]}
    assert by_id["a"]["status"] == "done"
    assert by_id["a"]["worker"] == "host/cpu0"
    assert by_id["a"]["runs"] == 1
    assert by_id["a"]["started_at"] <= by_id["a"]["finished_at"]
    assert (by_id["b"]["status"], by_id["b"]["worker"], by_id["b"]["runs"]) == ("queued", None, 0)
    table = accelopt("jobs", "--db", url)
    assert table.code == 0
    assert table.out.startswith("jobs: 1 queued, 0 running, 1 done, 0 failed; 0 retried\n")


def test_a_worker_on_sqlite_says_it_needs_postgresql(fresh_sqlite_url: Callable[[], str]) -> None:
    # a process of its own: the worker configures logging for its process's stdout
    refused = subprocess.run(
        [Path(sys.executable).with_name("accelopt"), "worker", "--backend", "nkisim",
         "--devices", "1", "--db", fresh_sqlite_url()],
        check=False, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert refused.returncode == 2
    assert "accelopt worker needs PostgreSQL" in refused.stderr


def test_report_names_a_missing_task_and_a_missing_folder(
    fresh_sqlite_url: Callable[[], str], accelopt: Callable[..., Run], tmp_path: Path
) -> None:
    url = fresh_sqlite_url()
    story(url).close()
    unknown = accelopt("report", "--db", url, "--task", "nope", "--out", str(tmp_path / "r.html"))
    assert unknown.code == 2
    assert "no task named nope in the log" in unknown.err
    nowhere = accelopt("report", "--db", url, "--out", str(tmp_path / "no" / "r.html"))
    assert nowhere.code == 2
    assert "is not a directory" in nowhere.err
    written = accelopt(
        "report", "--db", url, "--task", "rmsnorm", "--out", str(tmp_path / "r.html")
    )
    assert written.code == 0, written.err
    page = (tmp_path / "r.html").read_text()
    assert 'data-task="rmsnorm"' in page
    assert 'data-task="silu"' not in page  # only the task asked for
    assert "0.5 ms (e)" in page  # the best profile's latency, labelled estimated
    assert "4.000x" in page  # 2 ms → 0.5 ms


FORGERY = DATA / "adversarial" / "match_nkisim_data.py"  # NumPy into the output, by pattern
EMPTY_RESULT = (
    "\nimport os as _os, stat as _stat\n"
    "for _fd in map(int, _os.listdir('/proc/self/fd')):\n"
    "    try:\n"
    "        if _fd > 2 and _stat.S_ISREG(_os.fstat(_fd).st_mode):\n"
    "            _os.ftruncate(_fd, 0)\n"
    "    except OSError:\n"
    "        pass  # the listing's own descriptor, closed by now\n"
    "_os._exit(0)\n"
)


@pytest.mark.parametrize("command", ["check", "profile"])
def test_check_and_profile_refuse_a_forgery_and_a_junk_result_in_one_line(
    tmp_path: Path, accelopt: Callable[..., Run], command: str
) -> None:
    """Issue 23: what a kernel or a task's code hands back is data; the verdict is a line."""
    forged = tmp_path / "forged"
    shutil.copytree(NKI_SUITE / "silu", forged)
    (forged / "kernel.py").write_text(FORGERY.read_text())
    refused = accelopt(command, str(forged), "--shapes", "small", "--seeds", "0")
    assert refused.code == 1
    assert "Traceback" not in refused.out + refused.err
    assert "nkisim's own storage behind a tensor" in refused.out + refused.err

    junk = tmp_path / "junk"
    shutil.copytree(NKI_SUITE / "silu", junk)
    with (junk / "reference.py").open("a") as reference:
        reference.write(EMPTY_RESULT)
    failed = accelopt(command, str(junk), "--shapes", "small", "--seeds", "0", "--json")
    assert failed.code == 2  # the task's fault
    assert "Traceback" not in failed.out + failed.err
    verdict = failed.json()
    assert verdict["error_kind"] == "task"
    assert "handed back an empty result" in verdict["message"]
    assert "\n" not in verdict["message"]


def test_replay_rebuilds_the_reports_projection_by_name(
    fresh_sqlite_url: Callable[[], str], accelopt: Callable[..., Run]
) -> None:
    url = fresh_sqlite_url()
    story(url).close()
    whole = accelopt("--db", url, "replay", "--projection", "report", "--json").json()
    early = accelopt("--db", url, "replay", "--projection", "report", "--until", "1", "--json")
    assert isinstance(whole, dict)
    assert (whole["projection"], whole["position"]) == ("report", 4)
    rmsnorm = whole["state"]["tasks"]["rmsnorm"]
    assert (rmsnorm["baseline_ms"], rmsnorm["best_ms"]) == (2.0, 0.5)
    before = early.json()
    assert isinstance(before, dict)
    assert before["state"]["tasks"]["rmsnorm"]["baseline_ms"] is None  # not profiled yet


def test_a_profile_names_the_configs_of_each_autotuned_kernel() -> None:
    from daemon.cli.kernels import _profile_lines
    from nkibench.result import KernelResult

    result = KernelResult(
        "silu",
        "triton",
        "NVIDIA H100 80GB HBM3",
        "full",
        compiled=True,
        correct=True,
        latency_ms=0.0123,
        latency_kind="measured",
        autotuned={"silu_kernel": ["BLOCK=128, num_warps=4", "BLOCK=256, num_warps=8"]},
    )
    lines = _profile_lines(result)
    assert "autotuned silu_kernel: BLOCK=128, num_warps=4 | BLOCK=256, num_warps=8" in lines


def test_a_profile_over_workloads_shows_each_workloads_latency_and_kind() -> None:
    from daemon.cli.kernels import _profile_lines
    from nkibench.result import KernelResult, WorkloadOutcome

    def outcome(name: str, latency: float) -> WorkloadOutcome:
        return WorkloadOutcome(
            name=name,
            uuid=f"uuid-{name}",
            correct=True,
            latency_ms=latency,
            latency_kind="estimated",
            error_kind=None,
            max_rel_l2=0.0,
            pct_of_peak=None,
        )

    result = KernelResult(
        "silu",
        "nkisim",
        "trn2",
        "full",
        compiled=True,
        correct=True,
        latency_ms=2.0,
        latency_kind="estimated",
        workloads=[outcome("w0", 1.0), outcome("w1", 4.0)],
    )
    lines = _profile_lines(result)
    assert lines[1] == (
        "latency   2.0000 ms (estimated by the cost model), the geometric mean over 2 workloads"
    )
    assert lines[2:4] == [
        "workload  w0 (uuid uuid-w0): 1.0000 ms (estimated)",
        "workload  w1 (uuid uuid-w1): 4.0000 ms (estimated)",
    ]


def test_a_ported_folder_keeps_the_tasks_workloads_and_their_files(tmp_path: Path) -> None:
    from agents.port import PortOutcome
    from daemon.cli.port import write_ported_folder
    from nkibench.task.spec import load_task
    from tests.support import DATA

    task = load_task(DATA / "format" / "gather_workloads")
    outcome = PortOutcome("p1", True, 1, task.kernel_source, None, "ported")
    write_ported_folder(task, outcome, tmp_path / "out")
    ported = load_task(tmp_path / "out")
    assert [w.uuid for w in ported.workloads] == [w.uuid for w in task.workloads]
    assert ported.workload_files == task.workload_files


def test_a_profile_names_the_counts_reference_py_gave_its_roofline() -> None:
    from daemon.cli.kernels import _profile_lines
    from nkibench.policy.roofline import Work, pct_of_peak, roofline
    from nkibench.result import KernelResult

    line = roofline(Work(1e6, 0.0, 8e6, "task.toml", counts={"valid": 1e6}), "trn2")
    plain = roofline(Work(1e6, 0.0, 8e6, "task.toml"), "trn2")
    result = KernelResult("ragged_rows", "nkisim", "trn2", "full", compiled=True, correct=True)
    result.latency_ms = 2 * line.ms
    result.pct_of_peak = pct_of_peak(line.seconds, result.latency_ms * 1e-3)
    result.roofline = line.to_json()
    shown = [text for text in _profile_lines(result) if text.startswith("roofline")]
    assert shown == [
        f"roofline  {line.ms:.4f} ms (memory-bound, counts from task.toml and reference.py: "
        "valid 1e+06) -> 50.0% of peak"
    ]
    result.roofline = plain.to_json()  # no counts: the line as it always was
    assert "counts" not in result.roofline["work"]
    shown = [text for text in _profile_lines(result) if text.startswith("roofline")]
    assert shown == [
        f"roofline  {plain.ms:.4f} ms (memory-bound, counts from task.toml) -> 50.0% of peak"
    ]
