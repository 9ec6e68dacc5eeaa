"""What the agents are told to do: the LLM endpoints per role, prices, budgets and the search's
parameters. Plain immutable values, built once by the daemon's settings object; nothing here
reads the environment."""

from __future__ import annotations

from typing import get_args

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from events.catalog import LLMRole

__all__ = ["ROLES", "Budget", "LLMConfig", "Price", "RoleConfig", "SearchConfig"]

ROLES: tuple[LLMRole, ...] = get_args(LLMRole)
"""The roles, in the order of the vocabulary's `LLMRole` (the one definition of them)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RoleConfig(_Frozen):
    model: str
    base_url: str
    api_key: SecretStr
    temperature: float | None = None
    max_tokens: int | None = None
    reasoning_effort: str | None = None


class Price(_Frozen):
    """US dollars per million tokens."""

    prompt: float = Field(ge=0)
    completion: float = Field(ge=0)


class LLMConfig(_Frozen):
    roles: dict[LLMRole, RoleConfig]
    prices: dict[str, Price] = Field(default_factory=dict)
    """Model → price; a model without one is recorded at $0 and reported as unpriced."""
    timeout_s: float = Field(default=600.0, gt=0)
    max_attempts: int = Field(default=4, ge=1)
    """Tries per call when the endpoint answers 429/5xx or times out."""
    retry_base_s: float = Field(default=1.0, ge=0)
    """Backoff before the n-th retry: retry_base_s * 2**(n-1)."""
    retry_after_max_s: float = Field(default=120.0, ge=0)
    """The longest wait an endpoint's `Retry-After` (or `retry-after-ms`) is granted; a retry
    waits for the longer of it and the backoff."""
    max_concurrency: int = Field(default=8, ge=1)

    def cost(self, model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
        price = self.prices.get(model)
        if price is None:
            return None
        return (prompt_tokens * price.prompt + completion_tokens * price.completion) / 1e6


class Budget(_Frozen):
    """Limits on LLM spending; None is no limit. Reaching one stops the task's search."""

    task_tokens: int | None = Field(default=None, ge=0)
    task_usd: float | None = Field(default=None, ge=0)
    total_tokens: int | None = Field(default=None, ge=0)
    total_usd: float | None = Field(default=None, ge=0)


class SearchConfig(_Frozen):
    """AccelOpt's parameters (defaults are its NKI settings) and ours."""

    iterations: int = Field(default=16, ge=1)
    """T."""
    beam: int = Field(default=6, ge=1)
    """B: candidates kept per iteration."""
    plans: int = Field(default=12, ge=1)
    """N: plans per candidate."""
    samples: int = Field(default=2, ge=1)
    """K: implementations per plan."""
    experiences_per_iteration: int = Field(default=8, ge=0)
    """TopK: new memory items per iteration at most."""
    memory_shown: int = Field(default=16, ge=0)
    """ExpN: memory items shown to the planner."""
    positive_speedup: float = Field(default=1.04, gt=1)
    """A lesson is positive above this speedup..."""
    negative_slowdown: float = Field(default=1.15, gt=1)
    """...and negative below 1/this."""
    fixer_attempts: int = Field(default=1, ge=0)
    """F: repairs tried for a candidate that fails to compile, run or pass."""
    plateau: int = Field(default=4, ge=1)
    """P: iterations without a gain above `min_gain` before the search stops."""
    min_gain: float = Field(default=1.01, ge=1)
    """The noise: a latency must improve by this factor to count (and to be promoted)."""

    def as_event_settings(self) -> dict[str, int | float | str]:
        return self.model_dump()
