"""The command line is one program: the kernel commands share their options (one meaning,
one default, one help text), `--db` means the same before and after a command's name, and
the program runs from a source checkout that was never installed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import click
import pytest

from daemon.cli import cli
from daemon.cli.options import KERNEL_OPTIONS
from events.codec import encode
from nkibench.suites import NKI_LEGACY_SUITE
from store.sql import SqlEventStore
from tests.support import REPOSITORY, factories
from tests.support.cli import run_cli

KERNEL_COMMANDS = ("check", "profile", "optimize", "daemon")


def _help_of(command: str) -> dict[str, str]:
    """Each option of `accelopt <command> --help` with the lines of its help."""
    result = run_cli(command, "--help")
    assert result.code == 0, result.err
    options: dict[str, str] = {}
    current = None
    for line in result.out.splitlines():
        stripped = line.strip()
        if stripped.startswith("--"):
            current = stripped.split()[0].rstrip(",")
            options[current] = stripped[len(current) :].strip()
        elif current is not None and line.startswith(" " * 10) and stripped:
            options[current] += " " + stripped
        elif not stripped:
            current = None
    return options


def test_every_kernel_command_shows_the_same_kernel_options() -> None:
    helps = {command: _help_of(command) for command in KERNEL_COMMANDS}
    for option in KERNEL_OPTIONS:
        texts = {command: helps[command].get(option) for command in KERNEL_COMMANDS}
        assert None not in texts.values(), f"{option} missing: {texts}"
        assert len(set(texts.values())) == 1, f"{option} differs: {texts}"
    assert "--core" not in str(helps)  # one way to name a device: --devices
    assert "--device " not in str(helps)


def test_the_search_options_are_the_same_for_optimize_and_the_daemon() -> None:
    optimize, daemon = _help_of("optimize"), _help_of("daemon")
    for option in ("--iterations", "--beam", "--plans", "--samples", "--fixer-attempts"):
        assert optimize[option] == daemon[option]


WITHOUT_DATABASE = {
    "bench nkisim",
    "bench nkibench",
    "bench cost-model",
    "bench fidelity",
    "bench daemon",
    "bench soak",
    "bench report",
}
"""Benchmarks that make their own databases and workspaces, and never read --db."""


def test_every_command_that_uses_a_database_takes_db_after_its_name() -> None:
    missing = []
    context = click.Context(cli)
    for name in cli.list_commands(context):
        command = cli.get_command(context, name)
        assert command is not None
        subcommands = getattr(command, "commands", None)
        for label, sub in (
            {f"{name} {n}": c for n, c in subcommands.items()} if subcommands else {name: command}
        ).items():
            if label not in WITHOUT_DATABASE and not any("--db" in p.opts for p in sub.params):
                missing.append(label)
    assert missing == []


def test_db_before_and_after_the_command_name_are_the_same(
    fresh_sqlite_url: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ACCELOPT_DB", raising=False)
    url = fresh_sqlite_url()
    store = SqlEventStore.open(url)
    store.append("task:silu", [encode(factories.source_changed("silu", "h1"))])
    store.close()
    before = run_cli("--db", url, "status", "--json")
    after = run_cli("status", "--db", url, "--json")
    assert before.code == after.code == 0, before.err + after.err
    assert before.json()["tasks"] == after.json()["tasks"]
    assert [(t["task"], t["state"]) for t in before.json()["tasks"]] == [("silu", "stale")]
    nowhere = run_cli("status", "--db", f"sqlite:///{Path(url[10:]).parent / 'none.db'}")
    assert nowhere.code == 3  # the option after the name is the one used


def test_a_bad_shapes_or_devices_value_is_a_usage_error() -> None:
    shapes = run_cli("check", str(NKI_LEGACY_SUITE / "silu"), "--shapes", "smal")
    assert shapes.code == 2
    assert "no shape set 'smal'" in shapes.err
    devices = run_cli("check", str(NKI_LEGACY_SUITE / "silu"), "--devices", "0,1")
    assert devices.code == 2
    assert "runs on one device" in devices.err


def test_the_program_runs_from_a_source_checkout_never_installed(tmp_path: Path) -> None:
    """No accelopt distribution anywhere on the path: only the checkout and its dependencies
    (site-packages without accelopt's metadata, and no .pth file run)."""
    site = Path(next(p for p in sys.path if p.endswith("site-packages")))
    bare, checkout = tmp_path / "site", tmp_path / "checkout"
    bare.mkdir()
    checkout.mkdir()
    for entry in site.iterdir():
        if not entry.name.lower().startswith(("accelopt", "__editable__")):
            (bare / entry.name).symlink_to(entry)
    for package in ("events", "store", "agents", "nkibench", "daemon"):
        (checkout / package).symlink_to(REPOSITORY / package)
    environment = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": os.pathsep.join([str(checkout), str(bare)]),
        "ACCELOPT_HOME": str(tmp_path / "state"),
    }

    def accelopt(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-S", "-m", "daemon", *argv],
            env=environment,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    probe = subprocess.run(
        [sys.executable, "-S", "-c", "import importlib.metadata as m; m.version('accelopt')"],
        env=environment,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert "PackageNotFoundError" in probe.stderr  # really not installed
    assert accelopt("db", "upgrade").returncode == 0
    check = accelopt("check", str(NKI_LEGACY_SUITE / "silu"), "--shapes", "small", "--seeds", "0")
    assert check.returncode == 0, check.stderr
    assert "correct on seeds [0]" in check.stdout
    status = accelopt("status", "--json")
    assert status.returncode == 0, status.stderr


def test_check_and_profile_default_to_the_tasks_smallest_shape_set(tmp_path: Path) -> None:
    """`small` where the task defines it, else `full` (a task without [shapes.small] used to
    fail with "no shape set 'small'")."""
    with_small = run_cli("check", str(NKI_LEGACY_SUITE / "silu"), "--seeds", "0", "--json")
    assert with_small.code == 0, with_small.err
    assert json.loads(with_small.out)["shapes"] == "small"
    folder = tmp_path / "silu"
    shutil.copytree(NKI_LEGACY_SUITE / "silu", folder)
    reference = (folder / "reference.py").read_text()
    (folder / "reference.py").write_text(reference.replace("M = 4096", "M = 128"))
    (folder / "reference.py").write_text(
        (folder / "reference.py").read_text().replace("N = 7168", "N = 1024")
    )
    (folder / "task.toml").unlink()
    for command in ("check", "profile"):
        only_full = run_cli(command, str(folder), "--seeds", "0", "--json")
        assert only_full.code == 0, only_full.err
        assert json.loads(only_full.out)["shapes"] == "full"
