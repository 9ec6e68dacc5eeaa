"""The one settings object, read from the environment once per process."""

from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["Settings"]


class Settings(BaseSettings):
    """accelopt's settings. Environment names are ACCELOPT_<FIELD> unless stated."""

    model_config = SettingsConfigDict(env_prefix="ACCELOPT_", extra="ignore")

    db: str | None = None
    """Database URL (sqlite:///PATH or postgresql://...). Default: a SQLite file in home."""
    home: Path | None = None
    """State directory. Default: $XDG_STATE_HOME/accelopt, else ~/.local/state/accelopt."""
    xdg_state_home: Path | None = Field(
        default=None, validation_alias=AliasChoices("XDG_STATE_HOME")
    )

    def state_dir(self) -> Path:
        if self.home is not None:
            return self.home.expanduser()
        base = self.xdg_state_home or Path.home() / ".local" / "state"
        return base.expanduser() / "accelopt"

    def database_url(self, override: str | None = None) -> str:
        """--db, else ACCELOPT_DB, else the SQLite file in the state directory."""
        if override:
            return override
        if self.db:
            return self.db
        return f"sqlite:///{self.state_dir() / 'accelopt.db'}"
