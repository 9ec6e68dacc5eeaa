"""`accelopt port`: a legacy-NKI task moved to current NKI by the agents, verified by nkisim
on every seed, recorded step by step, and written as a new task folder beside the user's
(whose files are never touched)."""

from __future__ import annotations

import shutil
from pathlib import Path

import click

from agents.ledger import Ledger
from agents.llm import LLMClient
from agents.port import Porter, PortOutcome
from daemon.backends import open_for_command
from daemon.cli.context import app_context, open_migrated_store
from daemon.cli.options import database_option
from daemon.cli.render import emit_json
from daemon.revisions import record_task
from nkibench.dialects import NKI
from nkibench.errors import TaskError
from nkibench.task.files import KERNEL_FILE, REFERENCE_FILE, TOML_FILE
from nkibench.task.spec import TaskSpec, load_task
from store.projections.library import LibraryProjection
from store.projections.runner import replay
from store.recorder import Recorder

__all__ = ["port_command", "write_ported_folder"]

PORT_TARGETS = NKI.targets


def write_ported_folder(task: TaskSpec, outcome: PortOutcome, out: Path) -> None:
    """The ported task: its kernel.py the verified port (headed by where it came from), its
    reference.py, task.toml and workloads (with their data files) the original's. `out` must
    not exist yet."""
    assert outcome.source is not None
    out.mkdir(parents=True)
    header = (
        f"# Ported from legacy NKI ({task.path / KERNEL_FILE}) by `accelopt port`, "
        f"port {outcome.port_id};\n# verified by nkisim on every seed of the task.\n"
    )
    (out / KERNEL_FILE).write_text(header + outcome.source)
    for name in (REFERENCE_FILE, TOML_FILE, *task.workload_files):
        if (task.path / name).is_file():
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(task.path / name, out / name)


@click.command("port")
@click.argument("task_dir", type=click.Path(path_type=Path))
@click.option(
    "--to",
    "to_dialect",
    type=click.Choice([NKI.name]),
    required=True,
    help="The dialect to port to: nki (current NKI, the nki package 0.3-0.7).",
)
@click.option(
    "--target",
    type=click.Choice(list(PORT_TARGETS)),
    default=PORT_TARGETS[0],
    show_default=True,
    help="The Trainium generation the port is verified and estimated for.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Where to write the ported task folder (it must not exist). Default: "
    "TASK_DIR_nki beside the task.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object at the end.")
@database_option
@click.pass_context
def port_command(
    ctx: click.Context,
    *,
    task_dir: Path,
    to_dialect: str,
    target: str,
    out: Path | None,
    as_json: bool,
) -> None:
    """Port a legacy-NKI task (neuronxcc.nki) to current NKI with the executor, verified by
    nkisim on every seed (a failing port goes to the fixer). Exit 0 ported, 1 not ported,
    2 bad task or settings."""
    app = app_context(ctx)
    settings = app.settings
    llm_config = settings.llm_config()
    task = load_task(task_dir)
    destination = out or task.path.with_name(f"{task.path.name}_{to_dialect}")
    if destination.exists():
        raise TaskError(
            f"{destination}: already exists; accelopt port never overwrites a folder "
            "(choose another with --out)"
        )
    store = open_migrated_store(ctx)
    opened = open_for_command(
        "nkisim", ["0"], target, store, isolation=app.isolation(), settings=app.settings
    )
    recorder = Recorder(store)
    library = replay(store, LibraryProjection(), use_checkpoint=True).state
    record_task(recorder, task, library.folder_records.get(str(task.path)))
    llm = LLMClient(llm_config, recorder, Ledger.from_store(store), settings.budget())
    say = (lambda message: click.echo(message, err=True)) if not as_json else (lambda _m: None)
    porter = Porter(llm=llm, recorder=recorder, backend=opened.first(), target=target, say=say)
    outcome = porter.run(task, "accelopt port", out_dir=str(destination))
    if outcome.ported:
        write_ported_folder(task, outcome, destination)
    result = outcome.result
    if as_json:
        emit_json(
            {
                "task": task.name,
                "port_id": outcome.port_id,
                "ported": outcome.ported,
                "attempts": outcome.attempts,
                "message": outcome.message,
                "out_dir": str(destination) if outcome.ported else None,
                "target": target,
                "result": result.to_json() if result is not None else None,
            }
        )
    else:
        click.echo(f"{task.name}: {outcome.message}")
        if outcome.ported:
            click.echo(f"  written to {destination}")
            if result is not None and result.latency_ms is not None:
                click.echo(
                    f"  {target}: {result.latency_ms:.4f} ms ({result.latency_kind}, "
                    f"{result.model_version or 'measured'})"
                )
    ctx.exit(0 if outcome.ported else 1)
