"""`accelopt bench fidelity`: the cost model's estimates of AccelOpt's own NKIBench kernels
against AccelOpt's measured trn1 profiles (nkibench/benchmarks/fidelity.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.table import Table

from daemon.cli.options import json_option
from daemon.cli.render import cell, emit_json, print_table
from nkibench.benchmarks.fidelity import run_fidelity_benchmark

__all__ = ["fidelity_command"]

MIB = 1024**2


def _pair(pair: dict[str, Any], scale: float = 1.0, spec: str = ".0f") -> str:
    estimated = pair["estimated"]
    return f"{cell(None if estimated is None else estimated / scale, spec)} / " + format(
        pair["measured"] / scale, spec
    )


def _engine(row: dict[str, Any], engine: str) -> str:
    busy = row["engines"][engine]
    mark = "" if busy["within_2x"] else " !"
    return f"{busy['estimated_ms']:.2f} / {busy['measured_ms']:.2f}{mark}"


def _print_tasks(result: dict[str, Any]) -> None:
    table = Table(
        title=f"cost model {result['model_version']} against AccelOpt's trn1 profiles "
        f"(e: estimated, m: measured; {result['shapes']} shapes)"
    )
    columns = (
        "task",
        "fit",
        "e ms",
        "m ms",
        "e/m",
        "% peak e / m",
        "VectorE ms e / m",
        "ScalarE ms e / m",
        "GpSimd ms e / m",
        "HBM read MiB e / m",
        "HBM write MiB e / m",
        "spill MiB e / m",
    )
    for column in columns:
        table.add_column(column, justify="left" if column == "task" else "right")
    for row in result["tasks"]:
        name = row["task"] if row["correct"] else f"{row['task']} ({row['message'][:50]})"
        table.add_row(
            name,
            "fitted" if row["fitted"] else "",
            cell(row["estimated_ms"], ".3f"),
            f"{row['measured_ms']:.3f}",
            cell(row["ratio"], ".2f"),
            f"{cell(row['pct_of_peak_estimated'], '.1f')} / "
            f"{cell(row['pct_of_peak_measured'], '.1f')}",
            _engine(row, "vector"),
            _engine(row, "scalar"),
            _engine(row, "gpsimd"),
            _pair(row["hbm_read_bytes"], MIB),
            _pair(row["hbm_write_bytes"], MIB),
            _pair(row["spill_bytes"], MIB),
        )
    print_table(table)


def _print_samples(samples: list[dict[str, Any]]) -> None:
    if not samples:
        return
    table = Table(title="AccelOpt's optimized samples against their baselines")
    for column in ("sample", "task", "e ms", "m ms", "speedup e", "speedup m", "e / m"):
        table.add_column(column, justify="left" if column in ("sample", "task") else "right")
    for row in samples:
        estimated, measured = row["estimated_speedup"], row["measured_speedup"]
        table.add_row(
            row["sample"] if row["correct"] else f"{row['sample']} ({row['message'][:50]})",
            row["task"],
            cell(row["estimated_ms"], ".3f"),
            f"{row['measured_ms']:.3f}",
            cell(estimated, ".2f"),
            f"{measured:.2f}",
            cell(estimated / measured if estimated else None, ".2f"),
        )
    print_table(table)


def _print_summary(summary: dict[str, Any]) -> None:
    table = Table(title="agreement (Spearman of latencies and of % of peak; ratios e / m)")
    groups = {"all": summary, "fitted": summary["fitted"], "predicted": summary["predicted"]}
    table.add_column("figure")
    for group in groups:
        table.add_column(group, justify="right")
    figures = (
        ("tasks", "tasks", "d"),
        ("Spearman, latency", "spearman", ".3f"),
        ("Spearman, % of peak", "spearman_pct_of_peak", ".3f"),
        ("geomean e / m", "geomean_ratio", ".3f"),
        ("geometric std", "geo_std", ".3f"),
        ("within 0.67-1.5x", "within_0_67_1_5", "d"),
        ("VectorE and ScalarE within 2x", "engines_within_2x", "d"),
    )
    for label, key, spec in figures:
        table.add_row(label, *(cell(g[key], spec) for g in groups.values()))
    print_table(table)


@click.command("fidelity")
@click.option(
    "--nkibench",
    "nkibench",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="AccelOpt's NKIBench folder (summary.json, reference/, kernels/) in a copy of "
    "zhang677/AccelOpt that you fetched.",
)
@click.option(
    "--samples",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="AccelOpt's samples/nki folder: its optimized kernels, against their baselines.",
)
@click.option("--target", default="trn1", show_default=True, type=click.Choice(["trn1"]))
@click.option("--tasks", "names", metavar="T1,T2,...", help="Only these NKIBench tasks.")
@json_option
def fidelity_command(
    nkibench: Path, samples: Path | None, target: str, names: str | None, as_json: bool
) -> None:
    """The cost model against AccelOpt's measured trn1 profiles of its own kernels: per task
    the estimate beside the measurement, then how well they agree."""
    result = run_fidelity_benchmark(
        nkibench, samples=samples, target=target, names=names.split(",") if names else None
    )
    if as_json:
        emit_json(result)
        return
    _print_tasks(result)
    _print_samples(result["summary"]["samples"])
    _print_summary(result["summary"])
