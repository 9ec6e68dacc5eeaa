"""What the MCP tools answer: typed, documented records (their JSON schemas are the tools'
output schemas). Every latency travels with its kind: `measured` on hardware, `estimated` by
the cost model (nkisim)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from events.catalog import LatencyKind

__all__ = [
    "CheckOutcome",
    "HistoryEntry",
    "Latency",
    "Lesson",
    "PlatformSummary",
    "ProfileOutcome",
    "SubmitOutcome",
    "TaskDetail",
    "TaskSummary",
]


class Latency(BaseModel):
    """A latency and how it was obtained."""

    ms: float
    kind: LatencyKind = Field(
        description="measured: on real hardware; estimated: by the cost model (nkisim)."
    )


class PlatformSummary(BaseModel):
    platform: str = Field(description="backend:target, e.g. nkisim:trn2.")
    baseline: Latency | None = Field(description="The task's own kernel.")
    best: Latency | None = Field(description="The fastest correct candidate profiled.")
    best_by: str | None = Field(
        description="The MCP client whose candidate is the best; null: accelopt's."
    )
    promoted: Latency | None = Field(description="The library's kernel (re-verified).")
    promoted_by: str | None = Field(
        description="The MCP client whose kernel is promoted; null: accelopt's."
    )
    pct_of_peak: float | None = Field(description="The best kernel's % of the roofline peak.")


class TaskSummary(BaseModel):
    task: str
    dialect: str | None = Field(description="nki, nki-legacy or triton.")
    state: str = Field(description="stale, failing, optimizing, invalid or removed.")
    error: str | None
    platforms: list[PlatformSummary]


class TaskDetail(BaseModel):
    task: str
    dialect: str | None
    revision: str = Field(description="The content hash of the task's current revision.")
    files: dict[str, str] = Field(description="kernel.py, reference.py, task.toml (text files).")
    shapes: dict[str, dict[str, float]] = Field(description="Shape set → its constants.")
    workloads: list[str] = Field(description="The workload shape sets (w0, w1...), if any.")
    seeds: list[int] = Field(description="The correctness seeds every check runs.")
    tolerance: float = Field(description="Relative L2 tolerance of the check.")
    platforms: list[PlatformSummary]
    best_candidate_id: str | None
    best_source: str | None = Field(description="The best kernel's source (null: the task's own).")
    best_profile: dict[str, Any] | None = Field(
        description="Its latest profile: latency and kind, counters, roofline, bound-by engine, "
        "hot lines, cost model version and its caveats."
    )


class Lesson(BaseModel):
    item_id: str
    task: str = Field(description="The task it was learnt on.")
    title: str
    text: str = Field(description="As the planner is shown it (another dialect's code left out).")
    speedup: float
    provenance: dict[str, Any] = Field(
        description="Search, slow and fast candidates, model, hardware; `agent` for an outside "
        "agent's lesson."
    )


class CheckOutcome(BaseModel):
    task: str
    correct: bool
    seeds: list[int]
    max_rel_l2: float | None
    shapes: str
    backend: str
    target: str


class ProfileOutcome(BaseModel):
    task: str
    candidate_id: str = Field(description="Its id in accelopt's log (history, submit's parent).")
    correct: bool
    latency: Latency | None
    baseline: Latency | None = Field(description="The task's own kernel on this platform.")
    promoted: Latency | None = Field(description="The library's kernel on this platform.")
    pct_of_peak: float | None
    roofline_ms: float | None
    bound_by: str | None
    counters: dict[str, float]
    hot_lines: list[dict[str, Any]]
    model_version: str | None = Field(description="The cost model of an estimated latency.")
    caveats: list[str] = Field(
        description="Where the cost model's estimate is known to be weak for these counters "
        "(nkisim), as accelopt's planner is told."
    )
    shapes: str
    platform: str


class SubmitOutcome(BaseModel):
    profile: ProfileOutcome
    promoted: bool
    speedup: float | None = Field(description="Over the task's own kernel, as re-verified.")
    lesson_item_id: str | None = Field(description="The memory entry the lesson became.")


class HistoryEntry(BaseModel):
    candidate_id: str
    origin: str = Field(description="baseline, executor, fixer, tunable or agent.")
    agent: str | None = Field(description="client/model of an outside agent's candidate.")
    session: str | None = Field(description="The search or agent session it belongs to.")
    parent_id: str | None
    fate: str = Field(description="generated, rejected, failed, profiled, selected or promoted.")
    reason: str | None
    latency: Latency | None
    position: int
