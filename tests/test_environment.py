"""The suite runs on accelopt's defaults whatever the developer's shell holds: no ACCELOPT_*
setting of theirs reaches a test, and the default home is a temporary folder
(tests/conftest.py's clean_environment)."""

from __future__ import annotations

import os
from pathlib import Path

from daemon.settings import Settings
from tests.conftest import TEST_KNOBS


def test_no_test_sees_the_developers_accelopt_settings(clean_environment: Path) -> None:
    assert os.environ["ACCELOPT_HOME"] == str(clean_environment)
    assert {k for k in os.environ if k.startswith("ACCELOPT_")} <= {"ACCELOPT_HOME", *TEST_KNOBS}
    settings = Settings.load()
    assert settings.database_url() == f"sqlite:///{clean_environment / 'accelopt.db'}"
    assert not settings.agents_enabled
