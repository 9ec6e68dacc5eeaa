"""`accelopt bench report`: the report of a long-running team's log, timed.

A SQLite log of synthetic events (store.synthetic: 100 tasks with sources, baselines, plans,
candidates, profiles, beams, lessons and promotions) is filled in a temporary directory; then
`accelopt report` runs on it as a child process, as a user runs it, and its wall time, peak
resident memory and the page's size are measured.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from store.benchmark import fill, scratch_database
from store.engine import make_engine
from store.migrate import upgrade
from store.sql import SqlEventStore
from store.synthetic import SyntheticWorkload

__all__ = ["REPORT_TARGETS", "run_report_benchmark"]

REPORT_TARGETS = {"report_s": ("<", 60.0), "peak_rss_mb": ("<", 1024.0)}
"""Issue 16, on this 2-core machine, for 1,000,000 events."""


def run_report_benchmark(*, events: int = 1_000_000, seed: int = 0) -> dict[str, Any]:
    workload = SyntheticWorkload(seed=seed, tasks=100)
    with scratch_database(None) as url:
        engine = make_engine(url)
        upgrade(engine)
        store = SqlEventStore(engine)
        try:
            fill(store, workload, events, 100)
            total = store.head()
        finally:
            store.close()
        out = Path(url.removeprefix("sqlite:///")).with_name("report.html")
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", "from daemon.cli import main; main()", "--db", url,
             "report", "--out", str(out)],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        seconds = time.perf_counter() - started
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        size = out.stat().st_size
    return {
        "events": total,
        "tasks": 100,
        "report_s": round(seconds, 1),
        "peak_rss_mb": round(max(peak, before) / 1024, 1),
        "html_mb": round(size / 1e6, 1),
    }
