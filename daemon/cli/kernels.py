"""The kernel commands of `accelopt`: check, profile and import-nkibench. Every latency
printed says whether it is measured or estimated."""

from __future__ import annotations

from pathlib import Path

import click

from daemon.backends import open_for_command
from daemon.cli.context import app_context, open_migrated_store
from daemon.cli.options import (
    database_option,
    json_option,
    kernel_options,
    one_device,
    seed_list,
    seeds_option,
)
from daemon.cli.render import emit_json
from nkibench.harness import check_kernel, profile_kernel
from nkibench.result import GPU_RUN_COUNTERS, KernelResult
from nkibench.task.importer import import_nkibench
from nkibench.task.spec import load_task

__all__ = ["check_command", "import_nkibench_command", "profile_command"]

KIND_NOTE = {"estimated": "estimated by the cost model", "measured": "measured on hardware"}
SHOWN_COUNTERS = (
    "hbm_read_bytes",
    "hbm_write_bytes",
    "hardware_flops",
    "mm_arithmetic_intensity",
    "hfu_estimated_percent",
    "dma_small_transfer_percent",
    *GPU_RUN_COUNTERS,
)


def _exit_code(result: KernelResult) -> int:
    if result.error_kind == "task":
        return 2
    return 0 if result.correct and result.error_kind is None else 1


@click.command("check")
@click.argument("task_dir", type=click.Path(path_type=Path))
@kernel_options
@seeds_option
@json_option
@database_option
@click.pass_context
def check_command(
    ctx: click.Context,
    *,
    task_dir: Path,
    backend: str | None,
    target: str | None,
    shapes: str | None,
    devices: str | None,
    seeds_text: str | None,
    as_json: bool,
) -> None:
    """Check a task's kernel for correctness. Exit 0 correct, 1 the kernel failed, 2 bad task."""
    task = load_task(task_dir)
    shapes = shapes or task.smallest_shapes
    name = backend or task.default_backend
    opened = open_for_command(
        name,
        [one_device(devices, name)],
        target,
        None,
        isolation=app_context(ctx).isolation(),
        settings=app_context(ctx).settings,
        require_device=False,
    )
    result = check_kernel(
        task,
        backend=opened.first(),
        shapes=shapes,
        seeds=seed_list(seeds_text),
        target=opened.target,
    )
    if as_json:
        emit_json(result.to_json())
    elif result.correct:
        click.echo(
            f"{task.name}: correct on seeds {result.seeds} ({shapes} shapes, {name}); "
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
    if result.workloads:
        lines[-1] += f", the geometric mean over {len(result.workloads)} workloads"
    for workload in result.workloads:
        latency = workload["latency_ms"]
        timed = f"{latency:.4f} ms ({workload['latency_kind']})" if latency else "not timed"
        lines.append(f"workload  {workload['name']} (uuid {workload['uuid'][:36]}): {timed}")
    if result.latency_stats:
        stats = result.latency_stats
        lines.append(
            f"          {stats['runs']:.0f} runs: min {stats['min']:.4f}, max {stats['max']:.4f}, "
            f"spread {stats['rel_spread']:.1%}"
        )
    if result.roofline is not None and result.pct_of_peak is not None:
        roof = result.roofline
        # the counts reference.py computed from the data, where task.toml's formulas used some
        counted = ", ".join(f"{k} {v:g}" for k, v in roof["work"].get("counts", {}).items())
        lines.append(
            f"roofline  {roof['time_ms']:.4f} ms ({roof['bound']}-bound, counts from "
            f"{roof['work']['source']}{f' and reference.py: {counted}' if counted else ''}) "
            f"-> {result.pct_of_peak:.1f}% of peak"
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
    for kernel in result.gpu_kernels[:8]:
        values = " ".join(f"{k}={v:.4g}" for k, v in kernel.items() if isinstance(v, float))
        lines.append(f"  kernel {kernel['kernel']}: {values}")
    if result.counters_unavailable:
        lines.append(f"counters  none: {result.counters_unavailable}")
    if result.estimate:
        estimate = result.estimate
        lines.append(
            f"nkisim    {estimate['latency_ms']:.4f} ms (estimated), "
            f"{estimate['ratio_to_measured']:.2f}x the measurement"
            if "latency_ms" in estimate
            else f"nkisim    no estimate: {estimate['error']}"
        )
    for name, configs in result.autotuned.items():
        lines.append(f"autotuned {name}: {' | '.join(configs)}")
    lines.extend(f"warning   {w}" for w in result.warnings)
    return lines


@click.command("profile")
@click.argument("task_dir", type=click.Path(path_type=Path))
@kernel_options
@seeds_option
@json_option
@database_option
@click.pass_context
def profile_command(
    ctx: click.Context,
    *,
    task_dir: Path,
    backend: str | None,
    target: str | None,
    shapes: str | None,
    devices: str | None,
    seeds_text: str | None,
    as_json: bool,
) -> None:
    """Check a kernel, time it, and put it against the task's roofline (% of peak).
    Exit 0 correct and timed, 1 the kernel failed or could not be timed, 2 bad task."""
    task = load_task(task_dir)
    shapes = shapes or task.smallest_shapes
    name = backend or task.default_backend
    device = one_device(devices, name)
    opened = open_for_command(
        name,
        [device],
        target,
        lambda: open_migrated_store(ctx),
        isolation=app_context(ctx).isolation(),
        settings=app_context(ctx).settings,
    )
    result = profile_kernel(
        task,
        backend=opened.first(),
        shapes=shapes,
        seeds=seed_list(seeds_text),
        target=opened.target,
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
@database_option
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
