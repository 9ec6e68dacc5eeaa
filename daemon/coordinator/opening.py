"""What `accelopt daemon` builds before its loop, once: the database taken (one daemon per
database, coordinator.lock) and migrated, the store with its scrubber, the sandbox, the
recorder, the LLM client (none when the agents are off), the backend on this host's devices,
and the job queue of its backend and target, and the FlashInfer Trace Apply folder where one
is asked for. The Daemon gets them built; a failure on the way releases the database before
it propagates."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from agents.ledger import Ledger
from agents.llm import LLMClient
from agents.search import IDLE
from daemon.backends import open_for_command
from daemon.coordinator.lock import DaemonLock
from daemon.coordinator.options import DaemonOptions
from daemon.secrets import scrubber_for
from daemon.settings import Settings
from nkibench.backend import OpenedBackend
from nkibench.backends import backend_info
from nkibench.sandbox.isolation import Isolation
from store.engine import make_engine
from store.jobs import open_queue, queue_name, spans_hosts
from store.jobs.base import JobQueue
from store.migrate import upgrade
from store.recorder import Recorder
from store.sql import SqlEventStore

if TYPE_CHECKING:
    from daemon.flashinfer.trace_folder import TraceFolder

__all__ = ["DaemonParts", "open_parts"]

log = structlog.get_logger("accelopt.daemon")
KEY_HINT = (
    "ACCELOPT_LLM_API_KEY stays readable in /proc/<pid>/environ for the daemon's whole life: "
    "put the key in a file named by ACCELOPT_LLM_API_KEY_FILE, or in the systemd credential "
    "llm_api_key (LoadCredential=)"
)


@dataclass(frozen=True)
class DaemonParts:
    """The daemon's collaborators, as Daemon.__init__ takes them."""

    store: SqlEventStore
    recorder: Recorder
    queue: JobQueue
    llm: LLMClient | None
    opened: OpenedBackend
    isolation: Isolation
    lock: DaemonLock
    trace_folder: TraceFolder | None


def open_parts(settings: Settings, database_url: str, options: DaemonOptions) -> DaemonParts:
    trace_folder = _trace_folder(options.flashinfer_trace)  # refused before the database is taken
    if options.standby:
        lock = DaemonLock.acquire_as_standby(database_url)
    else:
        lock = DaemonLock.acquire(database_url)
    try:
        engine = make_engine(database_url)
        try:
            upgrade(engine)
        finally:
            engine.dispose()
        store = SqlEventStore.open(database_url, scrubber=scrubber_for(settings, database_url))
        isolation = settings.isolation(allow_unsafe=options.unsafe_sandbox)
        if not isolation.contained:
            log.warning("NO OS SANDBOX: kernels run unconfined", sandbox=isolation.describe())
        recorder = Recorder(store, correlation_id=f"daemon:{platform.node()}:{os.getpid()}")
        llm = None
        if settings.agents_enabled:
            if settings.llm.api_key[1] == "environment":
                log.warning("the LLM API key is in the environment", hint=KEY_HINT)
            llm = LLMClient(
                settings.llm_config(), recorder, Ledger.from_store(store), settings.budget()
            )
        else:
            log.warning("agents idle", detail=IDLE)
        opened = _open_backend(options, store, isolation, settings)
        fleet = spans_hosts(store.engine)
        queue = open_queue(
            store.engine,
            queues=[queue_name(opened.name, opened.target)],
            give_up=settings.give_up(None if fleet else len(opened.devices)),
        )
        requeued = queue.requeue_running()
        if requeued:
            log.info("jobs requeued after an unclean stop", jobs=requeued)
    except BaseException:
        lock.release()
        raise
    return DaemonParts(store, recorder, queue, llm, opened, isolation, lock, trace_folder)


def _open_backend(
    options: DaemonOptions, store: SqlEventStore, isolation: Isolation, settings: Settings
) -> OpenedBackend:
    """The backend on the devices this daemon serves itself. A coordinator of workers serves
    none: it needs only the target its jobs are for and the dialects they run."""
    fleet = spans_hosts(store.engine)
    devices = options.devices if options.devices is not None else ([] if fleet else ["0"])
    if not devices and options.target is not None:
        info = backend_info(options.backend)
        return OpenedBackend(options.backend, options.target, frozenset(info.dialects))
    opened = open_for_command(
        options.backend,
        devices or ["0"],
        options.target,
        store,
        isolation=isolation,
        settings=settings,
        require_device=bool(devices),
    )
    return opened if devices else replace(opened, devices=[])


def _trace_folder(path: Path | None) -> TraceFolder | None:
    """The Trace Apply folder (--flashinfer-trace), which needs flashinfer_bench (and torch):
    imported only where one is asked for."""
    if path is None:
        return None
    from daemon.flashinfer.package import require  # noqa: PLC0415 - an optional extra

    require()
    from daemon.flashinfer.trace_folder import TraceFolder  # noqa: PLC0415 - imports torch

    return TraceFolder(path)
