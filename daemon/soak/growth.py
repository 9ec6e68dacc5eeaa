"""Does a sampled quantity grow? A least-squares slope over time, its standard error, and a
verdict.

Last-minus-first says little about a process whose memory moves by megabytes with every job:
one sample taken mid-job decides it. The slope of a least-squares line through every sample
after the warm-up uses them all, and its standard error says how far the slope could be off
by noise alone. Samples a few seconds apart are not independent, though (a search holds its
memory for many samples), and the textbook standard error would then be too small, calling
every slow wave a leak. So the residuals' lag-1 autocorrelation r shrinks the sample count
to an effective n_eff = n (1 - r) / (1 + r) before the error is computed, as is done for
trends in climate series (Santer et al. 2000, J. Geophys. Res. 105(D6)).

The verdict: a slope within twice its standard error is no trend the run can tell from
noise; a slope above that but below the metric's bound (growth too small to matter over
weeks of uptime, see `BOUNDS`) is no growth worth a restart; anything else grows.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["BOUNDS", "HOURS_OF_UPTIME", "Trend", "Verdict", "fit_trend"]

Verdict = Literal["no growth (within noise)", "no growth (below bound)", "GROWS", "too few samples"]

HOURS_OF_UPTIME = 28 * 24.0
"""The uptime the bounds are drawn for: four weeks, a team's daemon between upgrades."""
BOUNDS: dict[str, float] = {
    "rss_mb": 250.0 / HOURS_OF_UPTIME,
    "open_fds": 256.0 / HOURS_OF_UPTIME,
    "threads": 64.0 / HOURS_OF_UPTIME,
    "children": 16.0 / HOURS_OF_UPTIME,
    "jobs_pending": 100.0 / HOURS_OF_UPTIME,
}
"""Per hour, the growth that would stay harmless over four weeks: resident memory no more
than the daemon's whole RSS target (250 MB, `accelopt bench daemon`); open files a quarter of
the usual soft limit of 1024; threads 64 (each holds a stack and a share of the GIL); kernel
processes 16 (each one a sandbox and a reference run); a job backlog of 100 (hours of work
the daemon would never catch up on)."""
MIN_SAMPLES = 4


@dataclass(frozen=True)
class Trend:
    """One metric over the samples after the warm-up; slopes per hour of wall time."""

    samples: int
    first: float
    last: float
    low: float
    high: float
    slope_per_h: float
    se_per_h: float
    """The slope's standard error, for autocorrelated residuals (inf: too little data)."""
    autocorrelation: float
    """Lag-1 autocorrelation of the residuals (0 when negative or undefined)."""
    bound_per_h: float | None
    verdict: Verdict

    @property
    def grows(self) -> bool:
        return self.verdict == "GROWS"


def _judge(slope: float, se: float, bound: float | None) -> Verdict:
    if slope <= 2.0 * se:
        return "no growth (within noise)"
    if bound is not None and slope <= bound:
        return "no growth (below bound)"
    return "GROWS"


def fit_trend(
    times_s: Sequence[float], values: Sequence[float], *, bound_per_h: float | None = None
) -> Trend:
    """The least-squares line through (time, value) and whether it rises; `times_s` in
    seconds (any origin), the slope reported per hour."""
    if len(times_s) != len(values):
        raise ValueError(f"{len(times_s)} times for {len(values)} values")
    n = len(values)
    if n == 0:
        nan = math.nan
        return Trend(0, nan, nan, nan, nan, nan, math.inf, 0.0, bound_per_h, "too few samples")
    hours = [t / 3600.0 for t in times_s]
    mean_t = math.fsum(hours) / n
    mean_v = math.fsum(values) / n
    sxx = math.fsum((t - mean_t) ** 2 for t in hours)
    shape = (n, values[0], values[-1], min(values), max(values))
    if n < MIN_SAMPLES or sxx == 0.0:
        return Trend(*shape, math.nan, math.inf, 0.0, bound_per_h, "too few samples")
    slope = math.fsum((t - mean_t) * (v - mean_v) for t, v in zip(hours, values, strict=True)) / sxx
    residuals = [v - mean_v - slope * (t - mean_t) for t, v in zip(hours, values, strict=True)]
    ssr = math.fsum(e * e for e in residuals)
    r = 0.0
    if ssr > 0.0:
        lagged = math.fsum(a * b for a, b in itertools.pairwise(residuals))
        r = max(0.0, min(lagged / ssr, 0.999))
    n_eff = n * (1.0 - r) / (1.0 + r)
    se = math.sqrt(ssr / (n_eff - 2.0) / sxx) if n_eff > 2.0 else math.inf
    return Trend(*shape, slope, se, r, bound_per_h, _judge(slope, se, bound_per_h))
