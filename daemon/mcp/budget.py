"""Each MCP client's device time: at most `per_hour_s` device-seconds in any hour.

A call is admitted while the client's last hour holds less than the budget (what a job will
cost is unknown before it runs), and charged what its jobs took on their devices afterwards;
a refusal says when enough of the hour's charges will have aged out. The ledger lives in this
process: each `accelopt mcp` keeps its own clients' hours.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable

from daemon.mcp.errors import Refusal

__all__ = ["HOUR_S", "DeviceBudget"]

HOUR_S = 3600.0


class DeviceBudget:
    def __init__(self, per_hour_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_hour_s = per_hour_s
        self.clock = clock
        self._charges: dict[str, deque[tuple[float, float]]] = defaultdict(deque)
        """Client → (when, device-seconds) of its last hour, oldest first."""
        self._lock = threading.Lock()

    def used(self, client: str) -> float:
        with self._lock:
            return sum(seconds for _, seconds in self._recent(client))

    def admit(self, client: str) -> None:
        """Refusal `budget` if the client's last hour holds its whole budget."""
        with self._lock:
            charges = self._recent(client)
            over = sum(seconds for _, seconds in charges) - self.per_hour_s
            if over < 0:
                return
            retry = HOUR_S
            for at, seconds in charges:  # the hour must shed `over` and a little more
                over -= seconds
                if over < 0:
                    retry = at + HOUR_S - self.clock()
                    break
            raise Refusal(
                "budget",
                f"{client} used its {self.per_hour_s:g} device-seconds of the last hour "
                f"(ACCELOPT_MCP_DEVICE_S_PER_HOUR); come back in {retry:.0f} s",
                retry_after_s=max(retry, 0.0),
            )

    def charge(self, client: str, seconds: float) -> None:
        with self._lock:
            self._charges[client].append((self.clock(), max(seconds, 0.0)))

    def _recent(self, client: str) -> deque[tuple[float, float]]:
        charges = self._charges[client]
        while charges and charges[0][0] <= self.clock() - HOUR_S:
            charges.popleft()
        return charges
