"""Every id and idempotency key the search and the daemon derive, in one place.

Resumption rests on them. A step redone after a crash derives the same id from the same
inputs, and so finds its earlier result instead of doing the work again: a plan, a candidate,
a profile job, a recorded LLM answer, a lesson. The log's idempotency keys, derived here too,
refuse a second recording of the same step. A changed format would orphan every log written
before it: the search would ask the LLM and measure again, and record everything twice under
new keys. `tests/agents/test_ids.py` pins each format to literal strings for that reason.

Ids that hold a digest (plans, candidates, memory items) are short and free of separators;
the others are readable, `|`-separated, and start with what they belong to.
"""

from __future__ import annotations

import hashlib

from events.catalog import AGENT_SESSION_PREFIX, ProfilePurpose

__all__ = [
    "AGENT_PREFIX",
    "FINISHED_KEY",
    "STARTED_KEY",
    "agent_candidate_id",
    "agent_lesson_id",
    "agent_session_id",
    "baseline_id",
    "beam_key",
    "candidate_id",
    "candidate_key",
    "demotion_key",
    "digest",
    "executor_call_id",
    "executor_candidate_id",
    "fixer_call_id",
    "fixer_candidate_id",
    "is_call_of",
    "lesson_key",
    "memory_item_id",
    "plan_id",
    "plan_key",
    "planner_call_id",
    "profile_job_id",
    "promotion_key",
    "rejected_key",
    "reverify_job_id",
    "search_id",
    "search_key",
    "search_of_job",
    "summarizer_call_id",
    "tunable_candidate_id",
]

SEPARATOR = "|"


def digest(*parts: object, length: int = 16) -> str:
    """A short, stable hash of `parts` (joined by the ASCII unit separator, so no part can
    run into the next)."""
    text = "\x1f".join(str(p) for p in parts)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def _joined(*parts: object) -> str:
    return SEPARATOR.join(str(p) for p in parts)


# --- the search -------------------------------------------------------------------------


def search_id(task: str, source_hash: str, number: int) -> str:
    """The `number`-th search (from 1) of a task; the revision's hash says which source it
    optimizes, so an edited kernel starts a search of its own."""
    return f"{task}@{source_hash[:12]}#{number}"


AGENT_PREFIX = AGENT_SESSION_PREFIX


def agent_session_id(client: str, task: str, source_hash: str) -> str:
    """An outside agent's work on one task revision (`accelopt mcp`), in place of a search:
    its candidates, profile jobs and lessons are named after it, and every job of the client
    starts with `AGENT_PREFIX + client + "~"`. `client` must hold no `~` or `|`."""
    return f"{AGENT_PREFIX}{client}~{task}@{source_hash[:12]}"


# --- plans and candidates: named by where they come from, never by their content --------


def plan_id(search_id: str, iteration: int, parent: str, index: int) -> str:
    return "p" + digest(search_id, iteration, parent, index)


def candidate_id(search_id: str, origin: str, *parts: object) -> str:
    """The generic form; the functions below give each origin its parts."""
    return "c" + digest(search_id, origin, *parts)


def baseline_id(search_id: str) -> str:
    """The task's own kernel, the search's first candidate."""
    return candidate_id(search_id, "baseline")


def executor_candidate_id(search_id: str, plan: str, sample: int) -> str:
    return candidate_id(search_id, "executor", plan, sample)


def tunable_candidate_id(search_id: str, parent: str, name: str, value: object) -> str:
    """`value` enters through `str()`: 512 and "512" name the same variant."""
    return candidate_id(search_id, "tunable", parent, name, value)


def fixer_candidate_id(search_id: str, failed: str, attempt: int) -> str:
    return candidate_id(search_id, "fixer", failed, attempt)


def agent_candidate_id(session: str, kernel_hash: str) -> str:
    """An agent's kernel is named by its content: handed in twice, it is one candidate,
    profiled once."""
    return candidate_id(session, "agent", kernel_hash)


# --- LLM calls: the client reads a recorded answer back by its call id ------------------


def planner_call_id(search_id: str, iteration: int, parent: str, index: int) -> str:
    return _joined(search_id, "planner", iteration, parent, index)


def executor_call_id(search_id: str, plan: str, sample: int) -> str:
    return _joined(search_id, "executor", plan, sample)


def fixer_call_id(search_id: str, failed: str, attempt: int) -> str:
    return _joined(search_id, "fixer", failed, attempt)


def summarizer_call_id(search_id: str, slow: str, fast: str) -> str:
    return _joined(search_id, "summarizer", slow, fast)


def is_call_of(call_id: str, search_id: str) -> bool:
    """Whether the LLM call was made by this search (every call id above starts with it);
    the search's LLM spend is the sum over these calls."""
    return call_id.startswith(search_id + SEPARATOR)


def memory_item_id(call_id: str) -> str:
    """A lesson is named by the summarizer call that wrote it: one call, one memory item."""
    return "x" + digest(call_id)


def agent_lesson_id(session: str, candidate: str) -> str:
    """An agent's lesson is named by the promoted submission it came with: one each."""
    return "x" + digest(session, "lesson", candidate)


# --- profile jobs: a job's `ProfileRecorded` is keyed by its id ---------------------------


def profile_job_id(search_id: str, candidate: str, purpose: ProfilePurpose) -> str:
    return _joined(search_id, candidate, purpose)


def search_of_job(job_id: str) -> str:
    """The search a profile job belongs to, from its id (a baseline's profile names no
    candidate, its search does); a re-verification job's names none: "reverify"."""
    return job_id.split(SEPARATOR, 1)[0]


def reverify_job_id(task: str, candidate: str, epoch: int) -> str:
    """The daemon's periodic re-check of a promoted kernel: one job per re-verification
    period (`epoch`); within a period the job queue hands back the job's result instead of
    measuring again."""
    return _joined("reverify", task, candidate, epoch)


# --- idempotency keys ---------------------------------------------------------------------

STARTED_KEY = "started"
FINISHED_KEY = "finished"


def search_key(search_id: str, step: str) -> str:
    """The key an event of the search's stream is recorded with: `step` (one of the keys
    below) made unique across searches."""
    return _joined(search_id, step)


def candidate_key(candidate: str) -> str:
    return _joined("candidate", candidate)


def rejected_key(candidate: str) -> str:
    return _joined("rejected", candidate)


def plan_key(plan: str) -> str:
    return _joined("plan", plan)


def lesson_key(item: str) -> str:
    return _joined("lesson", item)


def beam_key(iteration: int) -> str:
    return _joined("beam", iteration)


def promotion_key(search_id: str, candidate: str) -> str:
    """Recorded on the task's stream (not the search's), hence the search id inside."""
    return _joined("promote", search_id, candidate)


def demotion_key(job_id: str) -> str:
    """One demotion per failed re-verification job."""
    return _joined("demote", job_id)
