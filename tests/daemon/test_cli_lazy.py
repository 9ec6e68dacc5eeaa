"""The command line starts at once: `accelopt --help` lists every command without importing
one, and the commands that only read the log (`status`, `events`) never import the LLM client,
the job queue, the backends' libraries or the web extra."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import click
import pytest

from daemon.cli import COMMANDS, cli
from daemon.cli.lazy import LazyGroup
from events.codec import encode
from store.sql import SqlEventStore
from tests.support import REPOSITORY, factories

HEAVY = (
    "openai",
    "procrastinate",
    "torch",
    "triton",
    "matplotlib",
    "jinja2",
    "starlette",
    "uvicorn",
    "prometheus_client",
    "flashinfer_bench",
)
"""What a command that only reads the log must not import: each costs start-up time."""

PROBE = """
import sys
from daemon.cli import main
try:
    main(sys.argv[2:])
finally:
    with open(sys.argv[1], "w", encoding="utf-8") as modules:
        modules.write("\\n".join(sorted(sys.modules)))
"""
"""`accelopt ARGV` in a fresh interpreter, which writes the modules it imported at exit."""


def _imported(tmp_path: Path, *argv: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("ACCELOPT_")}
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(REPOSITORY), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    environment["ACCELOPT_HOME"] = str(tmp_path / "state")
    listing = tmp_path / "modules.txt"
    result = subprocess.run(
        [sys.executable, "-c", PROBE, str(listing), *argv],
        env=environment,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return result, set(listing.read_text(encoding="utf-8").split())


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["status", "--help"], ["status"], ["status", "--json"], ["events"]],
    ids=" ".join,
)
def test_help_status_and_events_import_none_of_the_heavy_packages(
    argv: list[str], tmp_path: Path, fresh_sqlite_url: Callable[[], str]
) -> None:
    url = fresh_sqlite_url()
    store = SqlEventStore.open(url)
    store.append("task:silu", [encode(factories.source_changed("silu", "h1"))])
    store.append("job:1", [encode(factories.profile("silu", "h1", latency_ms=2.0))])
    store.close()
    result, modules = _imported(tmp_path, "--db", url, *argv)
    assert result.returncode == 0, result.stderr
    assert ("status" if argv[-1] == "--help" else "silu") in result.stdout
    heavy = sorted({m for m in modules if m.split(".")[0] in HEAVY})
    assert heavy == []
    assert "daemon.cli.log" in modules or argv == ["--help"]


def test_help_imports_no_command_module(tmp_path: Path) -> None:
    result, modules = _imported(tmp_path, "--help")
    assert result.returncode == 0, result.stderr
    rooms = {entry.target.partition(":")[0] for entry in COMMANDS.values()}
    assert sorted(rooms & modules) == []
    assert "daemon.cli.context" not in modules


def test_every_entry_names_its_command_and_carries_its_short_help() -> None:
    for name, entry in COMMANDS.items():
        command = entry.load()
        assert command.name == name
        assert entry.short_help(10_000) == command.get_short_help_str(10_000)


@pytest.mark.parametrize("width", [60, 80, 120])
def test_the_help_lists_the_commands_as_an_eager_group_would(width: int) -> None:
    def help_of(group: click.Group) -> str:
        return group.get_help(click.Context(group, info_name="accelopt", terminal_width=width))

    lazy = LazyGroup(
        name="accelopt", lazy=COMMANDS, params=cli.params, help=cli.help, callback=cli.callback
    )
    eager = click.Group(
        name="accelopt",
        commands={n: e.load() for n, e in COMMANDS.items()},
        params=cli.params,
        help=cli.help,
        callback=cli.callback,
    )
    assert help_of(lazy) == help_of(eager)
    assert lazy.commands == {}  # listing them imported none


def test_an_unknown_command_is_still_a_usage_error(tmp_path: Path) -> None:
    result, _ = _imported(tmp_path, "statsu")
    assert result.returncode == 2
    assert "No such command 'statsu'" in result.stderr
