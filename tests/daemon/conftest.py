"""Fixtures of the daemon's tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A state folder for an in-process daemon without agents (no LLM settings), and the
    logging it configures undone afterwards."""
    for name in ("ACCELOPT_DB", "ACCELOPT_LLM_BASE_URL", "ACCELOPT_PLANNER_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ACCELOPT_HOME", str(tmp_path / "state"))
    yield tmp_path
    structlog.reset_defaults()
