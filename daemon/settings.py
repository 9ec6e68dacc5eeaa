"""The one settings object, read from the environment once per process."""

from pathlib import Path
from typing import Any, ClassVar

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from agents.config import ROLES, Budget, LLMConfig, Price, RoleConfig
from events.errors import AccelOptError

__all__ = ["Settings", "SettingsError"]

ROLE_KEYS = {"model", "base_url", "api_key", "temperature", "max_tokens", "reasoning_effort"}


class SettingsError(AccelOptError):
    """A setting that is missing or malformed; the message names the variable."""

    exit_code: ClassVar[int] = 2


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

    # --- the LLM endpoints: one OpenAI-compatible API shared by the roles, unless overridden
    llm_base_url: str | None = None
    """The OpenAI-compatible endpoint (e.g. http://127.0.0.1:8000/v1 for a local vLLM); without
    one the daemon profiles and sweeps tunables, and the agents stay idle."""
    llm_api_key: SecretStr = SecretStr("EMPTY")
    planner_model: str | None = None
    executor_model: str | None = None
    """Default: the planner's model."""
    summarizer_model: str | None = None
    """Default: the planner's model."""
    fixer_model: str | None = None
    """Default: the executor's model."""
    llm_temperature: float | None = None
    llm_max_tokens: int | None = None
    llm_reasoning_effort: str | None = None
    llm_roles: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Per-role overrides as JSON, e.g. {"executor": {"base_url": "...", "temperature": 1.0}}."""
    llm_prices: dict[str, Price] = Field(default_factory=dict)
    """Model → US dollars per million tokens, as JSON: {"m": {"prompt": 0.1, "completion": 0.5}}."""
    llm_timeout_s: float = 600.0
    llm_max_attempts: int = 4
    llm_retry_base_s: float = 1.0
    llm_max_concurrency: int = 8

    # --- budgets (None: no limit)
    budget_task_tokens: int | None = None
    budget_task_usd: float | None = None
    budget_total_tokens: int | None = None
    budget_total_usd: float | None = None

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

    def _models(self) -> dict[str, str]:
        if not self.planner_model:
            raise SettingsError(
                "no LLM model is set: ACCELOPT_PLANNER_MODEL names the planner's model "
                "(and, unless set apart, the summarizer's and executor's)"
            )
        executor = self.executor_model or self.planner_model
        return {
            "planner": self.planner_model,
            "executor": executor,
            "summarizer": self.summarizer_model or self.planner_model,
            "fixer": self.fixer_model or executor,
        }

    @property
    def agents_enabled(self) -> bool:
        return self.llm_base_url is not None

    def llm_config(self) -> LLMConfig:
        if self.llm_base_url is None:
            raise SettingsError(
                "no LLM endpoint: set ACCELOPT_LLM_BASE_URL (an OpenAI-compatible API, such as "
                "http://127.0.0.1:8000/v1 for vLLM) and ACCELOPT_PLANNER_MODEL"
            )
        base_url = self.llm_base_url
        unknown_roles = set(self.llm_roles) - set(ROLES)
        if unknown_roles:
            raise SettingsError(
                f"ACCELOPT_LLM_ROLES names unknown roles {sorted(unknown_roles)}; "
                f"the roles are {', '.join(ROLES)}"
            )
        roles = {}
        for role, model in self._models().items():
            override = self.llm_roles.get(role, {})
            unknown = set(override) - ROLE_KEYS
            if unknown:
                raise SettingsError(
                    f"ACCELOPT_LLM_ROLES.{role}: unknown keys {sorted(unknown)}; "
                    f"allowed: {', '.join(sorted(ROLE_KEYS))}"
                )
            roles[role] = RoleConfig(
                **{
                    "model": model,
                    "base_url": base_url,
                    "api_key": self.llm_api_key,
                    "temperature": self.llm_temperature,
                    "max_tokens": self.llm_max_tokens,
                    "reasoning_effort": self.llm_reasoning_effort,
                    **override,
                }
            )
        return LLMConfig(
            roles=roles,
            prices=self.llm_prices,
            timeout_s=self.llm_timeout_s,
            max_attempts=self.llm_max_attempts,
            retry_base_s=self.llm_retry_base_s,
            max_concurrency=self.llm_max_concurrency,
        )

    def budget(self) -> Budget:
        return Budget(
            task_tokens=self.budget_task_tokens,
            task_usd=self.budget_task_usd,
            total_tokens=self.budget_total_tokens,
            total_usd=self.budget_total_usd,
        )
