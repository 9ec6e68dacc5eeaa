"""The agent commands of `accelopt`: `optimize` (the AccelOpt loop in the foreground) and
`memory` (the optimization memory as of any position, and its change log)."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.table import Table

from agents.ledger import Ledger
from agents.llm import LLMClient
from agents.memory import MemoryProjection
from agents.search import LLMUnavailable, Search
from daemon.backends import open_for_command
from daemon.cli.context import app_context, open_migrated_store
from daemon.cli.options import (
    database_option,
    kernel_options,
    one_device,
    search_config,
    search_options,
)
from daemon.cli.render import emit_json, print_table
from daemon.revisions import record_task
from daemon.workers.profiling import LocalProfiler
from nkibench.task.spec import load_task
from nkibench.task.toml import FULL
from store.projections.library import LibraryProjection
from store.projections.runner import replay
from store.recorder import Recorder

__all__ = ["memory_group", "optimize_command"]


@click.command("optimize")
@click.argument("task_dir", type=click.Path(path_type=Path))
@search_options
@kernel_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object at the end.")
@database_option
@click.pass_context
def optimize_command(
    ctx: click.Context,
    /,
    *,
    task_dir: Path,
    backend: str | None,
    target: str | None,
    shapes: str | None,
    devices: str | None,
    as_json: bool,
    **search: int,
) -> None:
    """Run the AccelOpt loop on one task in the foreground; a killed run resumes where it
    stopped when started again. Exit 0 when the search ran, 1 when the task's own kernel
    fails, 2 for a bad task or settings, 3 when the LLM endpoint failed every planner call of
    an iteration (the search is left unfinished: run the command again to resume it)."""
    app = app_context(ctx)
    settings = app.settings
    llm_config = settings.llm_config()  # settings errors before anything is recorded
    task = load_task(task_dir)
    shapes = shapes or FULL
    task.overrides(shapes)
    name = backend or task.default_backend
    device = one_device(devices, name)
    store = open_migrated_store(ctx)
    isolation = app.isolation()
    opened = open_for_command(
        name, [device], target, store, isolation=isolation, settings=app.settings
    )
    recorder = Recorder(store)
    library = replay(store, LibraryProjection(), use_checkpoint=True).state
    record_task(recorder, task, library.folder_records.get(str(task.path)))
    llm = LLMClient(llm_config, recorder, Ledger.from_store(store), settings.budget())
    profiler = LocalProfiler(opened.devices[0][1], name, target=opened.target, shapes=shapes)
    say = (lambda message: click.echo(message, err=True)) if not as_json else None
    try:
        outcome = Search(
            task=task,
            recorder=recorder,
            llm=llm,
            profiler=profiler,
            config=search_config(search),
            isolation=isolation,
            log=say,
        ).run()
    except LLMUnavailable as e:
        click.echo(f"{e}; the search is unfinished: run the command again to resume it", err=True)
        ctx.exit(3)
    if as_json:
        emit_json(outcome.to_json())
    else:
        kind = outcome.latency_kind or "estimated"
        base = outcome.baseline_latency_ms
        best = outcome.best_latency_ms
        click.echo(
            f"{task.name}: {outcome.reason} ({outcome.detail}) after {outcome.iterations} "
            f"iterations, search {outcome.search_id}"
        )
        if base is not None and best is not None:
            click.echo(
                f"  baseline {base:.4f} ms, best {best:.4f} ms ({kind}), "
                f"speedup {outcome.speedup:.3f}x; promoted: {outcome.promoted_candidate}"
            )
        click.echo(
            f"  LLM: {outcome.llm_calls} calls ({outcome.failed_llm_calls} failed attempts), "
            f"{outcome.prompt_tokens} + {outcome.completion_tokens} tokens, "
            f"${outcome.cost_usd:.4f}"
            + (
                f" (unpriced: {', '.join(outcome.unpriced_models)})"
                if outcome.unpriced_models
                else ""
            )
        )
    ctx.exit(1 if outcome.reason == "no_baseline" else 0)


@click.group("memory", invoke_without_command=True)
@click.option(
    "--as-of",
    "as_of",
    type=click.IntRange(min=0),
    default=None,
    metavar="POSITION",
    help="The memory as it was at this position of the log.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@database_option
@click.pass_context
def memory_group(ctx: click.Context, as_of: int | None, as_json: bool) -> None:
    """The optimization memory: the lessons the planner is shown, with their provenance."""
    if ctx.invoked_subcommand is not None:
        return
    app = app_context(ctx)
    store = app.open_store(ctx)
    projection = MemoryProjection(retention=app.settings.memory_retention())
    result = replay(store, projection, until=as_of, use_checkpoint=True)
    shown = projection.present(result.state, store.get_text)
    if as_json:
        emit_json({"position": result.position, **shown})
        return
    table = Table(title=f"optimization memory as of position {result.position}")
    for column in ("item", "task", "title", "speedup", "target", "from"):
        table.add_column(column)
    for item in shown["items"]:
        table.add_row(
            item["item_id"],
            item["task"],
            item["title"],
            f"{item['speedup']:.3f}x",
            item["target"],
            f"{item['provenance']['slow_candidate_id']} -> "
            f"{item['provenance']['fast_candidate_id']}",
        )
    print_table(table)
    click.echo(f"{len(shown['items'])} active items, {shown['retired']} retired", err=False)


@memory_group.command("log")
@click.option("--json", "as_json", is_flag=True, help="JSON lines.")
@database_option
@click.pass_context
def memory_log(ctx: click.Context, as_json: bool) -> None:
    """Every change of the memory, with the position of the event that caused it."""
    parent = ctx.parent.params if ctx.parent else {}
    store = app_context(ctx).open_store(ctx)
    # the whole history: the daemon's projection keeps only its newest changes
    result = replay(store, MemoryProjection(), until=parent.get("as_of"))
    for change in result.state.log:
        if as_json or parent.get("as_json"):
            emit_json(change)
        else:
            click.echo(
                f"{change['position']:>8}  {change['change']:<8} {change['item_id']}  "
                f"{change['task']}: {change['reason']}"
            )
    if not result.state.log and not as_json:
        click.echo("the memory has not changed yet", err=sys.stderr.isatty())
