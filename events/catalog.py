"""The event vocabulary: every fact accelopt records, in the order of the walk of one kernel.

Streams, by convention:
- `task:<name>`      the user's task folder (source changes, removal, invalidity, promotions)
- `search:<id>`      one search of a task's revision (plans, candidates, beams, lessons);
                     the id is `<task>@<revision hash[:12]>#<n>` (agents.search.ids)
- `job:<id>`         one profiling job; its `ProfileRecorded` is keyed by the job id
- `llm:<call id>`    one LLM call
- `daemon:<host>`    daemon lifecycle
- `worker:<host>`    a fleet worker's lifecycle (`accelopt worker`)
- `fleet:<host>/<device>`  one device's health (quarantines)
- `device:<key>`     one GPU's measured ceilings (the key hashes its fingerprint)
- `port:<id>`        one port of a legacy-NKI task to current NKI; the id is
                     `<task>@<revision hash[:12]>-><dialect>@<target>`

Large texts (kernel sources, plans, prompts, responses, summaries) live in the blob table;
events carry their sha256 in fields named `*_blob`.

Every latency is labelled: `latency_kind` says whether it was measured on real hardware or
estimated by a cost model, and it travels with the number everywhere.
"""

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from events.base import Event

__all__ = [
    "AGENT_SESSION_PREFIX",
    "EVENT_TYPES",
    "AgentOrigin",
    "BeamEntry",
    "BeamSelected",
    "CandidateGenerated",
    "CandidateOrigin",
    "CandidateRejected",
    "DaemonStarted",
    "DaemonStopped",
    "DeviceCeilingsMeasured",
    "DeviceQuarantined",
    "DeviceRestored",
    "ExperienceSummarized",
    "KernelDemoted",
    "KernelPromoted",
    "KernelRemoved",
    "KernelSourceChanged",
    "LLMCallCompleted",
    "LLMRole",
    "LatencyKind",
    "PlanProposed",
    "PortAttempted",
    "PortFinished",
    "PortStarted",
    "ProfilePurpose",
    "ProfileRecorded",
    "RejectReason",
    "SearchEnd",
    "SearchFinished",
    "SearchStarted",
    "TaskInvalid",
    "WorkerStarted",
    "WorkerStopped",
    "WorkloadProfile",
    "agent_of_job",
]

LatencyKind = Literal["measured", "estimated"]
ProfilePurpose = Literal["baseline", "candidate", "reverify"]
LLMRole = Literal["planner", "executor", "summarizer", "fixer"]
RejectReason = Literal[
    "duplicate",
    "no_code",
    "truncated",
    "llm_error",
    "static_check",
    "compile_error",
    "runtime_error",
    "constraint",
    "incorrect",
    "timeout",
    "crashed",
    "resource",
    "unsupported",
    "cheat",
]
CandidateOrigin = Literal["baseline", "executor", "fixer", "tunable", "agent"]
SearchEnd = Literal["completed", "plateau", "budget", "no_baseline", "failed"]


# --- the user's task folder -------------------------------------------------------------


class KernelSourceChanged(Event):
    """The files of a task folder appeared or their content changed."""

    schema_version: ClassVar[int] = 2

    task: str
    task_dir: str
    content_hash: str
    """sha256 over the folder's files, names and contents; the task's revision."""
    files: dict[str, str]
    """File name → blob sha256 of its content."""
    # version 2: which language the kernel is written in
    dialect: str | None
    """nkibench.dialects name ("nki", "nki-legacy", "triton"); None if recorded before."""


class TaskInvalid(Event):
    """A task folder changed but does not load, or is not this daemon's to run (another
    kernel language, no shape set `--shapes` names, a name another folder holds); retried
    when it changes again, and at every start of the daemon."""

    task: str
    task_dir: str
    content_hash: str
    file: str | None
    message: str


class KernelRemoved(Event):
    """The task folder is gone from the watched directory."""

    task: str
    task_dir: str


# --- profiling ----------------------------------------------------------------------------


class WorkloadProfile(BaseModel):
    """A kernel's outcome on one workload of its task (a FlashInfer-Bench Workload): the
    profile's latency is the geometric mean of these."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    name: str
    """The workload's shape set: `w<index>`."""
    uuid: str
    correct: bool
    latency_ms: float | None
    latency_kind: LatencyKind | None
    """"measured" (hardware) or "estimated" (a cost model), as the profile's."""
    error_kind: str | None
    max_rel_l2: float | None
    pct_of_peak: float | None


class ProfileRecorded(Event):
    """One kernel compiled, checked and timed on one backend; keyed by its job id."""

    schema_version: ClassVar[int] = 7

    job_id: str
    task: str
    purpose: ProfilePurpose
    candidate_id: str | None
    """None for the user's own kernel (a baseline); else the candidate profiled."""
    kernel_hash: str
    task_source_hash: str
    """The task revision (`KernelSourceChanged.content_hash`) this work belongs to."""
    backend: str
    target: str
    compiled: bool
    correct: bool
    error_kind: str | None = None
    error_message: str | None = None
    latency_ms: float | None = None
    latency_kind: LatencyKind | None = None
    latency_stats: dict[str, float] = Field(default_factory=dict)
    counters: dict[str, float] = Field(default_factory=dict)
    fingerprint: dict[str, str] = Field(default_factory=dict)
    # version 2: what the planner needs from a profile, and the model's error on hardware
    model_version: str | None
    """The cost model of an estimated latency."""
    pct_of_peak: float | None
    roofline_ms: float | None
    bound_by: str | None
    hot_lines: list[dict[str, str | int | float]]
    estimate_ms: float | None
    """On hardware: the cost model's estimate of the same kernel (its error is known)."""
    # version 3: the kernel's language
    dialect: str | None
    """The dialect the kernel ran as (nkibench.dialects); None if recorded before."""
    # version 4: what the autotuner chose
    autotuned: dict[str, list[str]] = Field(default_factory=dict)
    """Triton: each autotuned kernel's name → its configs as text (`BLOCK=128, num_warps=4,
    ...`): on a GPU the config its autotuner chose (the timed run's); under the interpreter
    the configs the checked runs used in turn. Empty for a kernel without autotuning, or
    recorded before."""
    # version 5: a task's workloads
    workloads: list[WorkloadProfile] = Field(default_factory=list)
    """A task with workloads profiled on `full`: each workload's outcome, in order, up to the
    first that failed; `latency_ms` is the geometric mean of theirs. Empty for a task without
    workloads, another shape set, or recorded before."""
    # version 6: what the kernel's run cost this host
    kernel_seconds: float | None = Field(default=None, ge=0)
    """The backend's wall time for the kernel's first checked run on this host (nkisim: the
    interpretation), seconds: not a latency of the kernel, but a baseline's gives its candidates
    their time limit (nkibench.harness.kernel_limits). None if unknown or recorded before."""
    # version 7: a GPU's hardware counters per launched kernel
    gpu_kernels: list[dict[str, float | str]] = Field(default_factory=list)
    """Triton on a GPU: each kernel of one run, its counters as Nsight Compute reported them
    (DRAM bytes, L2 hit rate, throughputs, registers, shared memory) and Triton's compile
    metadata (spills); a hint for the planner, never a verdict. Empty without, or before."""
    counters_unavailable: str | None = None
    """Why a GPU profile has no hardware counters; None where it has them (or recorded before)."""


# --- the search ---------------------------------------------------------------------------


class SearchStarted(Event):
    """An optimization of one task revision begins; its settings are fixed from here on."""

    task: str
    search_id: str
    task_source_hash: str
    baseline_candidate_id: str
    backend: str
    target: str
    shapes: str
    settings: dict[str, int | float | str]
    """Beam width, plans, samples, iterations, thresholds... as the search runs them."""
    models: dict[str, str]
    """Role → model."""


class SearchFinished(Event):
    """The search of a task stopped, and why (all iterations, a plateau, the budget...)."""

    task: str
    search_id: str
    reason: SearchEnd
    detail: str
    iterations: int
    best_candidate_id: str | None
    best_latency_ms: float | None
    latency_kind: LatencyKind | None


class PlanProposed(Event):
    """The planner proposed one optimization plan for a beam candidate."""

    task: str
    search_id: str
    iteration: int
    plan_id: str
    plan_index: int
    parent_candidate_id: str
    plan_blob: str
    llm_call_id: str


AGENT_SESSION_PREFIX = "agent~"
"""How an outside agent's session id starts (`agent~<client>~<task>@<revision>`,
agents/search/ids.py), and so its candidates' profile job ids: a projection tells an agent's
profile from the daemon's by it."""


def agent_of_job(job_id: str) -> str | None:
    """The MCP client whose session a profile job belongs to; None for the daemon's jobs."""
    if not job_id.startswith(AGENT_SESSION_PREFIX):
        return None
    return job_id[len(AGENT_SESSION_PREFIX) :].split("~", 1)[0]


class AgentOrigin(BaseModel):
    """An outside coding agent that handed accelopt a kernel or a lesson (`accelopt mcp`): the
    MCP client as its initialize request named itself, and the model it declared."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    client: str
    """The MCP client's name (clientInfo.name), e.g. `claude-code`."""
    client_version: str
    model: str
    """The model the agent declared (a tool argument, else its client's), or `unknown`."""


class CandidateGenerated(Event):
    """A new kernel exists, written by the executor or fixer, swept from a tunable, or handed
    in by an outside agent over MCP (origin `agent`)."""

    schema_version: ClassVar[int] = 2

    task: str
    search_id: str
    iteration: int
    candidate_id: str
    parent_candidate_id: str | None
    plan_id: str | None
    sample_index: int
    origin: CandidateOrigin
    kernel_hash: str
    source_blob: str
    llm_call_id: str | None
    # version 2: outside agents
    agent: AgentOrigin | None = None
    """Origin `agent`: who handed the kernel in; None for the daemon's own candidates."""
    plan_blob: str | None = None
    """Origin `agent`: the plan as the agent wrote it (the daemon's plans are PlanProposed
    events, named by `plan_id`)."""


class CandidateRejected(Event):
    """A candidate will not be profiled (again), and why."""

    task: str
    candidate_id: str
    reason: RejectReason
    message: str
    duplicate_of: str | None = None


class BeamEntry(BaseModel):
    """One kernel kept in the beam, with the latency it was kept for."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    candidate_id: str
    latency_ms: float
    latency_kind: LatencyKind


class BeamSelected(Event):
    """The beam for the next iteration; the incumbent is the best kernel so far."""

    task: str
    search_id: str
    iteration: int
    selected: list[BeamEntry]
    incumbent_id: str


class ExperienceSummarized(Event):
    """The summarizer turned a slow/fast pair into a lesson for the optimization memory, or an
    outside agent's promoted submission brought one (`agent`)."""

    schema_version: ClassVar[int] = 4

    task: str
    search_id: str | None
    """None for items recorded before version 2."""
    operators: list[str]
    """The task's operators (nkibench.task.operators), for retrieval by similarity across tasks."""
    item_id: str
    polarity: Literal["positive", "negative"]
    slow_candidate_id: str
    fast_candidate_id: str
    speedup: float
    title: str
    summary_blob: str
    llm_call_id: str | None
    """None for an agent's lesson (version 4), which no LLM call of ours wrote."""
    model: str
    backend: str
    target: str
    fingerprint: dict[str, str] = Field(default_factory=dict)
    # version 3: the language of the pair
    dialect: str
    # version 4: lessons from outside agents
    agent: AgentOrigin | None = None
    """The outside agent whose promoted submission taught the lesson; None: our summarizer."""
    """The kernel language both kernels (and the lesson's code snippets) are written in
    (nkibench.dialects: "nki", "nki-legacy", "triton"). Items from before version 3 get
    theirs from their backend (events/upcasting.py)."""


class KernelPromoted(Event):
    """A verified faster kernel becomes the task's library kernel."""

    task: str
    candidate_id: str
    kernel_hash: str
    task_source_hash: str
    backend: str
    target: str
    latency_ms: float
    latency_kind: LatencyKind
    baseline_latency_ms: float
    speedup: float


class KernelDemoted(Event):
    """A promoted kernel failed re-verification and leaves the library."""

    task: str
    candidate_id: str
    backend: str
    target: str
    reason: str


# --- LLM calls ----------------------------------------------------------------------------


class LLMCallCompleted(Event):
    """One chat completion, so that a replay never calls the API again."""

    call_id: str
    role: LLMRole
    model: str
    base_url: str
    parameters: dict[str, str | int | float | bool | None]
    prompt_blob: str
    response_blob: str | None
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    cost_usd: float
    task: str | None = None
    error: str | None = None


class DeviceCeilingsMeasured(Event):
    """What one GPU does at best, measured once per device: the GPU roofline divides by it."""

    device_key: str
    gpu: str
    fingerprint: dict[str, str]
    bandwidth_bytes_per_s: float
    """A device-to-device copy, bytes read plus bytes written."""
    vector_flops: float
    matmul_flops: dict[str, float]
    """Per dtype; "float32" is tf32 (Triton's default float32 dot), "float32_ieee" strict."""
    method: dict[str, str] = Field(default_factory=dict)


# --- the daemon ---------------------------------------------------------------------------


class DaemonStarted(Event):
    """A daemon started serving; `sandbox` says what its kernels run in (bubblewrap, or
    UNSAFE and why), so that an unconfined daemon is visible in the log for good."""

    schema_version: ClassVar[int] = 3

    host: str
    pid: int
    version: str
    watch_dir: str | None
    backend: str | None
    sandbox: str
    # version 3: where its jobs' queue and baselines are (what `accelopt mcp` must agree with)
    target: str | None = None
    """The backend's target its devices serve (None if recorded before)."""
    shapes: str | None = None
    """The shape set it profiles at (None if recorded before)."""


class DaemonStopped(Event):
    host: str
    pid: int
    reason: str


# --- the fleet's workers ------------------------------------------------------------------


class WorkerStarted(Event):
    """A worker began serving devices of one host for one backend and target: it takes only
    the jobs of `queue`."""

    host: str
    pid: int
    version: str
    backend: str
    target: str
    devices: list[str]
    """Its devices' fleet-wide names, `<host>/<device>`."""
    queue: str
    sandbox: str


class WorkerStopped(Event):
    host: str
    pid: int
    reason: str


class DeviceQuarantined(Event):
    """A device failed `failures` jobs in a row (the backend broke, or timing failed): it takes
    no job for `quarantine_s`, then is tried again; its jobs go to the other devices."""

    device: str
    failures: int
    quarantine_s: float
    last_error: str


class DeviceRestored(Event):
    """A quarantined device takes jobs again (its quarantine ended)."""

    device: str


# --- porting a legacy-NKI kernel to current NKI --------------------------------------------


class PortStarted(Event):
    """A task's kernel is being moved to another dialect (legacy NKI to current NKI, which
    SDK 2.30 and later and Trainium3 require): by `accelopt port`, or by a daemon whose
    backend runs only the new dialect."""

    port_id: str
    task: str
    task_source_hash: str
    from_dialect: str
    to_dialect: str
    backend: str
    target: str
    shapes: str
    """The shape set the port is verified at, on every seed of the task."""
    reason: str


class PortAttempted(Event):
    """One ported kernel (the executor's, or the fixer's repair of the one before) and its
    verdict against the task's reference."""

    port_id: str
    attempt: int
    """1 for the executor's port; each fixer repair counts one more."""
    role: LLMRole
    llm_call_id: str
    kernel_hash: str | None
    source_blob: str | None
    """None when the answer held no usable code."""
    correct: bool
    error_kind: str | None
    error_message: str | None
    max_rel_l2: float | None
    seeds: list[int]


class PortFinished(Event):
    port_id: str
    task: str
    outcome: Literal["ported", "failed"]
    attempts: int
    kernel_hash: str | None
    source_blob: str | None
    """The verified kernel, in the new dialect (None: the port failed)."""
    target: str
    latency_ms: float | None
    latency_kind: LatencyKind | None
    """The target's latency of the verified kernel: a cost-model estimate under nkisim."""
    out_dir: str | None
    """Where `accelopt port` wrote the ported task folder (None: not written)."""


EVENT_TYPES: dict[str, type[Event]] = {
    cls.type_name(): cls
    for cls in (
        KernelSourceChanged,
        TaskInvalid,
        KernelRemoved,
        ProfileRecorded,
        SearchStarted,
        PlanProposed,
        CandidateGenerated,
        CandidateRejected,
        BeamSelected,
        ExperienceSummarized,
        SearchFinished,
        KernelPromoted,
        KernelDemoted,
        LLMCallCompleted,
        DaemonStarted,
        DaemonStopped,
        DeviceCeilingsMeasured,
        PortStarted,
        PortAttempted,
        PortFinished,
        WorkerStarted,
        WorkerStopped,
        DeviceQuarantined,
        DeviceRestored,
    )
}
"""Every event type this code reads and writes, by stored type name."""
