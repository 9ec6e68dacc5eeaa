"""The one settings object, read from the environment once per process.

Two parts, read separately so that a bad value in one never breaks a command that needs only
the other: where accelopt keeps its state and which database and sandbox it uses (every
command), and the LLM endpoints, models, prices and budgets (only the commands that call the
agents read them, and a malformed value fails there with the variable's name).

The API key is never needed in the process environment, which /proc/<pid>/environ shows for a
process's whole life: it is read from ACCELOPT_LLM_API_KEY_FILE, else from the systemd
credential `llm_api_key` ($CREDENTIALS_DIRECTORY, `LoadCredential=`), else, for compatibility
and with a warning, from ACCELOPT_LLM_API_KEY.
"""

from __future__ import annotations

import re
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import AliasChoices, Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict
from pydantic_settings import SettingsError as SourceError

from agents.config import ROLES, Budget, LLMConfig, Price, RoleConfig
from agents.memory import Retention
from events.errors import AccelOptError
from nkibench.sandbox.isolation import Isolation
from store.jobs.base import GiveUp

__all__ = ["ApiKeySource", "LLMSettings", "Settings", "SettingsError"]

ROLE_KEYS = {"model", "base_url", "api_key", "temperature", "max_tokens", "reasoning_effort"}
CREDENTIAL = "llm_api_key"
"""The systemd credential's name (`LoadCredential=llm_api_key:/etc/accelopt/llm_api_key`)."""
ApiKeySource = Literal["file", "credential", "environment", "none"]


class SettingsError(AccelOptError):
    """A setting that is missing or malformed; the message names the variable."""

    exit_code: ClassVar[int] = 2


def _invalid(error: ValidationError | SourceError, prefix: str) -> SettingsError:
    if isinstance(error, SourceError):  # a JSON-valued variable that is not JSON
        field = re.search(r'field "(\w+)"', str(error))
        name = f"{prefix}{field.group(1).upper()}" if field else "a setting"
        return SettingsError(f"{name}: not valid JSON ({error.__cause__ or error})")
    problems = [
        f"{prefix}{str(e['loc'][0]).upper() if e['loc'] else '?'}: {e['msg']}"
        for e in error.errors()
    ]
    return SettingsError("; ".join(problems))


class LLMSettings(BaseSettings):
    """The agents' settings: ACCELOPT_<FIELD>."""

    model_config = SettingsConfigDict(env_prefix="ACCELOPT_", extra="ignore")

    llm_base_url: str | None = None
    """The OpenAI-compatible endpoint (e.g. http://127.0.0.1:8000/v1 for a local vLLM); without
    one the daemon profiles and sweeps tunables, and the agents stay idle."""
    llm_api_key_file: Path | None = None
    """A file holding the key (read once at start; the key never enters the environment)."""
    llm_api_key: SecretStr | None = None
    """Compatibility only: a key in the environment is visible in /proc for the process's
    whole life. Prefer ACCELOPT_LLM_API_KEY_FILE or the systemd credential."""
    credentials_directory: Path | None = Field(
        default=None, validation_alias=AliasChoices("CREDENTIALS_DIRECTORY")
    )
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
    llm_timeout_s: float = Field(default=600.0, gt=0)
    llm_max_attempts: int = Field(default=4, ge=1)
    llm_retry_base_s: float = Field(default=1.0, ge=0)
    llm_retry_after_max_s: float = Field(default=120.0, ge=0)
    llm_max_concurrency: int = Field(default=8, ge=1)

    # --- budgets (None: no limit)
    budget_task_tokens: int | None = Field(default=None, ge=0)
    budget_task_usd: float | None = Field(default=None, ge=0)
    budget_total_tokens: int | None = Field(default=None, ge=0)
    budget_total_usd: float | None = Field(default=None, ge=0)

    @cached_property
    def api_key(self) -> tuple[SecretStr, ApiKeySource]:
        """The key and where it came from (read once)."""
        if self.llm_api_key_file is not None:
            return _read_key(self.llm_api_key_file, "ACCELOPT_LLM_API_KEY_FILE"), "file"
        if self.credentials_directory is not None:
            credential = self.credentials_directory / CREDENTIAL
            if credential.is_file():
                return _read_key(credential, f"the systemd credential {CREDENTIAL}"), "credential"
        if self.llm_api_key is not None:
            return self.llm_api_key, "environment"
        return SecretStr("EMPTY"), "none"

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

    def llm_config(self) -> LLMConfig:
        if self.llm_base_url is None:
            raise SettingsError(
                "no LLM endpoint: set ACCELOPT_LLM_BASE_URL (an OpenAI-compatible API, such as "
                "http://127.0.0.1:8000/v1 for vLLM) and ACCELOPT_PLANNER_MODEL"
            )
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
            try:
                roles[role] = RoleConfig(
                    **{
                        "model": model,
                        "base_url": self.llm_base_url,
                        "api_key": self.api_key[0],
                        "temperature": self.llm_temperature,
                        "max_tokens": self.llm_max_tokens,
                        "reasoning_effort": self.llm_reasoning_effort,
                        **override,
                    }
                )
            except ValidationError as e:
                raise _invalid(e, f"ACCELOPT_LLM_ROLES.{role}.") from None
        return LLMConfig(
            roles=roles,
            prices=self.llm_prices,
            timeout_s=self.llm_timeout_s,
            max_attempts=self.llm_max_attempts,
            retry_base_s=self.llm_retry_base_s,
            retry_after_max_s=self.llm_retry_after_max_s,
            max_concurrency=self.llm_max_concurrency,
        )

    def budget(self) -> Budget:
        return Budget(
            task_tokens=self.budget_task_tokens,
            task_usd=self.budget_task_usd,
            total_tokens=self.budget_total_tokens,
            total_usd=self.budget_total_usd,
        )

    def secrets(self) -> list[str]:
        """Every key these settings hold, to keep out of what is recorded."""
        keys = [self.api_key[0].get_secret_value()]
        keys += [str(o["api_key"]) for o in self.llm_roles.values() if o.get("api_key")]
        return keys


def _read_key(path: Path, what: str) -> SecretStr:
    try:
        key = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as e:
        raise SettingsError(f"{what}: cannot read the API key from {path}: {e}") from None
    if not key:
        raise SettingsError(f"{what}: {path} is empty")
    return SecretStr(key)


class Settings(BaseSettings):
    """accelopt's settings: ACCELOPT_<FIELD> unless stated. The LLM part (`llm`) is read the
    first time a command needs it."""

    model_config = SettingsConfigDict(env_prefix="ACCELOPT_", extra="ignore")

    db: str | None = None
    """Database URL (sqlite:///PATH or postgresql://...). Default: a SQLite file in home."""
    home: Path | None = None
    """State directory. Default: $XDG_STATE_HOME/accelopt, else ~/.local/state/accelopt."""
    xdg_state_home: Path | None = Field(
        default=None, validation_alias=AliasChoices("XDG_STATE_HOME")
    )
    unsafe_sandbox: bool = False
    """Where bubblewrap cannot run, run kernels behind the Python-level checks alone (loudly)
    instead of refusing to run them."""
    warm_children: bool = True
    """The triton backend's children forked by a warm process that imported torch and triton
    once (nkibench.sandbox.warm; needs Landlock), instead of each started by its own
    bubblewrap; false: every child starts cold."""
    sandbox: Literal["bubblewrap", "none"] = "bubblewrap"
    """none: never bubblewrap, for a host where something else is the boundary (a container
    or VM per job); kernels then run behind the Python-level checks alone, said loudly."""

    nrtpy_python: Path | None = None
    """The neuron backend on a current SDK: the Python of an environment with nrtpy, which runs
    NEFFs with our inputs (the nrtpy docs keep it apart from the nki wheel's environment).
    Unset: nrtpy where the daemon's own Python has it, else neuron-explorer's own inputs."""

    daemon_store_patience_s: float = Field(default=300.0, gt=0)
    """How long the daemon waits out a failing database (locked, read-only, full, gone,
    restarting), retrying with backoff, before it stops with exit status 1."""

    http_token: str | None = None
    """The live pages' token (`accelopt serve`, `daemon --http`): needed to serve on any
    address but loopback, and then asked of every request."""

    min_free_mb: float = Field(default=1024.0, ge=0)
    """The free space under which the daemon takes no new job: kernels write their inputs,
    outputs and traces under the state directory, and a full disk there is a wrong verdict
    (an empty result) or a log that cannot grow. 0: no floor."""

    fleet_stalled_s: float = Field(default=30.0, gt=0)
    """PostgreSQL: a worker silent this long (no heartbeat; workers beat every third of it)
    is taken for dead, and the coordinator hands its running jobs to other workers. The same
    on every host of a fleet."""

    job_failed_runs: int = Field(default=3, ge=1)
    """A profiling job whose runs the infrastructure failed this many times (its worker died,
    its backend or device broke; never a kernel's own verdict) on at least
    ACCELOPT_JOB_FAILED_DEVICES devices ends `failed`, and its search goes on without it."""
    job_failed_devices: int = Field(default=2, ge=1)
    """The distinct devices those failed runs must span, or every device there is when there
    are fewer: this daemon's own on one host, the devices the fleet's live workers lease."""

    memory_retired_kept: int = Field(default=16, ge=0)
    """Per task and hardware generation, the most recently retired lessons the memory
    projection keeps (the planner sees active ones only; the log keeps them all)."""
    memory_changes_kept: int = Field(default=1000, ge=0)
    """The newest changes the memory projection keeps of its change log (`accelopt memory
    log` replays the whole log instead)."""
    revisions_kept_days: float = Field(default=7.0, gt=0)
    """How long a copy of a task revision that is no longer current stays under the state
    directory's revisions/ after its last use (a copy is rebuilt from the log when needed)."""

    def memory_retention(self) -> Retention:
        """What the memory projection keeps of its past: the daemon's, and that of every
        command that reads the daemon's checkpoint or snapshots of it."""
        return Retention(
            retired_per_task=self.memory_retired_kept, changes=self.memory_changes_kept
        )

    mcp_device_s_per_hour: float = Field(default=600.0, gt=0)
    """`accelopt mcp`: the device-seconds one MCP client (by its name) may use in any hour,
    checks included; a tool call past it is refused with the time to come back."""
    mcp_priority: float = -1.0
    """`accelopt mcp`: the priority of an outside agent's profile jobs in the daemon's queue.
    The daemon's searches run theirs at 0 to their task's weight (higher runs first), so the
    default lets an agent's job wait while a search's is pending."""

    def give_up(self, devices_here: int | None) -> GiveUp:
        """When a failing job ends failed; `devices_here`: the devices of a one-host queue
        (None: the fleet, which counts its live workers' devices)."""
        devices = self.job_failed_devices
        if devices_here is not None:
            devices = min(devices, max(devices_here, 1))
        return GiveUp(runs=self.job_failed_runs, devices=devices)

    def isolation(self, *, allow_unsafe: bool = False) -> Isolation:
        """The OS sandbox kernels run in, as these settings (and --unsafe-sandbox) ask."""
        if self.sandbox == "none":
            return Isolation.unsafe("ACCELOPT_SANDBOX=none")
        return Isolation.detect(allow_unsafe=allow_unsafe or self.unsafe_sandbox)

    @classmethod
    def load(cls) -> Settings:
        """The settings of this process; a malformed variable is a SettingsError naming it."""
        try:
            return cls()
        except (ValidationError, SourceError) as e:
            raise _invalid(e, "ACCELOPT_") from None

    @cached_property
    def llm(self) -> LLMSettings:
        try:
            return LLMSettings()
        except (ValidationError, SourceError) as e:
            raise _invalid(e, "ACCELOPT_") from None

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

    @property
    def agents_enabled(self) -> bool:
        return self.llm.llm_base_url is not None

    def llm_config(self) -> LLMConfig:
        return self.llm.llm_config()

    def budget(self) -> Budget:
        return self.llm.budget()
