"""The sandbox: what a child process can see, how it is limited, and how it dies."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from nkibench.sandbox.process import Limits, run_child

SECRETS = {
    "ACCELOPT_LLM_API_KEY": "sk-accelopt-secret",
    "OPENAI_API_KEY": "sk-openai-secret",
    "ACCELOPT_DB": "postgresql://admin:hunter2@db/accelopt",
    "AWS_SECRET_ACCESS_KEY": "aws-secret",
}


def probe(
    tmp_path: Path, request: dict[str, Any], limits: Limits
) -> tuple[dict[str, Any] | None, Any]:
    result_path = tmp_path / "result.json"
    outcome = run_child(
        "tests.support.sandbox_probe",
        {**request, "result_path": str(result_path)},
        workdir=tmp_path / "work",
        limits=limits,
    )
    result = json.loads(result_path.read_text()) if result_path.exists() else None
    return result, outcome


def test_the_child_sees_none_of_the_parents_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    result, outcome = probe(tmp_path, {"probe": "env"}, Limits(timeout_s=30))
    assert outcome.returncode == 0, outcome.stderr_tail
    assert result is not None
    environment = result["env"]
    for name, value in SECRETS.items():
        assert name not in environment
        assert value not in json.dumps(environment)
    assert not any(key.startswith("ACCELOPT") for key in environment)
    assert environment["HOME"] == str(tmp_path / "work")
    assert result["cwd"] == str(tmp_path / "work")


def test_resource_limits_are_applied(tmp_path: Path) -> None:
    limits = Limits(timeout_s=30, memory_mb=1536, cpu_s=40, file_size_mb=64, open_files=128)
    result, outcome = probe(tmp_path, {"probe": "limits"}, limits)
    assert outcome.returncode == 0, outcome.stderr_tail
    assert result == {
        "RLIMIT_AS": 1536 * 1024 * 1024,
        "RLIMIT_CPU": 40,
        "RLIMIT_FSIZE": 64 * 1024 * 1024,
        "RLIMIT_NOFILE": 128,
        "RLIMIT_CORE": 0,
    }


def test_memory_beyond_the_limit_is_refused(tmp_path: Path) -> None:
    result, _ = probe(
        tmp_path, {"probe": "memory", "megabytes": 2048}, Limits(timeout_s=30, memory_mb=768)
    )
    assert result == {"memory_error": True}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A killed child not yet reaped by its (dead) parent is a zombie: gone for our purposes.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_a_hung_child_and_its_children_are_gone_within_the_timeout_plus_a_second(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "pids.json"
    started = time.monotonic()
    result, outcome = probe(
        tmp_path, {"probe": "hang", "pid_file": str(pid_file)}, Limits(timeout_s=2.0)
    )
    elapsed = time.monotonic() - started
    assert result is None
    assert outcome.timed_out
    assert elapsed < 2.0 + 1.0
    children = json.loads(pid_file.read_text())
    assert len(children) == 2
    deadline = time.monotonic() + 1.0
    while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in children), "a grandchild survived the kill"
