"""`accelopt bench`: the benchmarks, one command each, each printing a table (or one JSON
object). They create and remove their own databases and workspaces, except `bench gpu`, which
keeps a GPU's measured ceilings in the event log like every other command."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from daemon.backends import open_for_command
from daemon.bench.daemon import DAEMON_TARGETS, run_daemon_benchmark
from daemon.bench.fleet import FLEET_TARGETS, FleetBenchError, run_fleet_benchmark
from daemon.bench.report import REPORT_TARGETS, run_report_benchmark
from daemon.bench.soak import SoakConfig, run_soak_benchmark
from daemon.bench.soak.table import soak_notes, soak_table
from daemon.cli.breakdown import print_breakdown
from daemon.cli.context import app_context, open_migrated_store
from daemon.cli.fidelity import fidelity_command
from daemon.cli.options import (
    database_option,
    json_option,
    one_device,
    seed_list,
    seeds_option,
)
from daemon.cli.render import cell, emit_json, print_table
from nkibench.backends.triton.backend import TritonBackend
from nkibench.benchmarks import UnknownSuiteTask
from nkibench.benchmarks.gpu import GPU_SUITES, gpu_suite, run_gpu_benchmark, run_gpu_stream
from nkibench.benchmarks.nki import (
    NKIBENCH_TARGETS,
    NKISIM_TARGETS,
    SUITES,
    run_calibration_benchmark,
    run_nkibench_benchmark,
    run_nkisim_benchmark,
)
from nkibench.targets import TRAINIUM
from store.benchmark import STORE_TARGETS, run_store_benchmark

__all__ = ["bench"]

TARGET_CHOICE = click.Choice(sorted(TRAINIUM))
DIALECT_OPTION = click.option(
    "--dialect",
    type=click.Choice(sorted(SUITES)),
    default="nki-legacy",
    show_default=True,
    help="Which suite: nki-legacy (neuronxcc.nki, AccelOpt's NKIBench) or nki (current NKI).",
)
TARGET_OPTION = click.option(
    "--target",
    type=TARGET_CHOICE,
    default=None,
    help="Default: trn1 for nki-legacy (where AccelOpt measured), trn2 for nki.",
)


@contextlib.contextmanager
def suite_names(option: str) -> Iterator[None]:
    """A suite task asked for by a name the suite does not hold is a usage error that names
    the option, not a traceback."""
    try:
        yield
    except UnknownSuiteTask as e:
        raise click.BadParameter(str(e), param_hint=option) from None


@click.group()
def bench() -> None:
    """Benchmarks (they create and remove their own databases and workspaces)."""


@bench.command("store")
@click.option("--events", "count", type=click.IntRange(min=1000), default=1_000_000)
@json_option
@database_option
@click.pass_context
def bench_store(ctx: click.Context, count: int, as_json: bool) -> None:
    """Append and replay throughput of the event log, and replay memory. With --db
    postgresql://..., in a fresh schema of that database, dropped after; without it, in a
    SQLite file in a temporary directory (never the default database)."""
    result = run_store_benchmark(app_context(ctx).db_override, events=count)
    if as_json:
        emit_json(result)
        return
    table = Table(title=f"event store benchmark: {result['database']} ({result['settings']})")
    for column in ("metric", "value", "target"):
        table.add_column(column)
    for key in (
        "events",
        "append_single_per_s",
        "append_batch_per_s",
        "replay_per_s",
        "raw_read_per_s",
        "replay_over_raw",
        "replay_peak_rss_mb",
    ):
        op, bound = STORE_TARGETS.get(key, ("", None))
        table.add_row(key, f"{result[key]:,}", f"{op} {bound:,g}" if bound else "")
    print_table(table)


def _targets(result: dict[str, Any], targets: dict[str, tuple[str, float]]) -> None:
    for key, (op, bound) in targets.items():
        click.echo(f"{key}: {cell(result[key], '.3g')} (target {op} {bound:g})")


@bench.command("nkisim")
@click.option("--shapes", default="full", show_default=True)
@click.option("--tasks", "names", metavar="T1,T2,...", help="Only these suite tasks.")
@DIALECT_OPTION
@TARGET_OPTION
@json_option
def bench_nkisim(
    shapes: str, names: str | None, dialect: str, target: str | None, as_json: bool
) -> None:
    """nkisim's speed on the suite against NumPy, and the time of a full correctness check."""
    with suite_names("--tasks"):
        result = run_nkisim_benchmark(
            shapes=shapes,
            names=names.split(",") if names else None,
            target=target,
            dialect=dialect,
        )
    if as_json:
        emit_json(result)
        return
    table = Table(
        title=f"nkisim on the {dialect} suite ({shapes} shapes, {result['target']}; wall times, "
        "not latencies)"
    )
    for column in ("task", "correct", "nkisim s", "numpy s", "ratio", "check s", "instructions"):
        table.add_column(column, justify="left" if column == "task" else "right")
    for row in result["tasks"]:
        table.add_row(
            row["task"],
            "yes" if row["correct"] else f"no ({row['error_kind']})",
            cell(row["nkisim_s"], ".2f"),
            cell(row["numpy_s"], ".2f"),
            cell(row["ratio"], ".2f"),
            f"{row['check_s']:.1f}",
            str(row["instructions"] or "-"),
        )
    print_table(table)
    _targets(result, NKISIM_TARGETS)


@bench.command("nkibench")
@click.option("--shapes", default="full", show_default=True)
@click.option("--tasks", "names", metavar="T1,T2,...", help="Only these suite tasks.")
@DIALECT_OPTION
@TARGET_OPTION
@seeds_option
@json_option
def bench_nkibench(
    *,
    shapes: str,
    names: str | None,
    dialect: str,
    target: str | None,
    seeds_text: str | None,
    as_json: bool,
) -> None:
    """Every suite baseline profiled by nkisim: estimated latency, roofline, % of peak."""
    with suite_names("--tasks"):
        result = run_nkibench_benchmark(
            shapes=shapes,
            names=names.split(",") if names else None,
            target=target,
            seeds=seed_list(seeds_text),
            dialect=dialect,
        )
    target = result["target"]
    if as_json:
        emit_json(result)
        return
    table = Table(
        title=f"{dialect} suite baselines on {target}, {shapes} shapes (latencies estimated)"
    )
    columns = ["task", "latency ms (e)", "roofline ms", "% of peak", "roofline bound", "bound by"]
    columns += ["AccelOpt ms (m)"] if "accelopt_rank_correlation" in result else []
    columns += ["model s / nkisim s"]
    for column in columns:
        table.add_column(column, justify="left" if column == "task" else "right")
    for row in result["tasks"]:
        cells = [
            row["task"] if row["correct"] else f"{row['task']} ({row['error_kind']})",
            cell(row["latency_ms"], ".3f"),
            cell(row["roofline_ms"], ".3f"),
            cell(row["pct_of_peak"], ".1f"),
            row["roofline_bound"] or "-",
            row["bound_by"] or "-",
        ]
        if "accelopt_rank_correlation" in result:
            cells.append(cell(row["accelopt_trn1_ms"], ".3f"))
        cells.append(cell(row["schedule_overhead"], ".1%"))
        table.add_row(*cells)
    print_table(table)
    click.echo(f"geomean % of peak: {cell(result['geomean_pct_of_peak'], '.1f')}")
    if "accelopt_rank_correlation" in result:
        click.echo(
            f"rank correlation with AccelOpt's measured trn1 latencies: "
            f"{result['accelopt_rank_correlation']:.3f} over {result['accelopt_tasks']} tasks; "
            f"geomean estimate / measurement {result['accelopt_geomean_ratio']:.2f}"
        )
    _targets(result, NKIBENCH_TARGETS)


@bench.command("cost-model")
@json_option
def bench_cost_model(as_json: bool) -> None:
    """The cost model against published hardware measurements (the calibration kernels), and
    whether it ranks each documented ladder of optimizations (the current-NKI matmul tutorial)
    in its documented order."""
    result = run_calibration_benchmark()
    if as_json:
        emit_json(result)
        return
    table = Table(title=f"cost model {result['model_version']} against published measurements")
    for column in ("kernel", "estimated ms (e)", "measured ms (m)", "ratio", "bound by"):
        table.add_column(column, justify="left" if column == "kernel" else "right")
    for row in result["kernels"]:
        name = f"{row['task']}/{row['kernel']}"
        table.add_row(
            name if row["correct"] else f"{name} ({row['error_kind']}: {row['message'][:60]})",
            cell(row["estimated_ms"], ".2f"),
            f"{row['measured_ms']:.2f}",
            cell(row["ratio"], ".2f"),
            row["bound_by"] or "-",
        )
    print_table(table)
    if "rank_correlation" in result:
        click.echo(
            f"rank correlation {result['rank_correlation']:.3f}; geomean estimate / measurement "
            f"{result['geomean_ratio']:.2f}; worst {result['worst_ratio']:.2f}"
        )
    # the ladders: kernels in their documented order (fastest last), estimated on the target
    # the docs name and, as information, on the other targets of ladder.toml's `also`
    rungs = {(r["task"], r["target"], r["kernel"]): r for r in result.get("rungs", [])}
    for ladder in (entry for entry in result.get("ladders", []) if entry["documented"]):
        others = [
            entry
            for entry in result["ladders"]
            if entry["task"] == ladder["task"] and not entry["documented"]
        ]
        target = ladder["target"]
        table = Table(title=f"{ladder['title']} ladder on {target} (estimated)")
        columns = ["kernel", f"{target} ms", "bound by", "HBM read MiB", "DMA transfers"]
        columns += [f"{other['target']} ms (info)" for other in others]
        for column in columns:
            table.add_column(column, justify="left" if column == "kernel" else "right")
        for name in ladder["order"]:
            row = rungs[ladder["task"], target, name]
            read = row["hbm_read_bytes"]
            table.add_row(
                name if row["correct"] else f"{name} ({row['error_kind']}: {row['message'][:60]})",
                cell(row["estimated_ms"], ".4f"),
                row["bound_by"] or "-",
                cell(None if read is None else read / 2**20, ".0f"),
                cell(row["dma_transfers"], ".0f"),
                *(
                    cell(rungs[ladder["task"], other["target"], name]["estimated_ms"], ".4f")
                    for other in others
                ),
            )
        print_table(table)
        click.echo(f"ladder ranked right on {target}: {'yes' if ladder['ranked_right'] else 'no'}")
        for other in others:
            click.echo(
                f"  (information) ranked right on {other['target']}: "
                f"{'yes' if other['ranked_right'] else 'no'}"
            )


@bench.command("gpu")
@click.option("--shapes", default="full", show_default=True, help="A shape set of the tasks.")
@click.option("--passes", type=click.IntRange(min=1), default=2, show_default=True)
@click.option(
    "--suite",
    type=click.Choice(sorted(GPU_SUITES)),
    default="gpu",
    show_default=True,
    help="gpu: the 14 operator families; large: three tasks whose inputs weigh up to 1 GiB.",
)
@click.option("--task", "names", multiple=True, help="Only these tasks of the suite.")
@click.option(
    "--save",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Also write the result as JSON to this file (rewritten after every task).",
)
@click.option(
    "--seeds",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Fresh seeds that check each kernel before it is timed.",
)
@click.option("--devices", metavar="I", default=None, help="The GPU to use. Default: 0.")
@click.option(
    "--breakdown",
    is_flag=True,
    help="Also say where each task's wall time went, phase by phase, against its work floor "
    "(on a host without a GPU: under Triton's CPU interpreter, checked but not timed).",
)
@click.option(
    "--stream",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Instead of the passes, evaluate N candidates one after another as a search does "
    "(variants of the suite's kernels, each profiled afresh) and report candidates per hour "
    "beside the work floor's rate.",
)
@json_option
@database_option
@click.pass_context
def bench_gpu(
    ctx: click.Context,
    *,
    shapes: str,
    passes: int,
    names: tuple[str, ...],
    save: Path | None,
    seeds: int,
    devices: str | None,
    breakdown: bool,
    stream: int | None,
    suite: str,
    as_json: bool,
) -> None:
    """The GPU suite's Triton baselines on this GPU (measured), against PyTorch eager and the
    roofline of the device's measured ceilings; in passes back to back, to show the spread."""
    with suite_names("--task"):
        gpu_suite(list(names) or None, suite)  # before the GPU is opened
    opened = open_for_command(
        "triton",
        [one_device(devices, "triton")],
        None,
        lambda: open_migrated_store(ctx),
        isolation=app_context(ctx).isolation(),
        settings=app_context(ctx).settings,
        require_device=not (breakdown or stream),
    )
    gpu = opened.first()
    assert isinstance(gpu, TritonBackend)
    # PyTorch eager is timed for the latency table alone: no profile times it, so the
    # breakdown and the stream, which say what a profile costs, leave it out
    gpu.with_eager = not (breakdown or stream)
    say = None if as_json else (lambda line: click.echo(line, err=True))
    # a daemon's warm process starts with its first child and serves the rest: here it is
    # started before the first task, so that no task's wall holds it
    warm_start_s = gpu.warm.start() if gpu.warm is not None else None
    if say is not None and warm_start_s is not None:
        say(f"warm process started in {warm_start_s:.1f} s (once per device)")

    def checkpoint(partial: dict[str, Any]) -> None:
        if save is not None:
            save.write_text(json.dumps(partial, indent=1))

    if stream is not None:
        streamed = run_gpu_stream(
            gpu,
            stream,
            shapes=shapes,
            names=list(names) or None,
            seeds=seeds,
            progress=say,
            suite=suite,
        )
        streamed["warm_start_s"] = warm_start_s
        checkpoint(streamed)
        if as_json:
            emit_json(streamed)
        else:
            _stream_table(streamed)
        return
    result = run_gpu_benchmark(
        gpu,
        shapes=shapes,
        passes=passes,
        names=list(names) or None,
        seeds=seeds,
        progress=say,
        checkpoint=checkpoint,
        breakdown=breakdown,
        suite=suite,
    )
    result["warm_start_s"] = warm_start_s
    checkpoint(result)
    if as_json:
        emit_json(result)
        return
    ceilings = result["ceilings"]
    if ceilings is not None:
        rates = ", ".join(f"{k} {v / 1e12:.0f}" for k, v in ceilings["matmul_flops"].items())
        click.echo(
            f"{result['gpu']}: copy {ceilings['bandwidth_bytes_per_s'] / 1e12:.2f} TB/s, "
            f"FMA {ceilings['vector_flops'] / 1e12:.1f} TFLOP/s, matmul TFLOP/s {rates} "
            "(measured)"
        )
    _latency_table(result, shapes, passes)
    if breakdown:
        print_breakdown(result, shapes)


def _stream_table(result: dict[str, Any]) -> None:
    """Per task of the stream: candidates, correct ones, median wall and floor; then the
    rates."""
    where = result["gpu"] or "no GPU (Triton's CPU interpreter: checked, not timed)"
    table = Table(title=f"A stream of candidates, {result['shapes']} shapes, on {where}")
    for column in ("task", "candidates", "correct", "median wall s", "median floor s"):
        table.add_column(column, justify="left" if column == "task" else "right")
    rows: dict[str, list[dict[str, Any]]] = {}
    for row in result["candidates"]:
        rows.setdefault(row["task"], []).append(row)
    for task, found in rows.items():
        walls = sorted(r["wall_s"] for r in found)
        floors = sorted(r["floor_s"] for r in found)
        table.add_row(
            task,
            str(len(found)),
            str(sum(1 for r in found if r["correct"])),
            f"{walls[len(walls) // 2]:.2f}",
            f"{floors[len(floors) // 2]:.3f}",
        )
    print_table(table)
    per_hour, at_floor = result["per_hour"], result["per_hour_at_floor"]
    click.echo(
        f"first, each task's own kernel profiled once, as a search's baseline: "
        f"{len(result['baselines'])} in {result['baselines_s']:.1f} s"
    )
    click.echo(
        f"{len(result['candidates'])} candidates in {result['seconds']:.1f} s: "
        f"{cell(per_hour, '.0f')} per hour; at the work floor (kernel and reference time "
        f"alone, {result['floor_s']:.1f} s) {cell(at_floor, '.0f')} per hour"
    )


def _latency_table(result: dict[str, Any], shapes: str, passes: int) -> None:
    where = result["gpu"] or "no GPU (Triton's CPU interpreter: nothing timed)"
    table = Table(title=f"GPU suite, {shapes} shapes: every latency measured on {where}")
    for column in ("task", "dtype", "bound", "roofline ms"):
        table.add_column(column)
    for number in range(passes):
        table.add_column(f"triton ms #{number + 1}", justify="right")
    table.add_column("spread", justify="right")
    table.add_column("eager ms", justify="right")
    table.add_column("% of peak", justify="right")
    table.add_column("vs eager", justify="right")
    first = result["passes"][0]
    for index, row in enumerate(first):
        latencies = [run[index]["latency_ms"] for run in result["passes"]]
        shown = [
            f"{v:.4f}" if v is not None else (run[index]["error"] or "-")[:40]
            for v, run in zip(latencies, result["passes"], strict=True)
        ]
        spread = result["pass_spread"].get(row["task"])
        eager = row.get("eager_ms")
        table.add_row(
            row["task"],
            row["dtype"],
            row["bound"] or "-",
            f"{row['roofline_ms']:.4f}" if row["roofline_ms"] else "-",
            *shown,
            f"{spread:.1%}" if spread is not None else "-",
            f"{eager:.4f}" if eager else "-",
            f"{row['pct_of_peak']:.1f}" if row["pct_of_peak"] is not None else "-",
            f"{eager / latencies[0]:.2f}x" if eager and latencies[0] else "-",
        )
    print_table(table)


@bench.command("daemon")
@click.option("--drops", type=click.IntRange(min=2), default=20, show_default=True)
@click.option(
    "--idle",
    "idle_s",
    type=click.FloatRange(min=5),
    default=30.0,
    show_default=True,
    help="Seconds of idleness to measure CPU over.",
)
@click.option("--http", is_flag=True, help="The daemon also serves its live pages.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def bench_daemon(drops: int, idle_s: float, http: bool, as_json: bool) -> None:
    """Time from a task folder appearing to its baseline; idle CPU and memory."""
    result = run_daemon_benchmark(drops=drops, idle_s=idle_s, http=http)
    if as_json:
        emit_json(result)
        return
    served = ", serving its live pages" if http else ""
    table = Table(
        title=f"the daemon: {drops} task folders dropped one at a time (nkisim, small){served}"
    )
    for column in ("metric", "value", "target"):
        table.add_column(column)
    for key, unit in (
        ("p50_s", "s"),
        ("p95_s", "s"),
        ("max_s", "s"),
        ("idle_cpu_percent", "% of a core"),
        ("rss_mb", "MB"),
    ):
        op, bound = DAEMON_TARGETS.get(key, ("", None))
        table.add_row(key, f"{result[key]:.3g} {unit}", f"{op} {bound:g}" if bound else "")
    print_table(table)


@bench.command("fleet")
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="Worker processes (each a host of its share of the devices).",
)
@click.option(
    "--devices",
    "devices",
    default="8,16,32,64",
    show_default=True,
    metavar="D1,D2,...",
    help="Device counts, one run each.",
)
@click.option(
    "--tasks",
    "tasks_per_device",
    type=click.IntRange(min=2),
    default=16,
    show_default=True,
    help="Jobs per device in the saturated phase.",
)
@click.option(
    "--job-ms",
    type=click.FloatRange(min=1),
    default=1000.0,
    show_default=True,
    help="How long each job sleeps.",
)
@json_option
@database_option
@click.pass_context
def bench_fleet(
    ctx: click.Context,
    /,
    *,
    workers: int,
    devices: str,
    tasks_per_device: int,
    job_ms: float,
    as_json: bool,
) -> None:
    """Device utilization and dispatch latency of the fleet's queue: worker processes of the
    sleep backend (no kernel runs) in a fresh schema of the PostgreSQL database given (--db)."""
    try:
        counts = [int(part) for part in devices.split(",")]
    except ValueError:
        raise click.BadParameter(
            f"{devices!r} is not a list of counts", param_hint="--devices"
        ) from None
    url = app_context(ctx).database_url
    try:
        result = run_fleet_benchmark(
            url,
            workers=workers,
            device_counts=counts,
            tasks_per_device=tasks_per_device,
            job_ms=job_ms,
        )
    except FleetBenchError as e:
        raise click.ClickException(str(e)) from None
    if as_json:
        emit_json(result)
        return
    table = Table(
        title=f"the fleet: {workers} worker processes, jobs of {job_ms:g} ms "
        f"({result['latency_kind']})"
    )
    columns = (
        ("devices", "devices", "d"),
        ("jobs", "tasks", "d"),
        ("utilization", "utilization", ".1%"),
        ("makespan util.", "utilization_makespan", ".1%"),
        ("dispatch p50 ms", "dispatch_p50_ms", ".1f"),
        ("dispatch p99 ms", "dispatch_p99_ms", ".1f"),
        ("gap p50 ms", "gap_p50_ms", ".1f"),
        ("gap p99 ms", "gap_p99_ms", ".1f"),
        ("coordinator CPU", "coordinator_cpu_share", ".1%"),
        ("workers CPU", "workers_cpu_share", ".1%"),
        ("overlaps", "overlapping_runs", "d"),
        ("runs > 1", "runs_more_than_once", "d"),
    )
    for title, _, _ in columns:
        table.add_column(title, justify="right")
    for step in result["steps"]:
        table.add_row(*(format(step[key], spec) for _, key, spec in columns))
    print_table(table)
    op, bound = FLEET_TARGETS["utilization"]
    click.echo(f"target: utilization {op} {bound:.0%} at 64 devices on this machine")


@bench.command("report")
@click.option(
    "--events", "count", type=click.IntRange(min=1000), default=1_000_000, show_default=True
)
@json_option
def bench_report(count: int, as_json: bool) -> None:
    """`accelopt report` on a synthetic log of COUNT events (100 tasks): its wall time, peak
    memory and the page's size; then the live page of that log: its first drawing, and the
    update one more event sends to an open page."""
    result = run_report_benchmark(events=count)
    if as_json:
        emit_json(result)
        return
    table = Table(title=f"accelopt report on {result['events']:,} synthetic events (SQLite)")
    for column in ("metric", "value", "target"):
        table.add_column(column)
    rows = (
        ("report_s", "s"), ("peak_rss_mb", "MB"), ("html_mb", "MB"), ("live_page_s", "s"),
        ("live_page_mb", "MB"), ("live_update_s", "s"), ("live_update_kb", "kB"),
    )  # fmt: skip
    for key, unit in rows:
        op, bound = REPORT_TARGETS.get(key, ("", None))
        table.add_row(key, f"{result[key]:,} {unit}", f"{op} {bound:g}" if bound else "")
    print_table(table)


@bench.command("soak")
@click.option(
    "--minutes",
    type=click.FloatRange(min=0.5),
    default=60.0,
    show_default=True,
    help="Minutes of churn (wall time).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="The churn's seed.")
@click.option(
    "--churn-every",
    "churn_every_s",
    type=click.FloatRange(min=0.5),
    default=10.0,
    show_default=True,
    help="Mean seconds between churn actions.",
)
@click.option(
    "--sample-every",
    "sample_every_s",
    type=click.FloatRange(min=0.2),
    default=None,
    help="Seconds between samples. Default: 5 (more often in runs under 2.5 minutes).",
)
@click.option(
    "--warmup",
    "warmup_minutes",
    type=click.FloatRange(min=0),
    default=None,
    help="Minutes left out of the trends. Default: a fifth of the run, at most 10, at least "
    "1 (or half a shorter run).",
)
@click.option(
    "--save",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Also write the result, with every sample, as JSON to this file.",
)
@json_option
def bench_soak(
    *,
    minutes: float,
    seed: int,
    churn_every_s: float,
    sample_every_s: float | None,
    warmup_minutes: float | None,
    save: Path | None,
    as_json: bool,
) -> None:
    """The daemon under churn (folders dropped, edited, broken, fixed, removed; agents on a
    scripted LLM server): whether its memory, open files, threads, kernel processes or job
    backlog grow, and whether it still stops cleanly. Linux only (/proc)."""
    config = SoakConfig(
        minutes=minutes,
        seed=seed,
        churn_every_s=churn_every_s,
        sample_every_s=sample_every_s,
        warmup_minutes=warmup_minutes,
    )
    say = None if as_json else (lambda line: click.echo(line, err=True))
    result = run_soak_benchmark(config, progress=say)
    if save is not None:
        save.write_text(json.dumps(result, indent=1))
    result.pop("samples_raw")
    if as_json:
        emit_json(result)
        return
    print_table(soak_table(result))
    for line in soak_notes(result):
        click.echo(line)


bench.add_command(fidelity_command)
