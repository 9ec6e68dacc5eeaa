"""The search's decisions, as pure functions of what was measured.

- The beam: elitist. The best kernel so far (the incumbent) always stays; the rest of the
  B places go to the fastest correct kernels among the beam and this iteration's candidates.
- The lessons (AccelOpt's rules): per (parent, plan), the fastest child if any is faster, else
  the slowest; positives above the threshold, best first, take at most half the places;
  negatives below 1/threshold, worst first, fill the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Measured", "Pair", "select_beam", "select_lessons"]


@dataclass(frozen=True)
class Measured:
    candidate_id: str
    latency_ms: float


@dataclass(frozen=True)
class Pair:
    """A child measured against its parent; speedup = parent latency / child latency."""

    parent: Measured
    child: Measured
    group: str
    """(parent, plan): the branch the child came from."""

    @property
    def speedup(self) -> float:
        return self.parent.latency_ms / self.child.latency_ms


def _key(m: Measured) -> tuple[float, str]:
    return (m.latency_ms, m.candidate_id)


def select_beam(
    incumbent: Measured, beam: list[Measured], new: list[Measured], width: int
) -> tuple[list[Measured], Measured]:
    """The next beam (incumbent first) and the incumbent."""
    pool = {m.candidate_id: m for m in [incumbent, *beam, *new]}
    ranked = sorted(pool.values(), key=_key)
    best = ranked[0] if _key(ranked[0]) < _key(incumbent) else incumbent
    others = [m for m in ranked if m.candidate_id != best.candidate_id]
    chosen = [best, *others[: width - 1]]
    return chosen, best


def select_lessons(
    pairs: list[Pair], *, limit: int, positive: float, negative: float
) -> list[Pair]:
    groups: dict[str, list[Pair]] = {}
    for pair in pairs:
        groups.setdefault(pair.group, []).append(pair)
    representatives = []
    for group in sorted(groups):
        members = sorted(groups[group], key=lambda p: (p.speedup, p.child.candidate_id))
        fastest, slowest = members[-1], members[0]
        if fastest.speedup > 1.0:
            representatives.append(fastest)
        elif slowest.speedup < 1.0:
            representatives.append(slowest)
    positives = sorted(
        (p for p in representatives if p.speedup > positive),
        key=lambda p: (-p.speedup, p.child.candidate_id),
    )[: limit // 2]
    negatives = sorted(
        (p for p in representatives if p.speedup < 1.0 / negative),
        key=lambda p: (p.speedup, p.child.candidate_id),
    )[: limit - len(positives)]
    return positives + negatives
