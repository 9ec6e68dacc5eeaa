"""The soak's parts without a daemon: the growth arithmetic, the seeded churn and its effect
on a real folder, the sampler's /proc reading, the scripted agents, and the audit."""

from __future__ import annotations

import itertools
import math
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from daemon.bench.scripted_llm import Request
from daemon.bench.soak import script
from daemon.bench.soak.audit import Applied, disagreements, log_messages, missed_changes
from daemon.bench.soak.churn import (
    AFTER,
    WEIGHTS,
    Action,
    ActionKind,
    Breakage,
    ChurnApplier,
    SlotState,
    churn_plan,
)
from daemon.bench.soak.growth import BOUNDS, bandwidth, fit_trend, newey_west_se
from daemon.bench.soak.report import growth_report, wal_truncations
from daemon.bench.soak.run import SOAK_TASKS, SoakConfig, daemon_command
from daemon.bench.soak.sampler import ProcessProbe, Sample, survivors
from daemon.cli import cli
from daemon.coordinator.service import DaemonOptions
from nkibench.errors import TaskError
from nkibench.suites import NKI_LEGACY_SUITE
from nkibench.task.files import folder_hash, read_task_files
from nkibench.task.spec import load_task
from store.projections.library import LibraryState, TaskRecord

# --- growth -------------------------------------------------------------------------------


def minutes(n: int, every_s: float = 5.0) -> list[float]:
    return [i * every_s for i in range(n)]


def test_a_straight_line_has_its_slope_and_no_error() -> None:
    times = minutes(100)
    trend = fit_trend(times, [100.0 + 2.0 * t / 3600 for t in times], bound_per_h=0.5)
    assert trend.slope_per_h == pytest.approx(2.0)
    assert trend.se_per_h == pytest.approx(0.0, abs=1e-9)
    assert trend.verdict == "GROWS"
    assert trend.first == 100.0
    assert trend.last == pytest.approx(100.0 + 2.0 * 495 / 3600)


def test_noise_alone_is_no_growth() -> None:
    rng = random.Random(1)
    times = minutes(600)
    trend = fit_trend(times, [150.0 + rng.gauss(0, 3) for _ in times], bound_per_h=0.37)
    assert abs(trend.slope_per_h) < 2 * trend.se_per_h
    assert trend.verdict == "no growth (within noise)"


def test_a_leak_under_noise_is_found() -> None:
    rng = random.Random(2)
    times = minutes(600)  # 50 minutes
    values = [150.0 + 20.0 * t / 3600 + rng.gauss(0, 3) for t in times]
    trend = fit_trend(times, values, bound_per_h=0.37)
    assert trend.slope_per_h == pytest.approx(20.0, rel=0.1)
    assert trend.verdict == "GROWS"


def test_a_significant_slope_below_the_bound_is_no_growth() -> None:
    times = minutes(100)
    values = [10.0 + 0.1 * t / 3600 + (0.001 if i % 2 else -0.001) for i, t in enumerate(times)]
    trend = fit_trend(times, values, bound_per_h=0.5)
    assert trend.slope_per_h > 2 * trend.se_per_h
    assert trend.verdict == "no growth (below bound)"


def test_correlated_noise_widens_the_error() -> None:
    """A slow wave (a search holding memory for many samples) is not a trend: the textbook
    error, which takes the samples as independent, is too small for it."""
    times = minutes(240)
    values = [100.0 + 5.0 * math.sin(2 * math.pi * t / 1200) for t in times]
    trend = fit_trend(times, values)
    assert trend.autocorrelation > 0.9
    n = len(times)
    x = [t / 3600 - sum(times) / n / 3600 for t in times]
    sxx = sum(a * a for a in x)
    residuals = [
        v - sum(values) / n - trend.slope_per_h * a for a, v in zip(x, values, strict=True)
    ]
    naive = math.sqrt(sum(e * e for e in residuals) / (n - 2) / sxx)
    assert trend.se_per_h > 1.5 * naive
    assert trend.verdict == "no growth (within noise)"


def test_busier_moments_without_a_rising_floor_are_no_growth() -> None:
    """More searches at once near the end lift the thread count, not its floor."""
    rng = random.Random(3)
    times = minutes(600)
    values = [12.0 + (3.0 if rng.random() < i / 900 else 0.0) for i, _ in enumerate(times)]
    trend = fit_trend(times, values, bound_per_h=BOUNDS["threads"])
    assert trend.slope_per_h > 2 * trend.se_per_h
    assert trend.floor_rise == 0.0
    assert trend.verdict == "no growth (floor flat)"
    leaking = fit_trend(times, [v + i // 120 for i, v in enumerate(values)], bound_per_h=0.1)
    assert leaking.floor_rise > 0
    assert leaking.verdict == "GROWS"


def test_the_newey_west_window_grows_slowly_with_the_samples() -> None:
    assert [bandwidth(n) for n in (10, 100, 600, 1800)] == [2, 4, 5, 7]
    x = [-1.0, 0.0, 1.0]
    assert newey_west_se(x, [0.0, 0.0, 0.0], sxx=2.0) == 0.0


def test_too_few_samples_give_no_verdict() -> None:
    assert fit_trend([], []).verdict == "too few samples"
    assert fit_trend([0.0, 5.0, 10.0], [1.0, 2.0, 3.0]).verdict == "too few samples"
    assert fit_trend([5.0] * 10, [1.0] * 10).verdict == "too few samples"
    with pytest.raises(ValueError, match="times"):
        fit_trend([0.0], [1.0, 2.0])


def test_every_bound_allows_its_four_weeks_allowance() -> None:
    assert BOUNDS["rss_mb"] * 28 * 24 == pytest.approx(250.0)
    assert BOUNDS["open_fds"] * 28 * 24 == pytest.approx(256.0)


def sample(t_s: float, **values: float) -> Sample:
    fields: dict[str, float] = {
        "rss_mb": 100.0,
        "open_fds": 20,
        "threads": 10,
        "children": 0,
        "zombies": 0,
        "events": int(t_s),
        "log_bytes": int(1000 * t_s),
        "wal_bytes": 0,
        "jobs_pending": 0,
        "jobs_running": 0,
    }
    return Sample(t_s=t_s, **(fields | values))  # type: ignore[arg-type]


def test_the_report_fits_only_the_samples_after_the_warm_up() -> None:
    warm = [sample(t, rss_mb=50.0 + t) for t in range(0, 60, 5)]  # imports, caches
    steady = [sample(t, rss_mb=110.0 + (1 if t % 10 else -1) * 0.5) for t in range(60, 600, 5)]
    report = growth_report(warm + steady, warmup_s=60.0)
    assert report["steady_samples"] == len(steady)
    assert report["trends"]["rss_mb"]["verdict"] == "no growth (within noise)"
    assert report["no_growth"] is True
    assert report["events_per_min"] == pytest.approx(60.0)
    assert report["trends"]["open_fds"]["slope_per_h"] == 0.0
    leaking = growth_report([sample(t, open_fds=20 + t // 30) for t in range(0, 600, 5)], 60.0)
    assert leaking["trends"]["open_fds"]["verdict"] == "GROWS"
    assert leaking["no_growth"] is False


def test_an_undefined_trend_is_null_in_json() -> None:
    report = growth_report([sample(0.0), sample(5.0)], warmup_s=0.0)
    assert report["trends"]["rss_mb"]["slope_per_h"] is None
    assert report["trends"]["rss_mb"]["se_per_h"] is None


def test_wal_truncations_are_the_shrinks_of_the_file() -> None:
    sizes = [0, 100, 400, 50, 60, 60, 0, 10]
    assert wal_truncations([sample(i, wal_bytes=b) for i, b in enumerate(sizes)]) == 2


def test_the_default_warm_up_and_sampling() -> None:
    assert SoakConfig(minutes=60).warmup_s == 600.0
    assert SoakConfig(minutes=5).warmup_s == 60.0
    assert SoakConfig(minutes=1).warmup_s == 30.0
    assert SoakConfig(minutes=60).every_s == 5.0
    assert SoakConfig(minutes=1).every_s == 2.0


def test_the_soak_runs_the_daemon_command_with_every_clock_period(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = SoakConfig(minutes=1, rescan_s=1.0, reverify_s=36.0, snapshot_s=3.0, checkpoint_s=4.0)
    argv = daemon_command(config, tmp_path)
    assert argv[1:4] == ["-m", "daemon", "daemon"]
    built: list[DaemonOptions] = []

    class Recorded:
        @staticmethod
        def open(settings: object, url: str, options: DaemonOptions) -> Recorded:
            built.append(options)
            return Recorded()

        def run(self) -> int:
            return 0

    monkeypatch.setattr("daemon.cli.service.Daemon", Recorded)
    monkeypatch.setenv("ACCELOPT_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("ACCELOPT_DB", raising=False)
    result = CliRunner().invoke(cli, argv[3:])
    assert result.exit_code == 0, result.output
    (options,) = built
    assert (options.rescan_s, options.reverify_s, options.snapshot_s, options.checkpoint_s) == (
        1.0,
        36.0,
        3.0,
        4.0,
    )
    assert (options.watch, options.backend, options.shapes) == (tmp_path, "nkisim", "small")
    assert options.search == config.search
    assert options.devices is not None
    assert len(options.devices) == 1  # one nkisim worker
    assert options.max_resident_mb == 2048.0  # the soak's daemon has the default ceiling
    result = CliRunner().invoke(cli, [*argv[3:], "--max-resident-mb", "0"])
    assert result.exit_code == 0, result.output
    assert built[-1].max_resident_mb is None  # 0: no ceiling


# --- the churn ----------------------------------------------------------------------------


def plan(seed: int, duration_s: float = 3600.0) -> list[Action]:
    return churn_plan(seed, duration_s=duration_s, mean_interval_s=10.0, slots=6, tasks=SOAK_TASKS)


def test_the_same_seed_gives_the_same_plan() -> None:
    assert plan(7) == plan(7)
    assert plan(7) != plan(8)
    assert plan(7, duration_s=600.0) == [a for a in plan(7) if a.at_s < 600.0]


def test_a_plan_is_timed_and_fills_half_the_slots_first() -> None:
    actions = plan(3)
    assert [a.serial for a in actions] == list(range(len(actions)))
    assert all(b.at_s >= a.at_s for a, b in itertools.pairwise(actions))
    assert all(0.0 <= a.at_s < 3600.0 for a in actions)
    assert [(a.kind, a.slot) for a in actions[:3]] == [
        ("drop", "slot0"),
        ("drop", "slot1"),
        ("drop", "slot2"),
    ]
    assert 300 < len(actions) < 420  # one every 10 s on average


def test_every_action_is_allowed_in_its_slot_state_and_all_occur() -> None:
    state: dict[str, SlotState] = {}
    for action in plan(11):
        before = state.get(action.slot, "absent")
        assert action.kind in WEIGHTS[before], (action, before)
        assert (action.task is not None) == action.kind.startswith("drop")
        assert (action.breakage is not None) == (action.kind in ("break", "drop_broken"))
        state[action.slot] = AFTER[action.kind]
    kinds = {a.kind for a in plan(11)}
    assert kinds == set(AFTER)
    assert {a.breakage for a in plan(11)} >= {
        "bad_toml",
        "no_reference",
        "syntax_error",
        "not_utf8",
    }


def test_a_plan_needs_a_slot_and_a_task() -> None:
    with pytest.raises(ValueError, match="slot"):
        churn_plan(0, duration_s=60, mean_interval_s=5, slots=0, tasks=["silu"])


def loads(folder: Path) -> bool:
    try:
        load_task(folder)
    except TaskError:
        return False
    return True


@pytest.mark.parametrize("breakage", ["bad_toml", "no_reference", "syntax_error", "not_utf8"])
def test_a_break_makes_the_folder_invalid_and_its_fix_undoes_it(
    tmp_path: Path, breakage: Breakage
) -> None:
    watch, staging = tmp_path / "kernels", tmp_path / "staging"
    watch.mkdir()
    applier = ChurnApplier(watch, staging, NKI_LEGACY_SUITE)
    applier.apply(Action(0, 0.0, "drop", "slot0", task="silu"))
    folder = watch / "slot0"
    assert loads(folder)
    dropped = folder_hash(read_task_files(folder))
    assert dropped == folder_hash(
        read_task_files(NKI_LEGACY_SUITE / "silu")
    )  # the suite's, as it is
    applier.apply(Action(1, 1.0, "edit_in_place", "slot0"))
    applier.apply(Action(2, 2.0, "edit_atomic", "slot0"))
    edited = folder_hash(read_task_files(folder))
    assert edited != dropped
    assert loads(folder)
    assert "# soak: atomic save 2" in (folder / "kernel.py").read_text()
    assert sorted(p.name for p in folder.iterdir()) == ["kernel.py", "reference.py", "task.toml"]
    applier.apply(Action(3, 3.0, "break", "slot0", breakage=breakage))
    assert not loads(folder)
    applier.apply(Action(4, 4.0, "fix", "slot0"))
    assert loads(folder)
    assert folder_hash(read_task_files(folder)) == edited  # an undo
    applier.apply(Action(5, 5.0, "remove", "slot0"))
    assert not folder.exists()


def test_a_broken_drop_arrives_broken_and_is_fixed(tmp_path: Path) -> None:
    watch = tmp_path / "kernels"
    watch.mkdir()
    applier = ChurnApplier(watch, tmp_path / "staging", NKI_LEGACY_SUITE)
    applier.apply(Action(0, 0.0, "drop_broken", "slot1", task="adamw", breakage="not_utf8"))
    assert not loads(watch / "slot1")
    applier.apply(Action(1, 1.0, "fix", "slot1"))
    assert loads(watch / "slot1")


def test_a_plan_applies_from_start_to_end(tmp_path: Path) -> None:
    watch = tmp_path / "kernels"
    watch.mkdir()
    applier = ChurnApplier(watch, tmp_path / "staging", NKI_LEGACY_SUITE)
    state: dict[str, SlotState] = {}
    for action in plan(5, duration_s=1200.0):
        applier.apply(action)
        state[action.slot] = AFTER[action.kind]
    for slot, now in state.items():
        folder = watch / slot
        assert folder.is_dir() == (now != "absent")
        if now != "absent":
            assert loads(folder) == (now == "valid")


# --- the sampler --------------------------------------------------------------------------


def test_the_sampler_reads_a_process_and_its_descendants() -> None:
    probe = ProcessProbe(os.getpid())
    rss_mb, threads = probe.status()
    assert rss_mb > 1.0
    assert threads >= 1
    assert probe.open_fds() >= 3
    sleeper = "import time; time.sleep(30)"
    code = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {sleeper!r}])"
    child = subprocess.Popen([sys.executable, "-c", code])
    # (this test's process may have other children: a warm process a Triton test left idle)
    try:
        deadline = time.monotonic() + 10
        while not ProcessProbe(child.pid).descendants() and time.monotonic() < deadline:
            time.sleep(0.05)
        [grandchild] = ProcessProbe(child.pid).descendants()
        below = probe.descendants()
        assert child.pid in below
        assert grandchild in below
        ours = {pid: below[pid] for pid in (child.pid, grandchild)}
        assert survivors(ours) == sorted(ours)
    finally:
        child.kill()
        child.wait()
    time.sleep(0.1)
    assert survivors(ours) == [grandchild]  # killing the child left its own child running
    os.kill(grandchild, 9)


# --- the scripted agents ------------------------------------------------------------------


def request(model: str, user: str, seed: int = 0) -> Request:
    messages = [{"role": "user", "content": user}]
    return Request(model=model, messages=messages, seed=seed, call_id="c", body={})


def test_the_soak_script_edits_the_suites_silu() -> None:
    source = (NKI_LEGACY_SUITE / "silu" / "kernel.py").read_text()
    for text in script.SILU_EDITS:
        assert source.count(text) == 1, text
    reference = (NKI_LEGACY_SUITE / "silu" / "reference.py").read_text()
    planner, executor = script.MODELS["ACCELOPT_PLANNER_MODEL"], "soak-executor"
    plans = {script.answer(request(planner, reference, seed)).text[:9] for seed in (0, 1)}
    assert plans == {"PLAN-FAST", "PLAN-SLOW"}
    prompt = f"Kernel:\n```python\n{source}```\n\nPlan:\nPLAN-FAST: ..."
    fast = script.answer(request(executor, prompt, 0)).text
    assert "nl.sigmoid" in fast
    assert "nl.exp" not in fast
    wrong = script.answer(request(executor, prompt, 1)).text
    assert "y = nl.multiply(tile, e)" in wrong
    wrong_code = wrong.split("```python\n")[1].split("```")[0]
    fixing = f"This kernel fails: incorrect.\n\nKernel:\n```python\n{wrong_code}```\n"
    fixed = script.answer(request(executor, fixing)).text
    assert "y = nl.multiply(tile, r)" in fixed
    other = "Kernel:\n```python\nkernel text\n# soak: variant 0\n```\nPlan:\nPLAN-KEEP"
    varied = script.answer(request(executor, other, 1)).text
    assert varied.count("# soak: variant") == 1
    assert "# soak: variant 1" in varied
    assert script.answer(request("someone-else", "hi")).status == 404


# --- the audit ----------------------------------------------------------------------------


def test_the_audit_finds_folders_the_log_does_not_show(tmp_path: Path) -> None:
    watch = tmp_path / "kernels"
    applier = ChurnApplier(watch, tmp_path / "staging", NKI_LEGACY_SUITE)
    watch.mkdir()
    for slot in ("good", "stuck", "ghost"):
        applier.apply(Action(0, 0.0, "drop", slot, task="silu"))
    applier.apply(Action(1, 0.0, "remove", "ghost"))
    current = folder_hash(read_task_files(watch / "good"))
    library = LibraryState()
    library.tasks["good"] = TaskRecord("good", str(watch / "good"), "optimizing", current)
    library.tasks["stuck"] = TaskRecord("stuck", str(watch / "stuck"), "invalid", "f" * 64)
    library.tasks["ghost"] = TaskRecord("ghost", str(watch / "ghost"), "stale", current)
    found = disagreements(library, watch, ["good", "stuck", "ghost", "never"])
    assert len(found) == 2
    assert found[0].startswith("stuck: on disk valid")
    assert "the log says invalid ffffffffffff" in found[0]
    assert found[1] == f"ghost: gone from disk, the log says stale {current[:12]}"


def test_a_folder_state_the_log_never_showed_is_missed() -> None:
    """The undo of a break returns a folder to a hash recorded before; the log must show it
    again, or the task stays invalid."""
    a, b = "a" * 64, "b" * 64

    def done(
        serial: int, at: float, kind: ActionKind, state: SlotState, content_hash: str | None
    ) -> Applied:
        action = Action(serial, at, kind, "slot0")
        return Applied(action, 1000.0 + at, state, content_hash)

    applied = [
        done(0, 0.0, "drop", "valid", a),
        done(1, 10.0, "break", "broken", b),
        done(2, 20.0, "fix", "valid", a),
        done(3, 40.0, "edit_atomic", "broken", b),  # undone within the debounce: not a state
        done(4, 41.0, "fix", "valid", a),
        done(5, 60.0, "remove", "absent", None),
    ]
    stream: list[tuple[float, str, str | None]] = [
        (1000.5, "valid", a),
        (1010.5, "invalid", b),
        (1060.5, "absent", a),
    ]
    missed = missed_changes({"slot0": stream}, applied, stopped_at=1070.0)
    assert len(missed) == 2
    assert missed[0].startswith("slot0: fix #2 at ")
    assert missed[0].endswith(
        "left it valid aaaaaaaaaaaa; 20 s later the log still said invalid bbbbbbbbbbbb"
    )
    assert missed[1].startswith("slot0: fix #4")
    healed: list[tuple[float, str, str | None]] = [
        *stream[:2],
        (1020.5, "valid", a),
        (1060.5, "absent", a),
    ]
    assert missed_changes({"slot0": healed}, applied, stopped_at=1070.0) == []
    assert "the log still said nothing" in missed_changes({}, applied[:1], stopped_at=1005.0)[0]


def test_the_daemons_log_lines_are_counted_by_level(tmp_path: Path) -> None:
    log = tmp_path / "daemon.log"
    log.write_text(
        '<6>{"event": "ready", "level": "info"}\n'
        '<4>{"event": "task invalid", "level": "warning"}\n'
        '<4>{"event": "task invalid", "level": "warning"}\n'
        '<3>{"event": "search failed", "level": "error"}\n'
        "Traceback (most recent call last):\n"
    )
    levels = log_messages(log)
    assert levels["warning"]["task invalid"] == 2
    assert levels["error"]["search failed"] == 1
    assert sum(levels["other"].values()) == 1
