"""What `accelopt daemon` is told: the folder it watches, its backend and devices, the
paces of its main loop and clock, its limits. Read by the daemon (coordinator.service), its
search launcher (coordinator.searches) and its clock (coordinator.clock)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agents.config import SearchConfig
from daemon.coordinator.watcher import ObserverKind

__all__ = ["DaemonOptions"]


@dataclass
class DaemonOptions:
    watch: Path
    backend: str = "nkisim"
    devices: list[str] | None = None
    """This host's devices the daemon serves itself (nkisim: CPU workers; neuron: NeuronCores).
    None: device 0 on SQLite; none on PostgreSQL, where `accelopt worker`s run the jobs."""
    target: str | None = None
    shapes: str = "full"
    observer: ObserverKind = "auto"
    search: SearchConfig = field(default_factory=SearchConfig)
    max_searches: int | None = None
    """Searches at once (default: one more than the workers, so devices never wait)."""
    rest_s: float = 6 * 3600
    """How long a plateaued task rests before another search."""
    rescan_s: float = 60.0
    reverify_s: float = 24 * 3600
    snapshot_s: float = 3600.0
    snapshots_kept: int = 24
    """Per projection, the newest snapshots kept (replays "as of" older positions start from
    the newest snapshot before them, or from the start of the log)."""
    jobs_kept_s: float = 7 * 86400
    """How long a finished job's result is kept (a search resuming after a stop takes it
    instead of profiling again; one stopped longer profiles again)."""
    revisions_kept_s: float = 7 * 86400
    """How long a copy of a revision no longer current stays after its last use
    (daemon.revisions.prune_copies)."""
    checkpoint_s: float = 600.0
    tick_s: float = 1.0
    """The main loop's pace when nothing wakes it (new folders and finished searches do)."""
    status_s: float = 10.0
    unsafe_sandbox: bool = False
    """Run kernels without bubblewrap where it cannot run (said loudly) instead of refusing."""
    store_patience_s: float = 300.0
    """How long a failing database is waited out before the daemon stops (exit 1)."""
    max_resident_mb: float | None = 2048.0
    """The daemon's own resident memory (its kernels' processes apart) past which it drains and
    exits with RECYCLE_EXIT, for its supervisor to start a fresh one that resumes from the log:
    memory a long-lived CPython process once held is not always given back. None: no ceiling."""
    standby: bool = False
    """Wait for the daemon holding the (PostgreSQL) database to go, then take over."""
    cooldown_s: float = 60.0
    """How long a task whose search crashed waits before the next."""
    http: tuple[str, int] | None = None
    """Where to serve the live pages (checked by daemon.views.web.server.parse_bind), or nowhere."""
    flashinfer_trace: Path | None = None
    """A path kept as FlashInfer's Trace Apply folder of the promoted kernels of the tasks
    imported from FlashInfer-Bench (daemon.flashinfer.trace_folder), or none."""
