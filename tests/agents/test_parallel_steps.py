"""A search's concurrent LLM steps: results in order, failures kept as values, a bug raised,
and a stop obeyed at once even while a call hangs, with no thread left to hold the process."""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from agents.llm import LLMError
from agents.search import Interrupted
from agents.search import steps as steps_module


def context(stop: threading.Event, width: int = 2) -> Any:
    """The two things _parallel reads of a search's context."""

    def check_stop() -> None:
        if stop.is_set():
            raise Interrupted("the daemon is stopping")

    return SimpleNamespace(
        check_stop=check_stop, client=SimpleNamespace(config=SimpleNamespace(max_concurrency=width))
    )


def test_results_come_back_in_order_with_failures_as_values() -> None:
    running, most = [0], [0]
    lock = threading.Lock()

    def step(n: int) -> Callable[[], int]:
        def run() -> int:
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            try:
                if n == 2:
                    raise LLMError(f"c{n}", "HTTP 500")
                threading.Event().wait(0.05)
                return n * 10
            finally:
                with lock:
                    running[0] -= 1

        return run

    results = steps_module._parallel(context(threading.Event()), [step(n) for n in range(5)])
    assert [r if isinstance(r, int) else type(r).__name__ for r in results] == [
        0,
        10,
        "LLMError",
        30,
        40,
    ]
    assert most[0] <= 2  # max_concurrency


def test_a_bug_in_a_step_is_raised_in_the_searchs_thread() -> None:
    def broken() -> int:
        raise KeyError("a bug")

    with pytest.raises(KeyError, match="a bug"):
        steps_module._parallel(context(threading.Event()), [lambda: 1, broken])


def test_a_stop_leaves_a_hanging_call_at_once_and_no_thread_holds_the_process() -> None:
    """(A planner call that trickled kept a SIGTERMed daemon alive until SIGKILL: the thread
    pool's workers are joined at interpreter exit.)"""
    stop, release = threading.Event(), threading.Event()

    def hangs() -> str:
        release.wait(120)
        return "too late"

    timer = threading.Timer(0.3, stop.set)
    timer.start()
    try:
        with pytest.raises(Interrupted):
            steps_module._parallel(context(stop), [hangs, hangs])
        left = [t for t in threading.enumerate() if t.name.startswith("llm-step")]
        assert left  # still waiting on their calls...
        assert all(t.daemon for t in left)  # ...on threads the interpreter does not wait for
    finally:
        release.set()
        timer.cancel()
