"""The daemon process of a soak: `accelopt daemon`'s own service, with its clock sped up.

`accelopt daemon` exposes only the re-verification period (`--reverify-hours`); its rescan
(every minute), snapshots (hourly) and WAL checkpoints (every ten minutes) are fixed
`DaemonOptions`, so a run of minutes would never see most of them. This entry point builds
the same `Daemon` from the same settings, logging and options as the command does, with every
clock period given, and nothing else different: the main loop, watcher, workers, searches,
sandbox and drain are the command's. Its argument is one JSON object (`LaunchPlan`).
"""

from __future__ import annotations

import sys
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from agents.config import SearchConfig
from daemon.logs import configure_logging
from daemon.secrets import scrubber_for
from daemon.service import Daemon, DaemonOptions
from daemon.settings import Settings
from events.errors import AccelOptError
from nkibench.errors import NkiBenchError

__all__ = ["PROGRAM", "LaunchPlan", "main"]

PROGRAM = [sys.executable, "-c", "from daemon.soak.launch import main; main()"]


class LaunchPlan(BaseModel):
    """What the soak asks of its daemon; periods in seconds of wall time."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    watch: Path
    shapes: str = "small"
    devices: list[str] = ["0"]
    search: SearchConfig
    rescan_s: float
    reverify_s: float
    snapshot_s: float
    checkpoint_s: float

    def options(self) -> DaemonOptions:
        return DaemonOptions(
            watch=self.watch,
            backend="nkisim",
            devices=list(self.devices),
            shapes=self.shapes,
            search=self.search,
            rescan_s=self.rescan_s,
            reverify_s=self.reverify_s,
            snapshot_s=self.snapshot_s,
            checkpoint_s=self.checkpoint_s,
        )


def main(argv: list[str] | None = None) -> None:
    """Run the daemon of the plan in argv[1]; exit with its status, as `accelopt daemon`."""
    plan = LaunchPlan.model_validate_json((argv or sys.argv)[1])
    try:
        settings = Settings.load()
        url = settings.database_url()
        configure_logging(level="info", scrubber=scrubber_for(settings, url))
        if url.startswith("sqlite:///"):
            Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        code = Daemon(settings, url, plan.options()).run()
    except (AccelOptError, NkiBenchError) as e:
        print(f"accelopt: error: {e.message}", file=sys.stderr)
        code = e.exit_code
    sys.exit(code)
