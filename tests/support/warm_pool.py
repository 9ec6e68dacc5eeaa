"""One child asked of a fresh warm pool (nkibench.sandbox.warm), for tests of when a child
starts cold: skipped where this host cannot run warm processes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from nkibench.sandbox.isolation import Isolation, Mounts
from nkibench.sandbox.process import ChildOutcome, Limits, run_child
from nkibench.sandbox.warm import WarmPool


def child_of_a_fresh_pool(
    preload: tuple[str, ...],
    module: str,
    params: dict[str, Any],
    *,
    launcher: Sequence[str] = (),
) -> tuple[WarmPool, ChildOutcome]:
    """`module` run with `params` as a child of a pool whose zygote starts with `preload`
    (the pool, closed, and the child's outcome)."""
    isolation = Isolation.detect()
    if WarmPool.possible(isolation) is not None:
        pytest.skip("no warm processes here")
    pool = WarmPool(isolation, Mounts(), {}, preload)
    try:
        with pool.folders("session-") as folders:
            outcome = run_child(
                module,
                params,
                workdir=folders.fresh("work"),
                limits=Limits(timeout_s=60, memory_mb=None),
                isolation=isolation,
                warm=pool,
                launcher=launcher,
            )
    finally:
        pool.close()
    return pool, outcome
