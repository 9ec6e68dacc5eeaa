"""Whether flashinfer_bench is importable, and the message that says how to get it.

This module imports nothing heavy, so that the CLI can ask before it imports the modules
that use flashinfer_bench (they import it, and torch with it, at module level)."""

from __future__ import annotations

import importlib

from events.errors import AccelOptError

__all__ = ["FlashInferError", "FlashInferMissing", "require"]

INSTALL = "pip install 'accelopt[flashinfer]'"


class FlashInferError(AccelOptError):
    """A FlashInfer-Bench dataset or task that cannot be converted: the message names the file."""

    exit_code = 2


class FlashInferMissing(FlashInferError):
    """flashinfer_bench is not installed (it is an optional extra)."""


def require() -> None:
    """Raise FlashInferMissing, with the command that installs it, unless flashinfer_bench's
    schema models import."""
    try:
        importlib.import_module("flashinfer_bench.data")
    except ImportError as e:
        raise FlashInferMissing(
            f"this command reads and writes FlashInfer-Bench files with flashinfer_bench's own "
            f"models, which are not importable here ({e}); install them: {INSTALL}"
        ) from None
