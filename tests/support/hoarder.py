"""A kernel phase for the resource tests: the real nkisim kernel phase, with the kernel's run
first writing up to 3 GiB where ACCELOPT_TEST_HOARD says (`/tmp`, or `work`: the working
folder), as code that got past every Python-level layer could. The writes happen inside the
kernel's run, so what they run into is reported as the kernel phase reports any failure."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from nkibench.backends.nkisim import phases
from nkibench.nkisim import runtime

HOARD = "ACCELOPT_TEST_HOARD"
CHUNK = b"\xa5" * (64 * 1024 * 1024)
"""One write; each file holds one, under any file-size limit."""
TOTAL = 3 * 1024**3


def _hoard(folder: Path) -> None:
    for number in range(TOTAL // len(CHUNK)):
        with (folder / f"hoard_{number}.bin").open("wb") as file:
            file.write(CHUNK)


def kernel_phase(request: dict[str, Any]) -> dict[str, Any]:
    where = os.environ[HOARD]
    honest = runtime.execute

    def hoarding(*args: Any, **options: Any) -> Any:
        _hoard(Path("/tmp") if where == "/tmp" else Path.cwd())
        return honest(*args, **options)

    # the name the kernel phase calls (imported into its module)
    phases.execute = hoarding  # type: ignore[attr-defined]
    return phases.kernel_phase(request)


def write_phase(request: dict[str, Any]) -> dict[str, Any]:
    """A child that writes request["own_mb"] MiB into its working folder and request["mb"] MiB
    into request["into"] (8 MiB files), then ends."""
    block = b"\x5a" * (8 * 1024 * 1024)
    for folder, mb in (
        (Path.cwd(), request.get("own_mb", 0)),
        (Path(request["into"]), request["mb"]),
    ):
        for number in range(mb // 8):
            (folder / f"written_{number}.bin").write_bytes(block)
    return {"ok": True}
