"""Which secrets this process knows, so that none of them is recorded (store.scrub)."""

from __future__ import annotations

import contextlib
import os

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from daemon.settings import Settings, SettingsError
from store.scrub import Scrubber

__all__ = ["SECRET_NAMES", "scrubber_for"]

SECRET_NAMES = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
"""Environment variables whose values are kept out of what is recorded, whatever they are for."""


def _database_password(url: str) -> list[str]:
    try:
        password = make_url(url).password
    except ArgumentError:
        return []
    return [str(password)] if password else []


def scrubber_for(settings: Settings, database_url: str) -> Scrubber:
    """A scrubber of every secret of this process: the LLM keys (from their file, credential
    or variable), the database's password, and every variable named like a secret."""
    secrets = [
        value
        for name, value in os.environ.items()
        if any(word in name.upper() for word in SECRET_NAMES)
    ]
    secrets += _database_password(database_url)
    # Malformed LLM settings fail the command that needs them; their variables are above.
    with contextlib.suppress(SettingsError):
        secrets += settings.llm.secrets()
    return Scrubber(secrets)
