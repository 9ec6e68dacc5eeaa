"""The soak's findings from its samples: a trend and a verdict per metric that must not grow,
and the rates of what grows by design (the append-only log).

Pure: samples in, a JSON-ready dict out, so the arithmetic is tested without a daemon.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from daemon.bench.soak.growth import BOUNDS, Trend, fit_trend
from daemon.bench.soak.sampler import Sample

__all__ = ["TRENDED", "growth_report", "wal_truncations"]

TRENDED = ("rss_mb", "open_fds", "threads", "children", "jobs_pending")
"""The metrics that must stay flat under steady churn: the daemon's memory, files, threads
and kernel processes (a leak), and its job backlog (work it can never catch up on)."""


def _trend_json(trend: Trend) -> dict[str, Any]:
    """The trend as JSON allows it: an undefined or infinite number as null."""
    return {
        k: None if isinstance(v, float) and not math.isfinite(v) else v
        for k, v in asdict(trend).items()
    }


def wal_truncations(samples: Sequence[Sample]) -> int:
    """How often the write-ahead log file was seen to shrink: only a checkpoint in TRUNCATE
    mode (the clock's) shrinks it; SQLite's own automatic checkpoints rewind it in place.
    Samples see at most one truncation between two of them."""
    return sum(1 for a, b in itertools.pairwise(samples) if b.wal_bytes < a.wal_bytes)


def growth_report(samples: Sequence[Sample], warmup_s: float) -> dict[str, Any]:
    """Trends of `TRENDED` over the samples after `warmup_s`, and the log's rates over all."""
    steady = [s for s in samples if s.t_s >= warmup_s]
    times = [s.t_s for s in steady]
    trends = {
        name: fit_trend(times, [float(getattr(s, name)) for s in steady], bound_per_h=BOUNDS[name])
        for name in TRENDED
    }
    minutes = (samples[-1].t_s - samples[0].t_s) / 60.0 if len(samples) > 1 else 0.0
    events = samples[-1].events - samples[0].events if samples else 0
    return {
        "samples": len(samples),
        "steady_samples": len(steady),
        "trends": {name: _trend_json(t) for name, t in trends.items()},
        "no_growth": not any(t.grows for t in trends.values()),
        "events": samples[-1].events if samples else 0,
        "events_per_min": events / minutes if minutes else None,
        "log_mb": samples[-1].log_bytes / 1e6 if samples else None,
        "log_mb_per_min": (
            (samples[-1].log_bytes - samples[0].log_bytes) / 1e6 / minutes if minutes else None
        ),
        "zombies_max": max((s.zombies for s in samples), default=0),
        "wal_truncations_seen": wal_truncations(samples),
    }
