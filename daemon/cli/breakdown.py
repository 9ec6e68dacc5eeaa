"""`accelopt bench gpu --breakdown`'s table: where each task's evaluation spent its wall
time (nkibench.breakdown), phase by phase, against its work floor."""

from __future__ import annotations

from typing import Any

import click
from rich.table import Table

from daemon.cli.render import cell, print_table
from nkibench.breakdown import COLUMNS, PARENT_COLUMNS

__all__ = ["print_breakdown"]

HEADINGS = {
    "spawn_sandbox": "spawn+sandbox",
    "cuda_init": "CUDA init*",
    "checked_runs": "checked runs*",
    "timed_runs": "timed runs*",
    "child_other": "child other",
}


def _heading(column: str) -> str:
    if column in HEADINGS:
        return HEADINGS[column]
    return column if column in PARENT_COLUMNS else f"{column}*"


def print_breakdown(result: dict[str, Any], shapes: str) -> None:
    """One row per task and pass: seconds per phase (columns zero in every row left out),
    the wall, the work floor and wall/floor."""
    rows = [
        (number, row)
        for number, run in enumerate(result["passes"], start=1)
        for row in run
        if "breakdown" in row
    ]
    shown = [c for c in COLUMNS if any(r["breakdown"]["seconds"][c] for _, r in rows)]
    where = result["gpu"] or "no GPU (Triton's CPU interpreter)"
    table = Table(title=f"Where the time goes, {shapes} shapes: wall seconds on {where}")
    table.add_column("task")
    table.add_column("pass", justify="right")
    for column in shown:
        table.add_column(_heading(column), justify="right")
    for column in ("wall", "floor*", "wall/floor"):
        table.add_column(column, justify="right")
    for number, row in rows:
        measured = row["breakdown"]
        table.add_row(
            row["task"],
            str(number),
            *(f"{measured['seconds'][c]:.2f}" for c in shown),
            f"{measured['wall_s']:.2f}",
            f"{measured['floor_s']:.3f}",
            cell(measured["wall_over_floor"], ".1f"),
        )
    print_table(table)
    click.echo(
        "* the child's own report (diagnostics, never a verdict); spawn+sandbox (a child's "
        "life less its own total), parent (outside every child: folders, static check, "
        "teardown), counters (the children that take the GPU's hardware counters, "
        "Nsight Compute's start and replays included) and wall are the parent's "
        "measurements; child other is what a child left unnamed. The floor is reference + "
        "checked runs + timed runs (and, where counters were taken, Nsight Compute's "
        "replays of the counted run); the first checked run, which compiles, is compile."
    )
    for number, row in rows:
        for note in row["breakdown"]["notes"]:
            click.echo(f"note: {row['task']} pass {number}: {note}")
