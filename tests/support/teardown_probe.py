"""A phase whose module asks its child to end without the interpreter's teardown, or not, as
the request says (nkibench.sandbox.child.SKIP_TEARDOWN); the teardown leaves a mark in the
folder TEARDOWN_MARKS names."""

from __future__ import annotations

import atexit
import os
import sys
from pathlib import Path
from typing import Any

TEARDOWN_MARKS = "ACCELOPT_TEARDOWN_MARKS"
SKIP_TEARDOWN = False


def _torn_down() -> None:
    (Path(os.environ[TEARDOWN_MARKS]) / "torn_down").write_text("yes")


def phase(request: dict[str, Any]) -> dict[str, Any]:
    # the module's attribute, as the child reads it once the result is written
    skip = bool(request["skip"])
    setattr(sys.modules[__name__], "SKIP_TEARDOWN", skip)  # noqa: B010
    atexit.register(_torn_down)
    print("written before the end", flush=False)
    return {"ok": True, "skip": skip}
