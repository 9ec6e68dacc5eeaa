"""Bad input to the command line: a one-line message and the documented exit status, never a
traceback (issue 14, item 18)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli import run_cli


def test_a_database_url_that_does_not_parse() -> None:
    result = run_cli("--db", "not a url", "status")
    assert result.code == 2
    assert result.err.startswith("accelopt: error: 'not a url' is not a database URL")
    assert "Traceback" not in result.err


def test_a_position_beyond_64_bits() -> None:
    result = run_cli("events", "--since", "99999999999999999999999")
    assert result.code == 2
    assert "--since" in result.err
    assert "Traceback" not in result.err


def test_export_into_a_folder_that_does_not_exist(
    fresh_sqlite_url: Callable[[], str], tmp_path: Path
) -> None:
    result = run_cli(
        "export", "silu", "--db", fresh_sqlite_url(), "--out", str(tmp_path / "no/k.py")
    )
    assert result.code == 2
    assert "is not a directory" in result.err


@pytest.mark.parametrize(
    ("variable", "value", "named"),
    [
        ("ACCELOPT_LLM_PRICES", "{not json", "ACCELOPT_LLM_PRICES"),
        ("ACCELOPT_LLM_TIMEOUT_S", "soon", "ACCELOPT_LLM_TIMEOUT_S"),
        ("ACCELOPT_LLM_ROLES", '{"planner": {"temperature": "hot"}}', "ACCELOPT_LLM_ROLES"),
    ],
)
def test_a_bad_llm_variable_breaks_only_the_commands_that_call_the_llm(
    fresh_sqlite_url: Callable[[], str],
    monkeypatch: pytest.MonkeyPatch,
    variable: str,
    value: str,
    named: str,
) -> None:
    url = fresh_sqlite_url()
    monkeypatch.setenv("ACCELOPT_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("ACCELOPT_PLANNER_MODEL", "m")
    monkeypatch.setenv(variable, value)
    assert run_cli("status", "--db", url).code == 0
    optimize = run_cli("optimize", "nowhere", "--db", url)
    assert optimize.code == 2
    assert named in optimize.err
    assert "Traceback" not in optimize.err


@pytest.mark.postgres
@pytest.mark.parametrize(
    "url",
    [
        "postgresql://postgres@127.0.0.1:1/test",  # no server there
        "postgresql://postgres@127.0.0.1:5432/accelopt_no_such_database",
    ],
)
def test_a_postgresql_server_that_cannot_be_reached_exits_3(url: str) -> None:
    result = run_cli("status", "--db", url)
    assert result.code == 3
    assert result.err.startswith("accelopt: error: cannot open the database")
