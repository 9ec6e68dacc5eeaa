"""A worker's device pool: one job per device, a device that keeps failing is quarantined
with an event and tried again later, a kernel's own failure never counts against a device."""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import pytest

from daemon.workers.devices import DevicePool
from events.catalog import DeviceQuarantined, DeviceRestored
from store.jobs.base import Handler, Job, JobCancelled
from store.memory import MemoryEventStore
from store.recorder import Recorder


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def job(n: int = 0) -> Job:
    return Job(f"j{n}", "silu", "profile", {}, 0.0, "running", None, 1, None)


def broken(job: Job) -> dict[str, Any]:
    raise RuntimeError("the NeuronCore did not answer")


def works(job: Job) -> dict[str, Any]:
    return {"error_kind": None}


def incorrect(job: Job) -> dict[str, Any]:
    return {"error_kind": "incorrect", "message": "outputs differ"}


def untimed(job: Job) -> dict[str, Any]:
    return {"error_kind": "measurement", "message": "the profiler failed"}


def pool_of(*handlers: Handler, clock: Clock) -> tuple[DevicePool, MemoryEventStore]:
    store = MemoryEventStore()
    pool = DevicePool(
        [(f"h/{n}", handler) for n, handler in enumerate(handlers)],
        recorder=Recorder(store),
        stop=threading.Event(),
        quarantine_after=2,
        quarantine_s=60.0,
        clock=clock,
    )
    return pool, store


def run_on_first_free(pool: DevicePool) -> str:
    with pool.lease() as (name, handler):
        with contextlib.suppress(RuntimeError):
            handler(job())
        return name


def test_a_device_failing_in_a_row_is_quarantined_then_tried_again() -> None:
    clock = Clock()
    pool, store = pool_of(broken, works, clock=clock)
    assert run_on_first_free(pool) == "h/0"
    assert pool.quarantined() == []
    assert run_on_first_free(pool) == "h/0"
    assert pool.quarantined() == ["h/0"]
    (quarantined,) = Recorder(store).events("fleet:h/0")
    assert isinstance(quarantined, DeviceQuarantined)
    assert (quarantined.failures, quarantined.quarantine_s) == (2, 60.0)
    assert "the NeuronCore did not answer" in quarantined.last_error
    assert [run_on_first_free(pool) for _ in range(3)] == ["h/1"] * 3  # its jobs go elsewhere
    clock.now += 61
    assert run_on_first_free(pool) == "h/0"
    assert isinstance(Recorder(store).events("fleet:h/0")[-1], DeviceRestored)


def test_a_kernel_failing_is_not_the_device_failing_but_failed_timing_is() -> None:
    clock = Clock()
    incorrect_pool, _ = pool_of(incorrect, clock=clock)
    for _ in range(5):
        run_on_first_free(incorrect_pool)
    assert incorrect_pool.quarantined() == []
    untimed_pool, _ = pool_of(untimed, clock=clock)
    for _ in range(2):
        run_on_first_free(untimed_pool)
    assert untimed_pool.quarantined() == ["h/0"]


def test_a_success_resets_the_count() -> None:
    clock = Clock()
    outcomes = iter([broken, works, broken, works])

    def alternating(job: Job) -> dict[str, Any]:
        return next(outcomes)(job)

    pool, _ = pool_of(alternating, clock=clock)
    for _ in range(4):
        run_on_first_free(pool)
    assert pool.quarantined() == []


def test_a_held_device_is_not_handed_out_twice_and_a_stop_releases_the_waiter() -> None:
    clock = Clock()
    pool, _ = pool_of(works, clock=clock)
    waited: list[BaseException] = []
    with pool.lease() as (name, _handler):
        assert name == "h/0"

        def wait_for_a_device() -> None:
            try:
                with pool.lease():
                    pytest.fail("a held device was handed out again")
            except JobCancelled as e:
                waited.append(e)

        waiter = threading.Thread(target=wait_for_a_device)
        waiter.start()
        waiter.join(0.3)
        assert waiter.is_alive()  # waits for the device
        pool.stop.set()
        waiter.join(5)
    assert not waiter.is_alive()
    assert len(waited) == 1
