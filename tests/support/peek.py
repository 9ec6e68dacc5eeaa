"""A phase function for the sandbox tests: what a child running kernel code can see of its
session (run by nkibench.sandbox.child like any phase)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _try(action: Any) -> str:
    try:
        action()
    except OSError as e:
        return f"refused: {type(e).__name__}"
    return "done"


def peek_phase(request: dict[str, Any]) -> dict[str, Any]:
    data, out = Path(request["data_dir"]), Path(request["out_dir"])
    expected = Path(request["expected_file"])
    return {
        "ok": True,
        "read_input": _try((data / "seed_0" / "input_0.npy").read_bytes),
        "write_input": _try(lambda: (data / "seed_0" / "input_0.npy").write_bytes(b"0")),
        "read_expected": _try(expected.read_bytes),
        "list_expected": _try(lambda: list(expected.parent.iterdir())),
        "write_output": _try(lambda: (out / "seed_0").mkdir(parents=True)),
    }
