"""Where a number comes from: every constant cites its source, every result names the package
versions that produced it."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Sourced", "package_version"]


@dataclass(frozen=True)
class Sourced:
    """A number and where it comes from (a document, a measurement, or ASSUMPTION)."""

    value: float
    source: str


def package_version(name: str) -> str:
    """The installed version of a distribution, or "source checkout" for accelopt run from a
    checkout that was never installed, or "not installed"."""
    # imported here: importlib.metadata takes about 50 ms to import, and every parse child
    # (nkibench.sandbox.parse_child) loads this module through the dialects, never calling this
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    try:
        return version(name)
    except PackageNotFoundError:
        return "source checkout" if name == "accelopt" else "not installed"
