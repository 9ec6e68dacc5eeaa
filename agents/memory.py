"""The optimization memory: a pure fold over `ExperienceSummarized` events.

AccelOpt's rules decide what becomes an experience (the search applies them); this projection
decides what the memory keeps, deterministically where AccelOpt samples at random: each task
keeps at most `capacity` active items per hardware generation, and when a new item overflows
it the item with the weakest evidence (the smallest |ln speedup|, then the oldest) retires.
Lessons are shared across tasks: the planner of a task sees its own items first, then other
tasks' items by the similarity of their operators, and never items learnt on another
hardware generation.

What the memory keeps of its past is bounded by a `Retention` (the daemon's, from its
settings): the most recently retired items per task and hardware generation, and the newest
changes of its log. Pruning is part of the fold, decided by log positions alone, so a replay
of the log with the same retention gives the same state as the live projection at any
position; a replay with none (`Retention` None: `accelopt memory log`, the report) rebuilds
the whole history from the log, which is never pruned.

Lessons cross kernel languages, their code does not: an item's before/after snippets are
written in its dialect (legacy NKI, current NKI, Triton), and a planner of another dialect sees
only the lesson's idea, its title and prose, with the code left out (`lesson_as_shown`); an
API from another language in the prompt would be copied into kernels that cannot use it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from agents.roles import says_no_optimization
from events.base import Event
from events.catalog import ExperienceSummarized
from events.envelope import Envelope
from nkibench.dialects import DIALECTS
from nkibench.task.operators import similarity

__all__ = [
    "MemoryItem",
    "MemoryProjection",
    "MemoryState",
    "Retention",
    "lesson_as_shown",
    "shown_to_planner",
    "without_code",
]

Status = Literal["active", "retired"]


@dataclass(slots=True)
class MemoryItem:
    item_id: str
    task: str
    title: str
    summary_blob: str
    speedup: float
    polarity: str
    operators: list[str]
    target: str
    backend: str
    dialect: str
    """The kernel language of the pair, and of the lesson's code snippets."""
    provenance: dict[str, Any]
    added_position: int
    status: Status = "active"
    retired_position: int | None = None

    @property
    def evidence(self) -> float:
        return abs(math.log(self.speedup)) if self.speedup > 0 else 0.0


@dataclass(slots=True)
class MemoryState:
    items: dict[str, MemoryItem] = field(default_factory=dict)
    """The active items, and the retired ones the retention keeps."""
    log: list[dict[str, Any]] = field(default_factory=list)
    """The changes the retention keeps (every one without it), in log order:
    {position, change, item_id, task, reason}."""
    dropped_items: int = 0
    """Retired items the retention dropped (the log still holds them)."""
    dropped_changes: int = 0
    """Changes the retention dropped from `log`."""


@dataclass(frozen=True, slots=True)
class Retention:
    """What the memory keeps of its past: a retired item never comes back (its id is its
    summarizer call's, and the log's idempotency key admits one event per id), so only the
    newest are kept, for reading; the planner sees active items alone."""

    retired_per_task: int = 16
    """Per task and hardware generation, the most recently retired items kept."""
    changes: int = 1000
    """The newest changes kept in the change log."""

    def __post_init__(self) -> None:
        if self.retired_per_task < 0 or self.changes < 0:
            raise ValueError(f"a retention keeps 0 or more of each: {self}")

    def describe(self) -> str:
        return f"retired{self.retired_per_task}-changes{self.changes}"


def _weakest_first(item: MemoryItem) -> tuple[float, int, str]:
    return (item.evidence, item.added_position, item.item_id)


class MemoryProjection:
    name = "memory"

    def __init__(self, capacity: int = 16, retention: Retention | None = None) -> None:
        """`retention` None keeps every retired item and change (an audit of the whole log)."""
        self.capacity = capacity
        self.retention = retention
        # 2: items carry their dialect; 3: the retention and its counts of what it dropped;
        # 4: an outside agent's lessons name it in their provenance
        kept = retention.describe() if retention is not None else "all"
        self.version = f"4-capacity{capacity}-{kept}"

    def initial(self) -> MemoryState:
        return MemoryState()

    def apply(self, state: MemoryState, envelope: Envelope[Event]) -> MemoryState:
        event = envelope.event
        if isinstance(event, ExperienceSummarized):
            self._summarized(state, event, envelope.position)
            if self.retention is not None:
                self._prune(state, self.retention, event.task, event.target)
        return state

    def _summarized(self, state: MemoryState, e: ExperienceSummarized, position: int) -> None:
        def log(change: str, item_id: str, task: str, reason: str) -> None:
            state.log.append(
                {
                    "position": position,
                    "change": change,
                    "item_id": item_id,
                    "task": task,
                    "reason": reason,
                }
            )

        if e.item_id in state.items:
            return
        if says_no_optimization(e.title):
            log("ignored", e.item_id, e.task, "the summarizer found no optimization")
            return
        state.items[e.item_id] = MemoryItem(
            item_id=e.item_id,
            task=e.task,
            title=e.title,
            summary_blob=e.summary_blob,
            speedup=e.speedup,
            polarity=e.polarity,
            operators=list(e.operators),
            target=e.target,
            backend=e.backend,
            dialect=e.dialect,
            provenance={
                "search_id": e.search_id,
                "slow_candidate_id": e.slow_candidate_id,
                "fast_candidate_id": e.fast_candidate_id,
                "model": e.model,
                "llm_call_id": e.llm_call_id,
                "backend": e.backend,
                "target": e.target,
                "fingerprint": dict(e.fingerprint),
                # an outside agent's lesson (accelopt mcp): who taught it
                "agent": e.agent.model_dump() if e.agent is not None else None,
            },
            added_position=position,
        )
        log("added", e.item_id, e.task, f"{e.polarity} lesson, speedup {e.speedup:.3f}")
        peers = [
            item
            for item in state.items.values()
            if item.status == "active" and item.task == e.task and item.target == e.target
        ]
        for item in sorted(peers, key=_weakest_first)[: max(0, len(peers) - self.capacity)]:
            item.status, item.retired_position = "retired", position
            log(
                "retired",
                item.item_id,
                item.task,
                f"over the capacity of {self.capacity} for {e.task} on {e.target}: "
                f"the weakest evidence (|ln speedup| {item.evidence:.3f})",
            )

    @staticmethod
    def _prune(state: MemoryState, retention: Retention, task: str, target: str) -> None:
        """Drop what the retention does not keep. Only the (task, target) just changed can
        hold too many retired items, and only this event's changes can overflow the log."""
        retired = sorted(
            (
                item
                for item in state.items.values()
                if item.status == "retired" and item.task == task and item.target == target
            ),
            key=lambda item: (item.retired_position or 0, item.item_id),
        )
        for item in retired[: max(0, len(retired) - retention.retired_per_task)]:
            del state.items[item.item_id]
            state.dropped_items += 1
        excess = len(state.log) - retention.changes
        if excess > 0:
            del state.log[:excess]
            state.dropped_changes += excess

    def dump(self, state: MemoryState) -> dict[str, Any]:
        return {
            "items": {k: asdict(v) for k, v in sorted(state.items.items())},
            "log": state.log,
            "dropped_items": state.dropped_items,
            "dropped_changes": state.dropped_changes,
        }

    def load(self, data: dict[str, Any]) -> MemoryState:
        items = {k: MemoryItem(**v) for k, v in data["items"].items()}
        return MemoryState(
            items=items,
            log=list(data["log"]),
            dropped_items=data["dropped_items"],
            dropped_changes=data["dropped_changes"],
        )

    def present(self, state: MemoryState, text: Callable[[str], str]) -> dict[str, Any]:
        """The active items as `accelopt memory` shows them (summaries read from blobs)."""
        active = [i for i in state.items.values() if i.status == "active"]
        active.sort(key=lambda i: (i.task, -i.evidence, i.item_id))
        return {
            "items": [
                {
                    "item_id": i.item_id,
                    "task": i.task,
                    "title": i.title,
                    "summary": text(i.summary_blob),
                    "speedup": i.speedup,
                    "polarity": i.polarity,
                    "operators": i.operators,
                    "target": i.target,
                    "dialect": i.dialect,
                    "provenance": i.provenance,
                }
                for i in active
            ],
            "retired": state.dropped_items
            + sum(1 for i in state.items.values() if i.status == "retired"),
        }


def shown_to_planner(
    state: MemoryState,
    *,
    task: str,
    operators: list[str],
    target: str,
    dialect: str,
    limit: int,
) -> list[MemoryItem]:
    """What the planner of `task` (written in `dialect`) sees: its own items by evidence, then
    other tasks' items by operator similarity, those in its own dialect before others as
    alike, then by evidence; only items learnt on the same hardware generation. Show each
    with `lesson_as_shown`, which keeps another dialect's code out."""
    usable = [i for i in state.items.values() if i.status == "active" and i.target == target]
    own = sorted((i for i in usable if i.task == task), key=lambda i: (-i.evidence, i.item_id))
    others = sorted(
        (i for i in usable if i.task != task),
        key=lambda i: (
            -similarity(i.operators, operators),
            i.dialect != dialect,
            -i.evidence,
            i.item_id,
        ),
    )
    return (own + others)[:limit]


BLANK_LINES = re.compile(r"\n{3,}")
"""Three or more newlines, closed up to one blank line where code was left out. Linear: one
quantifier over one character, so a failed try reads at most two newlines and a match is
never read again."""
OPENING_FENCE = re.compile(r"^[ \t]*+(`{3,}+|~{3,}+)[^\n]*+\n", re.M)
r"""A code block's opening line (its fence's run in group 1). Linear: a try begins only at a
line start and reads no further than that line's end, and every quantifier is possessive, so a
failed try gives back nothing to read again (the backtracking `(`{3,})[^\n]*\n` read the rest
of a run of backticks once for every backtick it gave back)."""
FENCE_LINE = re.compile(r"^[ \t]*+(`++|~++)[ \t]*+$", re.M)
"""A line of one run of backticks or tildes alone, spaces or tabs around it: a block's
closing line if the run is its opening one's. Linear as OPENING_FENCE: a try begins only at a
line start, reads no further than that line, and gives nothing back."""


def lesson_as_shown(item: MemoryItem, summary: str, *, dialect: str) -> str:
    """The lesson's text as a planner of `dialect` sees it: whole if the item was learnt in
    the same dialect; otherwise its idea only, every code block left out and a note saying in
    which language it was learnt."""
    if item.dialect == dialect:
        return summary
    idea = BLANK_LINES.sub("\n\n", without_code(summary)).strip()
    record = DIALECTS.get(item.dialect)
    language = record.language if record is not None else item.dialect
    return (
        f"{idea}\n\n(Learnt on a kernel in {language}: its code is left out, as this kernel "
        "is written in another language. Take the idea, not the API names.)"
    )


def without_code(text: str) -> str:
    r"""`text` with every fenced code block left out, from the start of its opening line to
    the end of its closing one: a block opens on a line of three or more backticks or tildes
    (after spaces or tabs; anything may follow them) that is not the text's last line, and
    closes at the next line that is the same run alone (spaces or tabs around it), or at the
    end of the text.

    It removes what `re.sub` of `^[ \t]*(`{3,}|~{3,})[^\n]*\n.*?(?:^[ \t]*\1[ \t]*$|\Z)` (re.S,
    re.M) removed, in linear time: that regex took quadratic time over a run of backticks
    with no newline after it (it gave the run back one character at a time, reading the rest
    of the text again each time)."""
    kept = []
    at = 0
    while (opening := OPENING_FENCE.search(text, at)) is not None:
        kept.append(text[at : opening.start()])
        at = _closing_fence(text, opening[1], opening.end())
    kept.append(text[at:])
    return "".join(kept)


def _closing_fence(text: str, run: str, at: int) -> int:
    """Where the block opened by `run` ends: after the next line that is the same run alone,
    or at the end of the text. The run is compared here, not put in a pattern: compiling a
    pattern is slow per character, and a run is as long as the answer makes it."""
    while (line := FENCE_LINE.search(text, at)) is not None:
        if line[1] == run:
            return line.end()
        at = line.end()
    return len(text)
