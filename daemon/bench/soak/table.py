"""`accelopt bench soak`'s table and notes, from the JSON-ready result of run_soak_benchmark."""

from __future__ import annotations

from typing import Any

from rich.table import Table

__all__ = ["SOAK_TRENDS", "soak_notes", "soak_table"]


def _cell(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


SOAK_TRENDS = {
    "rss_mb": "resident memory, MB",
    "open_fds": "open files",
    "threads": "threads",
    "children": "child processes",
    "jobs_pending": "jobs pending",
}


def soak_table(result: dict[str, Any]) -> Table:
    churn = result["churn"]
    table = Table(
        title=f"the daemon under churn for {result['minutes']:g} min of wall time (seed "
        f"{result['seed']}, {churn['actions']} actions; nkisim, small shapes); trends after a "
        f"{result['warmup_s'] / 60:.3g}-min warm-up, {result['steady_samples']} samples",
        title_justify="left",
    )
    for column in ("metric", "value", "growth per hour ± s.e.", "bound per hour", "verdict"):
        table.add_column(column, justify="left" if column in ("metric", "verdict") else "right")
    for key, name in SOAK_TRENDS.items():
        t = result["trends"][key]
        if t["slope_per_h"] is None:
            table.add_row(name, "-", "-", "-", t["verdict"])
            continue
        table.add_row(
            name,
            f"{t['first']:.4g} → {t['last']:.4g} (min {t['low']:.4g}, max {t['high']:.4g})",
            f"{t['slope_per_h']:+.3g} ± {_cell(t['se_per_h'], '.2g')}",
            f"{t['bound_per_h']:.2g}",
            t["verdict"],
        )
    clock = result["clock"]
    rows = (
        ("events per minute", _cell(result["events_per_min"], ".1f")),
        ("event log, MB (and MB per minute)", _log_size(result)),
        ("jobs completed (ProfileRecorded)", str(result["jobs_completed"])),
        (
            "searches finished / started",
            f"{result['searches_finished']} / {result['searches_started']}",
        ),
        (
            "plans, candidates, lessons",
            f"{result['plans']}, {result['candidates']}, {result['lessons']}",
        ),
        ("promotions, demotions", f"{result['promotions']}, {result['demotions']}"),
        (
            "LLM calls recorded / answered",
            f"{result['llm_calls']} / {result['llm_calls_answered']}",
        ),
        (
            "revisions, invalid, removals",
            f"{result['revisions']}, {result['invalid']}, {result['removals']}",
        ),
        (
            "clock: snapshots, re-verifications, WAL truncations seen",
            f"{clock['snapshots']}, {clock['reverify_jobs_done']}, "
            f"{result['wal_truncations_seen']}",
        ),
        ("jobs left running after the stop", str(result["jobs_left_running"])),
        (
            "children left alive, orphans",
            f"{len(result['children_left'])}, {len(result['orphans'])}",
        ),
        ("zombies (most seen at once)", str(result["zombies_max"])),
        ("folder states the log missed (kept ≥ 3 s)", str(len(result["missed_changes"]))),
        ("folders the log disagrees with at the end", str(len(result["disagreements"]))),
        ("errors in the daemon's log", str(sum(result["log_errors"].values()))),
        (
            "exit status after SIGTERM",
            "killed" if result["exit_code"] is None else str(result["exit_code"]),
        ),
        ("stop time, s (wall)", f"{result['stop_s']:.1f}"),
    )
    for name, value in rows:
        table.add_row(name, value, "", "", "")
    return table


def _log_size(result: dict[str, Any]) -> str:
    return (
        f"{_cell(result['log_mb'], '.2f')} "
        f"({_cell(result['log_mb_per_min'], '.3f')} per minute, append-only)"
    )


def soak_notes(result: dict[str, Any]) -> list[str]:
    """The lines printed under the table: the verdict, then every finding the table counts."""
    grows = [SOAK_TRENDS[k] for k, t in result["trends"].items() if t["verdict"] == "GROWS"]
    lines = ["verdict: " + (f"GROWS: {', '.join(grows)}" if grows else "no growth")]
    if result["daemon_died_at_s"] is not None:
        lines.append(f"the daemon died {result['daemon_died_at_s']:.0f} s into the run")
    lines += [f"a folder state the log missed: {line}" for line in result["missed_changes"]]
    lines += [f"log and folder disagree at the end: {line}" for line in result["disagreements"]]
    lines += [f"daemon error x{n}: {message}" for message, n in result["log_errors"].items()]
    lines += [f"daemon warning x{n}: {message}" for message, n in result["log_warnings"].items()]
    lines += [f"churn error: {error}" for error in result["churn"]["errors"]]
    return lines
