"""The FlashInfer-Bench commands of `accelopt`: `import-flashinfer` (a Trace dataset's
definitions as task folders) and the flashinfer format of `export` (a task's kernel as a
Solution with its Traces). flashinfer_bench and torch are imported inside the commands only
(daemon.flashinfer.package says how to install them where missing), so `--help` stays fast."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import click

from daemon.cli.context import app_context
from daemon.cli.options import database_option, json_option
from daemon.cli.render import emit_json
from daemon.flashinfer.package import FlashInferError, require
from events.catalog import ProfileRecorded
from events.codec import decode
from nkibench.dialects import get_dialect
from nkibench.task.spec import TaskSpec, defined_function, load_task
from store.base import EventStore
from store.errors import BlobNotFound, DatabaseNotFound
from store.projections.library import LibraryProjection
from store.projections.runner import replay

__all__ = ["export_flashinfer_format", "import_flashinfer_command"]

LIBS = ("torch", "triton", "cuda", "driver", "python")
"""The fingerprint's entries a Trace's environment lists as its libraries."""


@click.command("import-flashinfer")
@click.argument("root", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.argument("destination", type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--definition",
    "definitions",
    multiple=True,
    metavar="NAME",
    help="Import this definition (repeatable); default: every definition of the dataset.",
)
@click.option(
    "--solution",
    metavar="NAME",
    help="The baseline kernel of its definition; default: the best Triton solution by its traces.",
)
@click.option(
    "--allow-torch-compute",
    is_flag=True,
    help="Let the tasks' run() compute with PyTorch (task.toml allow_torch_compute), for "
    "solutions that do part of their work in torch.",
)
@json_option
@database_option
@click.pass_context
def import_flashinfer_command(
    ctx: click.Context,
    *,
    root: Path,
    destination: Path,
    definitions: tuple[str, ...],
    solution: str | None,
    allow_torch_compute: bool,
    as_json: bool,
) -> None:
    """Turn a FlashInfer Trace dataset's definitions into task folders (reference, workloads,
    the best Triton solution as the kernel).

    Exit 0 every definition imported, 1 some skipped (each with its reason), 2 a dataset that
    does not load."""
    require()
    from daemon.flashinfer.importer import import_flashinfer  # noqa: PLC0415 - imports torch

    result = import_flashinfer(
        root, destination, list(definitions) or None, solution, allow_torch_compute
    )
    if as_json:
        emit_json(result.to_json())
    else:
        for item in result.imported:
            click.echo(
                f"{item['definition']}: imported with solution {item['solution']} "
                f"({item['standing']}, {item['workloads']} workloads) -> {item['path']}"
            )
        for item in result.skipped:
            click.echo(f"{item['definition']}: skipped: {item['reason']}")
    ctx.exit(1 if result.skipped else 0)


def _profiles(store: EventStore | None, task: str) -> list[tuple[str, ProfileRecorded]]:
    """The task's correct, timed profiles in log order, each with when it was recorded."""
    found: list[tuple[str, ProfileRecorded]] = []
    if store is None:
        return found
    for stored in store.read_all(types=[ProfileRecorded.type_name()]):
        event = decode(stored).event
        if (
            isinstance(event, ProfileRecorded)
            and event.task == task
            and event.correct
            and event.latency_ms is not None
            and event.latency_kind is not None
        ):
            found.append((stored.recorded_at.isoformat(), event))
    return found


def _measurement(recorded_at: str, profile: ProfileRecorded) -> Any:
    from daemon.flashinfer.export import Measurement  # noqa: PLC0415 - imports torch

    assert profile.latency_ms is not None
    assert profile.latency_kind is not None
    fingerprint = profile.fingerprint
    return Measurement(
        latency_ms=profile.latency_ms,
        latency_kind=profile.latency_kind,
        hardware=fingerprint.get("gpu") or profile.target,
        backend=profile.backend,
        target=profile.target,
        recorded_at=recorded_at,
        job_id=profile.job_id,
        libs={k: fingerprint[k] for k in LIBS if k in fingerprint},
        reference_ms=profile.latency_stats.get("eager_p50"),
        per_workload=_per_workload(profile),
    )


def _per_workload(profile: ProfileRecorded) -> dict[str, tuple[float, str]]:
    """Each correct workload's own latency, where the profile holds them (`workloads`, from
    ProfileRecorded's schema version 5 on: a task's workloads.jsonl profiled on all of them;
    read by name so that an older catalogue without it reads as none)."""
    found: dict[str, tuple[float, str]] = {}
    for outcome in getattr(profile, "workloads", None) or []:
        if outcome.correct and outcome.latency_ms is not None and outcome.latency_kind:
            found[outcome.uuid] = (outcome.latency_ms, outcome.latency_kind)
    return found


def _task(store: EventStore | None, task: str) -> TaskSpec:
    """A task folder given as a path, else the folder of the task of that name in the log."""
    if Path(task).is_dir():
        return load_task(Path(task))
    if store is None:
        raise FlashInferError(f"no task folder {task}, and no log to find a task of that name")
    library = replay(store, LibraryProjection(), use_checkpoint=True).state
    revision = library.revisions.get(task)
    if revision is None:
        raise FlashInferError(f"no task {task!r} in the log, and no folder of that name")
    return load_task(Path(revision.task_dir))


def _kernel(store: EventStore | None, task: TaskSpec, kernel_file: Path | None) -> tuple[str, str]:
    """The kernel to export and where it came from: --kernel, else the promoted kernel, else
    the fastest correct kernel profiled for the task, else the task's own kernel.py."""
    if kernel_file is not None:
        return kernel_file.read_text(encoding="utf-8"), str(kernel_file)
    if store is None:
        return task.kernel_source, f"{task.path / 'kernel.py'}"
    library = replay(store, LibraryProjection(), use_checkpoint=True).state
    promoted = library.promoted().get(task.name)
    if promoted is not None:
        return store.get_text(promoted.kernel_hash), f"promoted candidate {promoted.candidate_id}"
    timed = sorted(
        (p for _, p in _profiles(store, task.name) if p.task_source_hash == task.content_hash),
        key=lambda p: p.latency_ms or 0.0,
    )
    for profile in timed:
        try:
            source = store.get_text(profile.kernel_hash)
        except BlobNotFound:  # a profile whose source the log does not hold
            continue
        return source, f"profiled kernel {profile.kernel_hash[:12]}"
    return task.kernel_source, f"{task.path / 'kernel.py'}"


def export_flashinfer_format(
    ctx: click.Context, task_name: str, out: Path | None, kernel_file: Path | None
) -> None:
    """`accelopt export TASK --format flashinfer`: see daemon.flashinfer.export."""
    require()
    from daemon.flashinfer.export import export_flashinfer  # noqa: PLC0415 - imports torch

    store: EventStore | None
    try:
        store = app_context(ctx).open_store(ctx)
    except DatabaseNotFound:
        if not Path(task_name).is_dir():
            raise
        store = None  # a task folder never profiled here: its kernel, without Traces
    task = _task(store, task_name)
    source, origin = _kernel(store, task, kernel_file)
    destination = out or Path(f"{task.name}-flashinfer")
    if destination.exists() and not destination.is_dir():
        raise FlashInferError(f"{destination} is not a directory (--out names the dataset folder)")
    digest = hashlib.sha256(source.encode("utf-8")).hexdigest()
    # the latest timing of this very kernel on this revision of the task (its shapes)
    timed = [
        (at, p)
        for at, p in _profiles(store, task.name)
        if p.kernel_hash == digest and p.task_source_hash == task.content_hash
    ]
    measured = _measurement(*timed[-1]) if timed else None
    rules = ", ".join(f"{name}: {t.describe()}" for name, t in task.outputs.items())
    summary = export_flashinfer(
        task_dir=task.path,
        constants=task.constants,
        rule=f"accelopt's check ({rules or f'relative L2 <= {task.rel_tol:g}'})",
        kernel=source,
        # a candidate names its entry as the task's, or as its language's (run)
        function=defined_function(
            source, (task.kernel_function, *get_dialect(task.dialect).entry_points)
        )
        or task.kernel_function,
        measured=measured,
        solution_name=f"accelopt_{task.name}_{digest[:12]}",
        description=f"accelopt's kernel for {task.name} ({origin})",
        out=destination,
    )
    summary["kernel"] = origin
    emit_json(summary)
