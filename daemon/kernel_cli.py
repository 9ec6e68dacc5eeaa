"""The kernel commands of `accelopt`: check, profile, import-nkibench and the suite
benchmarks. Every latency printed says whether it is measured or estimated."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from daemon.context import open_migrated_store
from daemon.gpu import triton_backend
from daemon.render import emit_json, print_table
from nkibench.backend import Backend, NkisimBackend
from nkibench.benchmark import (
    NKIBENCH_TARGETS,
    NKISIM_TARGETS,
    run_calibration_benchmark,
    run_nkibench_benchmark,
    run_nkisim_benchmark,
)
from nkibench.cost.tables import GENERATIONS
from nkibench.gpu_benchmark import run_gpu_benchmark
from nkibench.harness import check_kernel, profile_kernel
from nkibench.importer import import_nkibench
from nkibench.neuron import NeuronBackend
from nkibench.result import KernelResult
from nkibench.task import load_task
from nkibench.triton.backend import TritonBackend

__all__ = [
    "bench_cost_model",
    "bench_gpu",
    "bench_nkibench",
    "bench_nkisim",
    "check_command",
    "import_nkibench_command",
    "profile_command",
]

TARGET_CHOICE = click.Choice(sorted(GENERATIONS))
SHAPES_HELP = "A shape set of the task (full = reference.py's own)."
KIND_NOTE = {"estimated": "estimated by the cost model", "measured": "measured on hardware"}
SHOWN_COUNTERS = (
    "hbm_read_bytes",
    "hbm_write_bytes",
    "hardware_flops",
    "mm_arithmetic_intensity",
    "hfu_estimated_percent",
    "dma_small_transfer_percent",
)


def _seed_list(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a comma-separated list of integers") from None


def _exit_code(result: KernelResult) -> int:
    if result.error_kind == "task":
        return 2
    return 0 if result.correct and result.error_kind is None else 1


seeds_option = click.option(
    "--seeds", "seeds_text", metavar="S1,S2,...", help="Correctness seeds (default: the task's)."
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")


device_option = click.option(
    "--device",
    default="0",
    show_default=True,
    help="triton: the GPU to use (CUDA_VISIBLE_DEVICES).",
)


@click.command("check")
@click.argument("task_dir", type=click.Path(path_type=Path))
@click.option(
    "--backend",
    type=click.Choice(["nkisim", "triton"]),
    default=None,
    help="nkisim for NKI tasks; triton for Triton tasks (the GPU, or Triton's CPU "
    "interpreter without one) [default: the task's].",
)
@click.option("--shapes", default="small", show_default=True, help=SHAPES_HELP)
@click.option("--target", type=TARGET_CHOICE, default="trn1", show_default=True)
@device_option
@seeds_option
@json_option
@click.pass_context
def check_command(
    ctx: click.Context,
    *,
    task_dir: Path,
    backend: str | None,
    shapes: str,
    target: str,
    device: str,
    seeds_text: str | None,
    as_json: bool,
) -> None:
    """Check a task's kernel for correctness. Exit 0 correct, 1 the kernel failed, 2 bad task."""
    task = load_task(task_dir)
    backend = backend or task.default_backend
    runner: Backend = TritonBackend(device=device) if backend == "triton" else NkisimBackend()
    result = check_kernel(
        task, backend=runner, shapes=shapes, seeds=_seed_list(seeds_text), target=target
    )
    if as_json:
        emit_json(result.to_json())
    elif result.correct:
        click.echo(
            f"{task.name}: correct on seeds {result.seeds} ({shapes} shapes, {backend}); "
            f"worst relative L2 error {result.max_rel_l2:.2e}"
        )
    else:
        click.echo(f"{task.name}: {result.error_kind}: {result.message}")
    ctx.exit(_exit_code(result))


def _profile_lines(result: KernelResult) -> list[str]:
    head = f"{result.task} ({result.shapes} shapes, {result.backend} -> {result.target}): "
    if not result.correct:
        return [head + f"{result.error_kind}: {result.message}"]
    if result.latency_ms is None:
        return [head + f"correct, but not timed: {result.error_kind}: {result.message}"]
    kind = result.latency_kind or "estimated"
    model = f", model {result.model_version}" if result.model_version else ""
    lines = [head + "correct", f"latency   {result.latency_ms:.4f} ms ({KIND_NOTE[kind]}{model})"]
    if result.latency_stats:
        stats = result.latency_stats
        lines.append(
            f"          {stats['runs']:.0f} runs: min {stats['min']:.4f}, max {stats['max']:.4f}, "
            f"spread {stats['rel_spread']:.1%}"
        )
    if result.roofline is not None and result.pct_of_peak is not None:
        roof = result.roofline
        lines.append(
            f"roofline  {roof['time_ms']:.4f} ms ({roof['bound']}-bound, counts from "
            f"{roof['work']['source']}) -> {result.pct_of_peak:.1f}% of peak"
        )
    if result.bound_by:
        activity = ", ".join(
            f"{engine} {use['utilisation']:.0%}" for engine, use in result.engines.items()
        )
        lines.append(f"bound by  {result.bound_by}" + (f" ({activity})" if activity else ""))
    for hot in result.hot_lines[:3]:
        lines.append(f"hot line  kernel.py:{hot['line']} {hot['engine']} {hot['busy_ms']:.4f} ms")
    shown = [f"{k}={result.counters[k]:.4g}" for k in SHOWN_COUNTERS if k in result.counters]
    if shown:
        lines.append("counters  " + " ".join(shown))
    if result.estimate:
        estimate = result.estimate
        lines.append(
            f"nkisim    {estimate['latency_ms']:.4f} ms (estimated), "
            f"{estimate['ratio_to_measured']:.2f}x the measurement"
            if "latency_ms" in estimate
            else f"nkisim    no estimate: {estimate['error']}"
        )
    lines.extend(f"warning   {w}" for w in result.warnings)
    return lines


@click.command("profile")
@click.argument("task_dir", type=click.Path(path_type=Path))
@click.option(
    "--backend",
    type=click.Choice(["nkisim", "neuron", "triton"]),
    default=None,
    help="nkisim: interpreter + cost model (estimated); neuron: a Trainium device (measured); "
    "triton: an NVIDIA GPU (measured) [default: nkisim, or triton for a Triton task].",
)
@click.option(
    "--target",
    type=TARGET_CHOICE,
    default=None,
    help="Trainium generation [nkisim default: trn1; neuron default: this instance's].",
)
@click.option("--shapes", default="small", show_default=True, help=SHAPES_HELP)
@click.option(
    "--core",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="neuron: the NeuronCore to run on (NEURON_RT_VISIBLE_CORES).",
)
@device_option
@seeds_option
@json_option
@click.pass_context
def profile_command(
    ctx: click.Context,
    *,
    task_dir: Path,
    backend: str | None,
    target: str | None,
    shapes: str,
    core: int,
    device: str,
    seeds_text: str | None,
    as_json: bool,
) -> None:
    """Check a kernel, time it, and put it against the task's roofline (% of peak).
    Exit 0 correct and timed, 1 the kernel failed or could not be timed, 2 bad task."""
    task = load_task(task_dir)
    backend = backend or task.default_backend
    runner: Backend
    if backend == "triton":
        gpu = triton_backend(open_migrated_store(ctx), device, require_gpu=True)
        runner, target = gpu, gpu.target
    elif backend == "neuron":
        neuron = NeuronBackend(core=core, target=target)
        runner, target = neuron, neuron.target
    else:
        runner, target = NkisimBackend(), target or "trn1"
    result = profile_kernel(
        task, backend=runner, shapes=shapes, seeds=_seed_list(seeds_text), target=target
    )
    if as_json:
        emit_json(result.to_json())
    else:
        for line in _profile_lines(result):
            click.echo(line)
    ctx.exit(_exit_code(result))


@click.command("import-nkibench")
@click.argument("root", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.argument("destination", type=click.Path(path_type=Path, file_okay=False))
@json_option
@click.pass_context
def import_nkibench_command(
    ctx: click.Context, root: Path, destination: Path, as_json: bool
) -> None:
    """Turn an NKIBench tree (summary.json, reference/, kernels/) into task folders."""
    imported = import_nkibench(root, destination)
    if as_json:
        emit_json([{"task": i.name, "path": str(i.path), "error": i.error} for i in imported])
    else:
        for item in imported:
            click.echo(f"{item.name}: {item.error or 'imported'} ({item.path})")
    ctx.exit(0 if all(i.error is None for i in imported) else 1)


def _number(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _targets(result: dict[str, Any], targets: dict[str, tuple[str, float]]) -> None:
    for key, (op, bound) in targets.items():
        click.echo(f"{key}: {_number(result[key], '.3g')} (target {op} {bound:g})")


@click.command("nkisim")
@click.option("--shapes", default="full", show_default=True)
@click.option("--tasks", "names", metavar="T1,T2,...", help="Only these suite tasks.")
@click.option("--target", type=TARGET_CHOICE, default="trn1", show_default=True)
@json_option
def bench_nkisim(shapes: str, names: str | None, target: str, as_json: bool) -> None:
    """nkisim's speed on the suite against NumPy, and the time of a full correctness check."""
    result = run_nkisim_benchmark(
        shapes=shapes, names=names.split(",") if names else None, target=target
    )
    if as_json:
        emit_json(result)
        return
    table = Table(
        title=f"nkisim on the NKI suite ({shapes} shapes, {target}; wall times, not latencies)"
    )
    for column in ("task", "correct", "nkisim s", "numpy s", "ratio", "check s", "instructions"):
        table.add_column(column, justify="left" if column == "task" else "right")
    for row in result["tasks"]:
        table.add_row(
            row["task"],
            "yes" if row["correct"] else f"no ({row['error_kind']})",
            _number(row["nkisim_s"], ".2f"),
            _number(row["numpy_s"], ".2f"),
            _number(row["ratio"], ".2f"),
            f"{row['check_s']:.1f}",
            str(row["instructions"] or "-"),
        )
    print_table(table)
    _targets(result, NKISIM_TARGETS)


@click.command("nkibench")
@click.option("--shapes", default="full", show_default=True)
@click.option("--tasks", "names", metavar="T1,T2,...", help="Only these suite tasks.")
@click.option("--target", type=TARGET_CHOICE, default="trn1", show_default=True)
@seeds_option
@json_option
def bench_nkibench(
    shapes: str, names: str | None, target: str, seeds_text: str | None, as_json: bool
) -> None:
    """Every suite baseline profiled by nkisim: estimated latency, roofline, % of peak."""
    result = run_nkibench_benchmark(
        shapes=shapes,
        names=names.split(",") if names else None,
        target=target,
        seeds=_seed_list(seeds_text),
    )
    if as_json:
        emit_json(result)
        return
    table = Table(title=f"NKI suite baselines on {target}, {shapes} shapes (latencies estimated)")
    columns = ["task", "latency ms (e)", "roofline ms", "% of peak", "roofline bound", "bound by"]
    columns += ["AccelOpt ms (m)"] if "accelopt_rank_correlation" in result else []
    columns += ["model s / nkisim s"]
    for column in columns:
        table.add_column(column, justify="left" if column == "task" else "right")
    for row in result["tasks"]:
        cells = [
            row["task"] if row["correct"] else f"{row['task']} ({row['error_kind']})",
            _number(row["latency_ms"], ".3f"),
            _number(row["roofline_ms"], ".3f"),
            _number(row["pct_of_peak"], ".1f"),
            row["roofline_bound"] or "-",
            row["bound_by"] or "-",
        ]
        if "accelopt_rank_correlation" in result:
            cells.append(_number(row["accelopt_trn1_ms"], ".3f"))
        cells.append(_number(row["schedule_overhead"], ".1%"))
        table.add_row(*cells)
    print_table(table)
    click.echo(f"geomean % of peak: {_number(result['geomean_pct_of_peak'], '.1f')}")
    if "accelopt_rank_correlation" in result:
        click.echo(
            f"rank correlation with AccelOpt's measured trn1 latencies: "
            f"{result['accelopt_rank_correlation']:.3f} over {result['accelopt_tasks']} tasks; "
            f"geomean estimate / measurement {result['accelopt_geomean_ratio']:.2f}"
        )
    _targets(result, NKIBENCH_TARGETS)


@click.command("cost-model")
@json_option
def bench_cost_model(as_json: bool) -> None:
    """The cost model against published hardware measurements (the calibration kernels)."""
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
            _number(row["estimated_ms"], ".2f"),
            f"{row['measured_ms']:.2f}",
            _number(row["ratio"], ".2f"),
            row["bound_by"] or "-",
        )
    print_table(table)
    if "rank_correlation" in result:
        click.echo(
            f"rank correlation {result['rank_correlation']:.3f}; geomean estimate / measurement "
            f"{result['geomean_ratio']:.2f}; worst {result['worst_ratio']:.2f}"
        )


@click.command("gpu")
@click.option("--shapes", default="full", show_default=True, help=SHAPES_HELP)
@click.option("--passes", type=click.IntRange(min=1), default=2, show_default=True)
@click.option("--task", "names", multiple=True, help="Only these GPU-suite tasks.")
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
@device_option
@json_option
@click.pass_context
def bench_gpu(
    ctx: click.Context,
    *,
    shapes: str,
    passes: int,
    names: tuple[str, ...],
    save: Path | None,
    seeds: int,
    device: str,
    as_json: bool,
) -> None:
    """The GPU suite's Triton baselines on this GPU (measured), against PyTorch eager and the
    roofline of the device's measured ceilings; in passes back to back, to show the spread."""
    gpu = triton_backend(open_migrated_store(ctx), device, require_gpu=True)
    gpu.with_eager = True
    say = None if as_json else (lambda line: click.echo(line, err=True))

    def checkpoint(partial: dict[str, Any]) -> None:
        if save is not None:
            save.write_text(json.dumps(partial, indent=1))

    result = run_gpu_benchmark(
        gpu,
        shapes=shapes,
        passes=passes,
        names=list(names) or None,
        seeds=seeds,
        progress=say,
        checkpoint=checkpoint,
    )
    checkpoint(result)
    if as_json:
        emit_json(result)
        return
    ceilings = result["ceilings"]
    rates = ", ".join(f"{k} {v / 1e12:.0f}" for k, v in ceilings["matmul_flops"].items())
    click.echo(
        f"{result['gpu']}: copy {ceilings['bandwidth_bytes_per_s'] / 1e12:.2f} TB/s, "
        f"FMA {ceilings['vector_flops'] / 1e12:.1f} TFLOP/s, matmul TFLOP/s {rates} (measured)"
    )
    table = Table(title=f"GPU suite, {shapes} shapes: every latency measured on {result['gpu']}")
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
