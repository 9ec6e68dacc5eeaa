"""Where an evaluation's time goes (`accelopt bench gpu --breakdown`): the parent times each
sandboxed child from spawn to exit itself, and each child reports its own spans
(nkibench.sandbox.stopwatch) beside its result; they are diagnostics, labelled as the
child's own report, and never a verdict.

Recording is off unless a caller opens `recording()`: then nkibench.harness.run_phase asks
every child it starts for its spans and adds the child here. The columns sum to the wall
time of the recorded block: what no child reported is the parent's (spawn and sandbox: a
child's life less its own total; parent: the block's wall less every child's life)."""

from __future__ import annotations

import contextvars
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from nkibench.sandbox.results import MalformedResult, check_timings
from nkibench.sandbox.stopwatch import RESULT_KEY, SPANS

__all__ = [
    "COLUMNS",
    "FLOOR_SPANS",
    "PARENT_COLUMNS",
    "Breakdown",
    "ChildTime",
    "recorder",
    "recording",
]

PARENT_COLUMNS = ("spawn_sandbox", "counters", "child_other", "parent")
COLUMNS = ("spawn_sandbox", *SPANS, "counters", "child_other", "parent")
"""Seconds per phase, in the table's order: the parent's measurements (spawn_sandbox,
counters, parent), the children's reports (SPANS) and what the children left unnamed
(child_other)."""
COUNTERS_PHASES = ("counters", "counters_report")
"""The children that take a GPU's hardware counters (nkibench.backends.triton.nsight): their
whole lives are the `counters` column (the profiler's start and replays included)."""
FLOOR_SPANS = ("reference", "checked_runs", "timed_runs")
"""The work floor: the reference's forward passes and the kernel's runs (checked and timed),
as the children measured them; the first checked run, which compiles, is not work. Where a
profile takes counters, the counted run (Nsight Compute replays each of its kernels once per
pass of metrics) is kernel runs too: the counters child's own `checked_runs` span joins the
floor (COUNTED_SPAN), though its life stays in the `counters` column."""
COUNTED_SPAN = "checked_runs"
MAX_NOTES = 20


@dataclass(frozen=True)
class ChildTime:
    """One child: its phase, its life from spawn to exit as the parent measured it, and its own
    account (None where it gave none that could be believed)."""

    phase: str
    life_s: float
    spans: dict[str, float] | None
    total_s: float | None
    waited: bool = False
    """Started ahead of its work: `life_s` is what the evaluation waited for it, and its spans
    partly passed while other children ran."""


@dataclass
class Breakdown:
    children: list[ChildTime] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)
    wall_s: float | None = None

    def add(self, phase: str, life_s: float, result: dict[str, Any]) -> None:
        """Record a child's life and take its report out of `result` (dropped with a note
        when malformed: a child that ran a kernel may have written anything there)."""
        spans, total = self._account(phase, result, life_s, missing=True)
        self.children.append(ChildTime(phase, life_s, spans, total))

    def add_waited(self, phase: str, waited_s: float, result: dict[str, Any]) -> None:
        """A child started ahead of its work (nkibench.sandbox.ahead): what the evaluation
        waited for it, not its life, which overlapped other children's. Its own account
        (its imports before it was begun included) is kept beside it, unchecked against a
        life the parent did not measure."""
        spans, total = self._account(phase, result, math.inf, missing=False)
        self.children.append(ChildTime(phase, waited_s, spans, total, waited=True))

    def _account(
        self, phase: str, result: dict[str, Any], life_s: float, *, missing: bool
    ) -> tuple[dict[str, float] | None, float | None]:
        """The child's own account, taken out of `result` and checked against `life_s`; None
        where it gave none (a note when `missing` is one) or a malformed one (a note)."""
        raw = result.pop(RESULT_KEY, None)
        if raw is None:
            if missing:
                self._note(f"{phase}: no timings reported")
            return None, None
        try:
            return check_timings(raw, life_s)
        except MalformedResult as e:
            self._note(f"{phase}: timings dropped ({e})")
            return None, None

    def _note(self, note: str) -> None:
        if len(self.notes) < MAX_NOTES:
            self.notes.append(note)

    def columns(self) -> dict[str, float]:
        """Seconds per COLUMNS entry; they sum to `wall_s`."""
        assert self.wall_s is not None, "the recording has not ended"
        seconds = dict.fromkeys(COLUMNS, 0.0)
        for child in self.children:
            if child.phase in COUNTERS_PHASES:
                seconds["counters"] += child.life_s
                continue
            if child.spans is None or child.total_s is None or child.waited:
                seconds["child_other"] += child.life_s
                continue
            total = min(child.total_s, child.life_s)
            seconds["spawn_sandbox"] += child.life_s - total
            for name, value in child.spans.items():
                seconds[name] += value
            seconds["child_other"] += total - sum(child.spans.values())
        seconds["parent"] = self.wall_s - sum(c.life_s for c in self.children)
        return seconds

    def counted_s(self) -> float:
        """The counted runs' time as the counters' children report it (ncu's replays)."""
        return sum(
            child.spans.get(COUNTED_SPAN, 0.0)
            for child in self.children
            if child.phase in COUNTERS_PHASES and child.spans
        )

    def to_json(self) -> dict[str, Any]:
        seconds = self.columns()
        floor = sum(seconds[name] for name in FLOOR_SPANS) + self.counted_s()
        assert self.wall_s is not None
        return {
            "seconds": seconds,
            "wall_s": self.wall_s,
            "floor_s": floor,
            "wall_over_floor": self.wall_s / floor if floor > 0 else None,
            "children": [
                {
                    "phase": c.phase,
                    "life_s": c.life_s,
                    "spans": c.spans,
                    "total_s": c.total_s,
                    "waited": c.waited,
                }
                for c in self.children
            ],
            "notes": self.notes,
        }


_current: contextvars.ContextVar[Breakdown | None] = contextvars.ContextVar(
    "breakdown", default=None
)


def recorder() -> Breakdown | None:
    """The breakdown being recorded here, if any."""
    return _current.get()


@contextmanager
def recording() -> Iterator[Breakdown]:
    """Record every child the block starts; the breakdown's wall is the block's."""
    breakdown = Breakdown()
    token = _current.set(breakdown)
    try:
        yield breakdown
    finally:
        breakdown.wall_s = time.perf_counter() - breakdown.started
        _current.reset(token)
