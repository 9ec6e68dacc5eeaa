"""A phase for the tests of children started ahead of their work (nkibench.sandbox.ahead):
importing this module leaves a mark in the folder AHEAD_MARKS names, and running the phase
leaves another, so a test sees what the child did before it had its request."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

AHEAD_MARKS = "ACCELOPT_AHEAD_MARKS"
IMPORTED_AT = time.monotonic()  # one clock for every process of the host
_marks = os.environ.get(AHEAD_MARKS)
if _marks:
    (Path(_marks) / "imported").write_text(str(IMPORTED_AT))


def phase(request: dict[str, Any]) -> dict[str, Any]:
    ran_at = time.monotonic()
    if _marks:
        (Path(_marks) / "ran").write_text(str(ran_at))
    while request.get("hang"):
        time.sleep(1)
    return {"ok": True, "x": request.get("x"), "imported_at": IMPORTED_AT, "ran_at": ran_at}
