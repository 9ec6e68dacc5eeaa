"""The search's promotion rule against what stands in the library: a kernel promoted by anyone
(an outside agent's submission here) is the bar a search's incumbent must clear."""

from __future__ import annotations

from dataclasses import dataclass

from agents.search import ids
from agents.search.profiling import Profiles
from agents.search.promotion import Promotion
from agents.search.record import SearchRecord
from agents.search.selection import Measured
from events.catalog import KernelPromoted
from nkibench.result import KernelResult
from nkibench.suites import NKI_LEGACY_SUITE
from nkibench.task.spec import TaskSpec, load_task
from store.memory import MemoryEventStore
from store.recorder import Recorder


@dataclass
class Timed:
    """A profiler whose kernels take what `latency` says, by source."""

    latency: dict[str, float]
    backend_name: str = "nkisim"
    target: str = "trn2"
    shapes: str = "small"

    def profile(
        self,
        task: TaskSpec,
        source: str,
        *,
        job_id: str,
        baseline_kernel_s: float | None = None,
    ) -> KernelResult:
        return KernelResult(
            task.name,
            "nkisim",
            "trn2",
            "small",
            compiled=True,
            correct=True,
            latency_ms=self.latency[source],
            latency_kind="estimated",
        )


def test_a_search_promotes_only_past_the_kernel_an_agent_had_promoted() -> None:
    task = load_task(NKI_LEGACY_SUITE / "silu")
    recorder = Recorder(MemoryEventStore())
    record = SearchRecord(recorder, task.name)
    record.begin(ids.search_id(task.name, task.content_hash, 1))
    sources = {task.kernel_source: 1.0, "# better\n": 0.8, "# best\n": 0.4}
    profiles = Profiles(task=task, record=record, profiler=Timed(sources), check_stop=lambda: None)
    promotion = Promotion(task=task, record=record, profiles=profiles, say=lambda _line: None)
    for n, source in enumerate(sources):
        record.candidate(
            iteration=n,
            candidate=f"c{n}",
            source=source,
            origin="baseline" if n == 0 else "executor",
            parent=None,
            plan=None,
            sample=0,
            call=None,
        )
    baseline = profiles.kernel("c0")
    recorder.record(
        f"task:{task.name}",
        KernelPromoted(
            task=task.name,
            candidate_id="c-agent",
            kernel_hash="kh",
            task_source_hash=task.content_hash,
            backend="nkisim",
            target="trn2",
            latency_ms=0.5,
            latency_kind="estimated",
            baseline_latency_ms=1.0,
            speedup=2.0,
        ),
        key="promote|agent",
    )
    assert promotion.standing() == ("c-agent", 0.5)
    promotion.consider(Measured("c1", 0.8), baseline, min_gain=1.01)  # beats the baseline only
    assert promotion.standing() == ("c-agent", 0.5)
    promotion.consider(Measured("c2", 0.4), baseline, min_gain=1.01)
    assert promotion.standing() == ("c2", 0.4)
