"""The library folder: each task's promoted kernel, with where it came from.

`<state dir>/library/<task>/kernel.py` holds the kernel promoted for the task's current
revision, under a provenance header (candidate, the position of the promotion in the log,
speedup, backend and hardware, latency kind). A demotion, a new revision or the task's
removal takes the file away. The user's own files are never written.

Which kernel that is, is the library projection's answer (`LibraryState.promoted`): this
module only writes it out, so the folder, `accelopt export` and re-verification agree.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from nkibench.task.files import name_problem
from store.projections.library import LibraryState, Promotion

__all__ = ["export_text", "sync_library"]


def export_text(promotion: Promotion, kernel: str) -> str:
    """The promoted kernel's source under its provenance header."""
    p = promotion
    header = [
        f"# accelopt: the promoted kernel of task {p.task}",
        f"# candidate {p.candidate_id}, promoted at event position {p.position} ({p.recorded_at})",
        f"# {p.speedup:.3f}x faster than the task's own kernel: {p.latency_ms:.6g} ms against "
        f"{p.baseline_latency_ms:.6g} ms, {p.latency_kind} on {p.backend} ({p.target})",
        f"# task revision {p.task_source_hash[:12]}, kernel sha256 {p.kernel_hash[:12]}",
        "",
    ]
    return "\n".join(header) + kernel


def sync_library(
    state: LibraryState, library: Path, text: Callable[[str], str]
) -> dict[str, Promotion]:
    """Make the folder match the library: write new promotions, drop what is no longer
    promoted. `text` reads a blob (`EventStore.get_text`): kernels are in the log's blobs,
    not in the projection. A task whose name is no folder name (`../..`, from a log written
    before names were checked) is left out: the folder is the library's, nothing above it."""
    current = {t: p for t, p in state.promoted().items() if name_problem(t) is None}
    library.mkdir(parents=True, exist_ok=True)
    for task, promotion in current.items():
        target = library / task / "kernel.py"
        content = export_text(promotion, text(promotion.kernel_hash))
        if target.is_file() and target.read_text(encoding="utf-8") == content:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = target.with_name(".kernel.py.tmp")
        staging.write_text(content, encoding="utf-8")
        os.replace(staging, target)
    for folder in library.iterdir():
        if folder.is_dir() and folder.name not in current:
            shutil.rmtree(folder)
    return current
