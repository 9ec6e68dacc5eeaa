"""The report page's sections, each addressable on its own: the summary line, one library row
and one section per task, the memory and the economy. The live page keeps each section's
version, the log position of its last change, and fetches again only the sections whose
version is newer than the page (daemon.views.web.live).

A section's version moves with every event that may change what it shows; an event that
leaves the section as it was may move it too (the section is then sent again unchanged), but
one that changes it must move it, or an open page would keep showing it stale. The report
projection (model.py) is what decides: every event it folds for a task names that task."""

from __future__ import annotations

from dataclasses import dataclass

from events.base import Event
from events.catalog import ExperienceSummarized, LLMCallCompleted, ProfileRecorded

__all__ = [
    "ECONOMY",
    "LIBRARY_ROWS",
    "MAIN",
    "MEMORY",
    "ROW",
    "SUMMARY",
    "TASK",
    "Placement",
    "SectionVersions",
    "page_order",
    "row_section",
    "task_section",
]

SUMMARY = "summary"
"""The line of totals and the log position: it changes with every event."""
MEMORY = "memory"
ECONOMY = "economy"
ROW, TASK = "row:", "task:"
LIBRARY_ROWS = "library-rows"
"""The element holding the library's rows (report.html)."""
MAIN = "main"
"""The element holding the task sections, before the memory's."""


def row_section(task: str) -> str:
    return ROW + task


def task_section(task: str) -> str:
    return TASK + task


@dataclass(frozen=True)
class Placement:
    """Where a section goes on the page: into `parent` (an element id), before the section
    `before` (None: at the parent's end). A page that lacks the section (a new task) puts it
    there."""

    section: str
    parent: str
    before: str | None


def page_order(tasks: list[str]) -> list[Placement]:
    """The page's sections, in page order, for its tasks in the order it shows them."""
    rows = [row_section(t) for t in tasks]
    sections = [task_section(t) for t in tasks]
    after_rows: list[str | None] = [*rows, None][1:]  # the last row: at the table's end
    after_sections = [*sections, MEMORY][1:]
    return [
        Placement(SUMMARY, MAIN, None),
        *(Placement(r, LIBRARY_ROWS, n) for r, n in zip(rows, after_rows, strict=True)),
        *(Placement(s, MAIN, n) for s, n in zip(sections, after_sections, strict=True)),
        Placement(MEMORY, MAIN, ECONOMY),
        Placement(ECONOMY, MAIN, None),
    ]


class SectionVersions:
    """Each section's version: the log position of the last event that may have changed it
    (0: none yet). Folded alongside the report projection, event by event."""

    def __init__(self) -> None:
        self._at: dict[str, int] = {}

    def of(self, section: str) -> int:
        return self._at.get(section, 0)

    def note(self, event: Event, position: int, *, new_task: bool) -> None:
        """`event`, at `position`, was folded; `new_task`: it brought a task the report had
        not seen (a row of its own in the economy's table)."""
        touched = [SUMMARY]
        task = getattr(event, "task", None)
        if isinstance(task, str):
            touched += [row_section(task), task_section(task)]
        planner = isinstance(event, LLMCallCompleted) and event.role == "planner"
        if isinstance(event, ExperienceSummarized) or planner:
            touched.append(MEMORY)  # a lesson, or a prompt it may be shown in
        if isinstance(event, (LLMCallCompleted, ProfileRecorded)) or new_task:
            touched.append(ECONOMY)  # spend, calls and tokens, or % of peak gained
        for section in touched:
            self._at[section] = position
