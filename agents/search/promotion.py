"""Promotion: the search's incumbent becomes the task's kernel once it is re-verified.

A kernel is promoted only when it beats the baseline (or the promotion standing on the search's
platform, whoever made it: an earlier search, an outside agent) by more than the noise
(`min_gain`), and only after a second, separate profile (purpose "reverify") confirms
that it is correct and still as fast, so a lucky measurement never reaches the library.
`KernelPromoted` goes to the task's stream, which the library folds, not to the search's.
"""

from __future__ import annotations

from collections.abc import Callable

from agents.search import ids
from agents.search.profiling import Kernel, Profiles
from agents.search.record import SearchRecord
from agents.search.selection import Measured
from events.catalog import KernelDemoted, KernelPromoted, ProfileRecorded
from nkibench.task.spec import TaskSpec

__all__ = ["Promotion", "promote_if_verified"]


class Promotion:
    """The promotions of one search's incumbents."""

    def __init__(
        self,
        *,
        task: TaskSpec,
        record: SearchRecord,
        profiles: Profiles,
        say: Callable[[str], None],
    ) -> None:
        self.task = task
        self.record = record
        self.profiles = profiles
        self.say = say

    @property
    def stream(self) -> str:
        return f"task:{self.task.name}"

    def latest(self) -> tuple[str | None, float | None]:
        """The latest promotion of this search, if any: (candidate, latency)."""
        found: tuple[str | None, float | None] = (None, None)
        for event in self.record.recorder.of_type(self.stream, KernelPromoted):
            if event.task_source_hash == self.task.content_hash and (
                event.candidate_id in self.record.index.candidates
            ):
                found = (event.candidate_id, event.latency_ms)
        return found

    def standing(self) -> tuple[str | None, float | None]:
        """The task revision's promotion on this search's platform that stands now, whoever
        made it (this search, an earlier one, an outside agent's submission): a new one must
        beat it. (candidate, latency), or Nones."""
        profiler = self.profiles.profiler
        found: tuple[str | None, float | None] = (None, None)
        for event in self.record.recorder.events(self.stream):
            if isinstance(event, KernelPromoted) and (
                event.task_source_hash == self.task.content_hash
                and (event.backend, event.target) == (profiler.backend_name, profiler.target)
            ):
                found = (event.candidate_id, event.latency_ms)
            elif isinstance(event, KernelDemoted) and event.candidate_id == found[0]:
                found = (None, None)
        return found

    def consider(self, incumbent: Measured, baseline: Kernel, *, min_gain: float) -> None:
        """Promote the incumbent if it gains more than `min_gain` and survives
        re-verification."""
        assert baseline.profile is not None
        assert baseline.profile.latency_ms is not None
        if incumbent.candidate_id == baseline.event.candidate_id:
            return
        promoted, promoted_ms = self.standing()
        reference = promoted_ms or baseline.profile.latency_ms
        if promoted == incumbent.candidate_id or (incumbent.latency_ms * min_gain > reference):
            return
        refused = promote_if_verified(
            self.record,
            task=self.task,
            candidate=incumbent.candidate_id,
            latency_ms=incumbent.latency_ms,
            baseline_ms=baseline.profile.latency_ms,
            reverify=lambda: self.profiles.profile(incumbent.candidate_id, "reverify"),
            min_gain=min_gain,
        )
        if refused is not None:
            self.say(f"{self.task.name}: {incumbent.candidate_id} {refused}")


def promote_if_verified(
    record: SearchRecord,
    *,
    task: TaskSpec,
    candidate: str,
    latency_ms: float,
    baseline_ms: float,
    reverify: Callable[[], ProfileRecorded],
    min_gain: float,
) -> str | None:
    """The second half of every promotion, the search's and an outside agent's alike: a
    separate profile (`reverify`, on every seed of the task) must find `candidate` correct
    and no slower than `latency_ms` by more than the noise, then `KernelPromoted` goes to the
    task's stream. Why it was not promoted, or None once it is."""
    check = reverify()
    if not check.correct or check.latency_ms is None:
        return "failed re-verification"
    if check.latency_ms > latency_ms * min_gain:
        return "was slower when re-measured"
    event = record.index.candidates[candidate]
    record.recorder.record(
        f"task:{task.name}",
        KernelPromoted(
            task=task.name,
            candidate_id=candidate,
            kernel_hash=event.kernel_hash,
            task_source_hash=task.content_hash,
            backend=check.backend,
            target=check.target,
            latency_ms=check.latency_ms,
            latency_kind=check.latency_kind or "estimated",
            baseline_latency_ms=baseline_ms,
            speedup=baseline_ms / check.latency_ms,
        ),
        key=ids.promotion_key(record.search_id, candidate),
    )
    return None
