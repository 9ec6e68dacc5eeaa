"""What the report shows, as plain data: the report projection plus the texts it names (plans,
kernels, lessons) read from the log's blobs. The HTML page (daemon.views.report.html), `--json` and
the live pages' API all present this one view.

A long-running log holds thousands of candidates per task: the search tree shows the newest
`TREE_LIMIT` of a task's candidates (saying how many it leaves out), and the diffs are of the
baseline against the promoted kernel and of each shown beam member against its parent.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from daemon.views.report.model import Candidate, ReportState, TaskReport
from nkibench.result import kernel_counter

__all__ = [
    "DiffLine",
    "ReportView",
    "TaskView",
    "autotuned_text",
    "build_view",
    "counters_text",
    "workloads_text",
]

TREE_LIMIT = 300
PROMPT_LIMIT = 2000
DIFF_LIMIT = 40
KIND_MARK = {"measured": "(m)", "estimated": "(e)"}
"""How every latency printed says what it is (the CLI's tables use it too)."""


@dataclass(frozen=True)
class DiffLine:
    kind: str
    """add, del, hunk or ctx."""
    text: str


@dataclass
class CandidateRow:
    candidate_id: str
    parent_id: str | None
    iteration: int
    origin: str
    plan: str
    fate: str
    reason: str | None
    latency: str
    depth: int
    autotuned: str = ""
    """The configs its autotuned kernels were profiled with, one `kernel: config` per line."""
    workloads: str = ""
    """Each workload's latency, one `name: latency` per line (its latency is their geometric
    mean)."""
    counters: str = ""
    """Its GPU counters, one launched kernel a line, or why it has none."""


@dataclass
class SearchView:
    search_id: str
    started_at: str
    platform: str
    end: str
    iterations: list[tuple[int, list[CandidateRow]]]


@dataclass
class TaskView:
    name: str
    anchor: str
    summary: dict[str, Any]
    searches: list[SearchView]
    shown: int
    left_out: int
    candidates: int
    profiled: int
    promotions: int
    fates: dict[str, int]
    promoted_diff: list[DiffLine] | None
    diffs: list[tuple[str, str, list[DiffLine]]]
    latency_svg: str = ""


@dataclass
class ReportView:
    head: int
    as_of: str
    tasks: list[TaskView]
    memory: list[dict[str, Any]]
    memory_active: list[tuple[int, int]]
    economy: list[dict[str, Any]]
    spend: list[tuple[str, float]]
    totals: dict[str, Any] = field(default_factory=dict)
    fleet: list[dict[str, Any]] = field(default_factory=list)


def latency_text(ms: float | None, kind: str | None, *, missing: str = "") -> str:
    """A latency with its kind's mark, (?) if the kind is unknown; `missing` for none."""
    return missing if ms is None else f"{ms:.4g} ms {KIND_MARK.get(kind or '', '(?)')}"


def workloads_text(workloads: list[tuple[str, float | None, str | None]]) -> str:
    """`name: latency (kind mark)` per workload, one a line (empty: no workloads)."""
    return "\n".join(
        f"{name}: {latency_text(ms, kind, missing='not timed')}" for name, ms, kind in workloads
    )


def counters_text(kernels: list[dict[str, float | str]], unavailable: str | None) -> str:
    """One line per launched kernel: DRAM traffic, L2 hit rate, throughputs, registers and
    spills (Nsight Compute's and Triton's reports); or why there are none."""
    if unavailable:
        return f"no GPU counters: {unavailable}"
    return "\n".join(
        f"{k['kernel']}: DRAM read {kernel_counter(k, 'dram_read_bytes') / 1e6:.1f} MB, written "
        f"{kernel_counter(k, 'dram_write_bytes') / 1e6:.1f} MB, "
        f"L2 hit {kernel_counter(k, 'l2_hit_rate_pct'):.0f}%, "
        f"SM {kernel_counter(k, 'sm_throughput_pct'):.0f}%, "
        f"memory {kernel_counter(k, 'memory_throughput_pct'):.0f}% of peak, "
        f"{kernel_counter(k, 'registers_per_thread'):.0f} registers, "
        f"{kernel_counter(k, 'triton_spilled_registers'):.0f} spilled"
        for k in kernels
    )


def autotuned_text(autotuned: dict[str, list[str]]) -> str:
    """`kernel: config` per config, one a line (empty: no autotuned kernel)."""
    lines = [f"{name}: {config}" for name, configs in autotuned.items() for config in configs]
    return "\n".join(lines)


def build_view(
    state: ReportState,
    texts: Callable[[Iterable[str]], dict[str, str]],
    *,
    tasks: Sequence[str] | None = None,
    as_of: str = "",
    detailed: Collection[str] | None = None,
) -> ReportView:
    """The view of `tasks` (all when None) as folded in `state`; `texts` reads blobs (the
    store's get_texts). `detailed`: the tasks whose search trees and diffs are built (all when
    None); the others' views hold their summary and counts alone (the live page draws again
    only the tasks that changed)."""
    reader = _Texts(texts)
    names = sorted(state.tasks) if not tasks else [t for t in tasks if t in state.tasks]
    by_task: dict[str, list[Candidate]] = {}
    for candidate in state.candidates.values():
        by_task.setdefault(candidate.task, []).append(candidate)
    views = [
        _task_view(
            state, state.tasks[n], by_task.get(n, []), reader,
            detailed=detailed is None or n in detailed,
        )
        for n in names
    ]  # fmt: skip
    spend, running = [], 0.0
    for _, at, task, cost, _tokens in state.spend:
        if not tasks or task in names:
            running += cost
            spend.append((at, round(running, 6)))
    memory, active = _memory(state, _shown(state, reader))
    return ReportView(
        head=state.head,
        as_of=as_of,
        tasks=views,
        memory=memory,
        memory_active=active,
        economy=[_economy(state.tasks[n]) for n in names],
        spend=spend,
        totals={
            "tasks": len(views),
            "candidates": sum(v.candidates for v in views),
            "promotions": sum(v.promotions for v in views),
            "cost_usd": round(sum(state.tasks[n].cost_usd for n in names), 4),
            "tokens": sum(state.tasks[n].tokens for n in names),
        },
    )


class _Texts:
    """Blob texts, read in batches ahead of use; one the log lacks reads as None."""

    def __init__(self, fetch: Callable[[Iterable[str]], dict[str, str]]) -> None:
        self._fetch = fetch
        self._seen: dict[str, str | None] = {}

    def prefetch(self, hashes: Iterable[str | None]) -> None:
        wanted = {h for h in hashes if h is not None and h not in self._seen}
        found = self._fetch(wanted)
        for sha256 in wanted:
            self._seen[sha256] = found.get(sha256)

    def get(self, blob: str | None) -> str | None:
        if blob is None:
            return None
        if blob not in self._seen:
            self.prefetch([blob])
        return self._seen[blob]

    def title(self, blob: str | None) -> str:
        found = self.get(blob)
        if found is None:
            return ""
        line = next((ln.strip(" #*-") for ln in found.splitlines() if ln.strip()), "")
        return line[:140]


def _task_view(
    state: ReportState,
    task: TaskReport,
    candidates: list[Candidate],
    texts: _Texts,
    *,
    detailed: bool,
) -> TaskView:
    candidates.sort(key=lambda c: c.position)
    shown = candidates[-TREE_LIMIT:]
    fates = Counter(c.fate for c in candidates)
    view = TaskView(
        name=task.name,
        anchor=f"task-{task.name}",
        summary=_summary(task),
        searches=[],
        shown=len(shown),
        left_out=len(candidates) - len(shown),
        candidates=len(candidates),
        profiled=len(task.points),
        promotions=len(task.promotions),
        fates=dict(sorted(fates.items())),
        promoted_diff=None,
        diffs=[],
    )
    if detailed:
        ids = {c.candidate_id: c for c in candidates}
        texts.prefetch(
            [task.plans.get(c.plan_id or "") for c in shown]
            + [c.source_blob for c in shown]
            + [ids[c.parent_id].source_blob for c in shown if c.parent_id in ids]
            + [
                ids[b].source_blob
                for s in task.searches
                if (b := state.searches[s].baseline_candidate_id) in ids
            ]
        )
        view.searches = _searches(state, task, candidates, shown, texts)
        view.promoted_diff = _promoted_diff(state, task, ids, texts)
        view.diffs = _diffs(shown, ids, texts)
    return view


def _searches(
    state: ReportState,
    task: TaskReport,
    candidates: list[Candidate],
    shown: list[Candidate],
    texts: _Texts,
) -> list[SearchView]:
    """The search tree of the `shown` candidates, by search and iteration."""
    depth: dict[str, int] = {}
    for c in candidates:
        depth[c.candidate_id] = depth.get(c.parent_id or "", -1) + 1
    groups: dict[str | None, list[Candidate]] = {}
    for c in shown:
        groups.setdefault(c.search_id, []).append(c)
    searches = []
    for search_id, rows in groups.items():
        search = state.searches.get(search_id or "")
        iterations: dict[int, list[CandidateRow]] = {}
        for c in rows:
            iterations.setdefault(c.iteration, []).append(
                CandidateRow(
                    c.candidate_id,
                    c.parent_id,
                    c.iteration,
                    f"agent {c.agent}" if c.agent else c.origin,
                    texts.title(task.plans.get(c.plan_id or "")),
                    c.fate,
                    c.reason,
                    latency_text(c.latency_ms, c.latency_kind),
                    depth[c.candidate_id],
                    autotuned_text(c.autotuned),
                    workloads_text(c.workloads),
                    counters_text(c.gpu_kernels, c.counters_unavailable),
                )
            )
        searches.append(
            SearchView(
                search_id or "(no search)",
                search.started_at if search else "",
                f"{search.backend}:{search.target}" if search else "",
                (search.end or "running") if search else "its start is not in the log",
                sorted(iterations.items()),
            )
        )
    return searches


def _summary(task: TaskReport) -> dict[str, Any]:
    speedup = task.baseline_ms / task.best_ms if task.baseline_ms and task.best_ms else None
    return {
        "task": task.name,
        "dialect": task.dialect or "",
        "platform": f"{task.backend}:{task.target}" if task.backend else "",
        "latency_kind": task.latency_kind,
        "baseline": latency_text(task.baseline_ms, task.latency_kind),
        "best": latency_text(task.best_ms, task.latency_kind),
        "promoted": latency_text(task.promoted_ms, task.latency_kind),
        "speedup": f"{speedup:.3f}x" if speedup else "",
        "pct_of_peak": (
            f"{task.baseline_pct:.1f} → {task.best_pct:.1f}"
            if task.baseline_pct is not None and task.best_pct is not None
            else ""
        ),
        "searches": len(task.searches),
        "cost_usd": round(task.cost_usd, 4),
    }


def _diff(old: str | None, new: str | None, old_name: str, new_name: str) -> list[DiffLine]:
    if old is None or new is None:
        return [DiffLine("hunk", "(a kernel's text is not in the log)")]
    lines = []
    for line in difflib.unified_diff(
        old.splitlines(), new.splitlines(), old_name, new_name, lineterm="", n=2
    ):
        if line.startswith(("+++", "---", "@@")):
            kind = "hunk"
        else:
            kind = {"+": "add", "-": "del"}.get(line[:1], "ctx")
        lines.append(DiffLine(kind, line))
    return lines


def _promoted_diff(
    state: ReportState, task: TaskReport, ids: dict[str, Candidate], texts: _Texts
) -> list[DiffLine] | None:
    promoted = ids.get(task.promoted_candidate_id or "")
    if promoted is None or not task.searches:
        return None
    baseline = ids.get(state.searches[task.searches[-1]].baseline_candidate_id)
    old = texts.get(baseline.source_blob) if baseline else None
    return _diff(old, texts.get(promoted.source_blob), "baseline", promoted.candidate_id)


def _diffs(
    shown: list[Candidate], ids: dict[str, Candidate], texts: _Texts
) -> list[tuple[str, str, list[DiffLine]]]:
    kept = [c for c in shown if c.fate in ("selected", "promoted") and c.parent_id in ids]
    out = []
    for c in kept[-DIFF_LIMIT:]:
        parent = ids[c.parent_id or ""]
        diff = _diff(texts.get(parent.source_blob), texts.get(c.source_blob),
                     parent.candidate_id, c.candidate_id)  # fmt: skip
        out.append((c.candidate_id, parent.candidate_id, diff))
    return out


def _shown(state: ReportState, texts: _Texts) -> dict[str, list[str]]:
    """Lesson → the tasks whose planner was shown it: its title in the planner's prompt while
    it was active (the newest PROMPT_LIMIT prompts are read; two lessons of one title are one
    lesson here)."""
    recent = state.planner_prompts[-PROMPT_LIMIT:]
    texts.prefetch(blob for _, _, blob in recent)
    prompts = [(p, task, text) for p, task, blob in recent if (text := texts.get(blob))]
    shown: dict[str, set[str]] = {}
    for item in state.memory.items.values() if prompts else ():
        retired = item.retired_position if item.retired_position is not None else state.head
        for position, task, text in prompts:
            if item.added_position < position <= retired and item.title in text:
                shown.setdefault(item.item_id, set()).add(task)
    return {item: sorted(tasks) for item, tasks in shown.items()}


def _memory(
    state: ReportState, shown: dict[str, list[str]]
) -> tuple[list[dict[str, Any]], list[tuple[int, int]]]:
    rows, active, count = [], [], 0
    for change in state.memory.log:
        item = state.memory.items.get(change["item_id"])
        if change["change"] == "added":
            count += 1
        elif change["change"] == "retired":
            count -= 1
        active.append((change["position"], count))
        rows.append(
            {
                "position": change["position"],
                "at": state.memory_at.get(change["position"], ""),
                "change": change["change"],
                "task": change["task"],
                "item_id": change["item_id"],
                "title": item.title if item else "",
                "speedup": round(item.speedup, 4) if item else None,
                "polarity": item.polarity if item else "",
                "model": item.provenance.get("model", "") if item else "",
                "pair": (
                    f"{item.provenance.get('slow_candidate_id')} → "
                    f"{item.provenance.get('fast_candidate_id')}"
                    if item
                    else ""
                ),
                "platform": f"{item.backend}:{item.target}" if item else "",
                "reason": change["reason"],
                "shown_to": shown.get(change["item_id"], []) if change["change"] == "added" else [],
            }
        )
    return rows, active


def _economy(task: TaskReport) -> dict[str, Any]:
    gained = (
        task.best_pct - task.baseline_pct
        if task.best_pct is not None and task.baseline_pct is not None
        else None
    )
    per_point = task.cost_usd / gained if gained and gained > 0 else None
    return {
        "task": task.name,
        "calls": task.calls,
        "tokens": task.tokens,
        "cost_usd": round(task.cost_usd, 4),
        "pct_gained": round(gained, 2) if gained is not None else None,
        "usd_per_point": round(per_point, 4) if per_point is not None else None,
    }
