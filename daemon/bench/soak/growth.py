"""Does a sampled quantity grow? A least-squares slope over time, its standard error, and a
verdict.

Last-minus-first says little about a process whose memory moves by megabytes with every job:
one sample taken mid-job decides it. The slope of a least-squares line through every sample
after the warm-up uses them all, and its standard error says how far the slope could be off
by noise alone. Samples a few seconds apart are not independent, though (a search holds its
memory and threads for many samples), and the textbook error, which assumes they are, would
call every slow wave a trend. So the error is Newey and West's (Econometrica 55(3), 1987):
the residuals' covariances up to L samples apart are counted too, with Bartlett weights
1 - l/(L+1) (never a negative variance) and the usual L = floor(4 (n/100)^(2/9)). (An AR(1)
correction of the sample count was tried first and dropped: a curve that bends, as memory
that grows faster with more work does, has residuals correlated near 1, and that correction
then calls any slope noise.)

The verdict: a slope within twice its standard error is no trend the run can tell from
noise; a slope above that but below the metric's bound (growth too small to matter over
weeks of uptime, see `BOUNDS`) is no growth worth a restart; and a slope whose floor did not
rise (the lowest value of the last quarter of the samples no higher than that of the first)
is activity, not accumulation: a leak keeps what it took, so the quiet moments rise with it,
while a busier end of the run (threads and children of more searches at once) lifts only the
busy ones. Anything else grows.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "BOUNDS",
    "HOURS_OF_UPTIME",
    "Trend",
    "Verdict",
    "bandwidth",
    "fit_trend",
    "newey_west_se",
]

Verdict = Literal[
    "no growth (within noise)",
    "no growth (below bound)",
    "no growth (floor flat)",
    "GROWS",
    "too few samples",
]

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
    """The slope's standard error, allowing for autocorrelated residuals (Newey-West)."""
    autocorrelation: float
    """Lag-1 autocorrelation of the residuals (0 when undefined), for the reader."""
    floor_rise: float
    """The lowest value of the last quarter of the samples minus that of the first."""
    bound_per_h: float | None
    verdict: Verdict

    @property
    def grows(self) -> bool:
        return self.verdict == "GROWS"


def _judge(slope: float, se: float, floor_rise: float, bound: float | None) -> Verdict:
    if slope <= 2.0 * se:
        return "no growth (within noise)"
    if bound is not None and slope <= bound:
        return "no growth (below bound)"
    if floor_rise <= 0.0:
        return "no growth (floor flat)"
    return "GROWS"


def bandwidth(n: int) -> int:
    """Newey and West's lag window for n samples."""
    return int(4.0 * math.pow(n / 100.0, 2.0 / 9.0))


def newey_west_se(x: Sequence[float], residuals: Sequence[float], sxx: float) -> float:
    """The least-squares slope's standard error with residuals correlated up to
    `bandwidth(n)` samples apart; x are the centred times."""
    n = len(x)
    scores = [a * e for a, e in zip(x, residuals, strict=True)]
    variance = math.fsum(u * u for u in scores)
    lags = bandwidth(n)
    for lag in range(1, lags + 1):
        weight = 1.0 - lag / (lags + 1.0)
        variance += (
            2.0
            * weight
            * math.fsum(a * b for a, b in zip(scores[lag:], scores[:-lag], strict=True))
        )
    return math.sqrt(max(variance, 0.0) * n / (n - 2.0)) / sxx


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
        return Trend(0, nan, nan, nan, nan, nan, nan, 0.0, nan, bound_per_h, "too few samples")
    hours = [t / 3600.0 for t in times_s]
    mean_t = math.fsum(hours) / n
    mean_v = math.fsum(values) / n
    x = [t - mean_t for t in hours]
    sxx = math.fsum(a * a for a in x)
    quarter = max(1, n // 4)
    floor_rise = min(values[-quarter:]) - min(values[:quarter])
    shape = (n, values[0], values[-1], min(values), max(values))
    if n < MIN_SAMPLES or sxx == 0.0:
        nan = math.nan
        return Trend(*shape, nan, nan, 0.0, floor_rise, bound_per_h, "too few samples")
    slope = math.fsum(a * (v - mean_v) for a, v in zip(x, values, strict=True)) / sxx
    residuals = [v - mean_v - slope * a for a, v in zip(x, values, strict=True)]
    ssr = math.fsum(e * e for e in residuals)
    lagged = math.fsum(a * b for a, b in itertools.pairwise(residuals))
    r = lagged / ssr if ssr > 0.0 else 0.0
    se = newey_west_se(x, residuals, sxx)
    verdict = _judge(slope, se, floor_rise, bound_per_h)
    return Trend(*shape, slope, se, r, floor_rise, bound_per_h, verdict)
