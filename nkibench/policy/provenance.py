"""Where a number comes from: every constant cites its source, every result names the package
versions that produced it."""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version

__all__ = ["Sourced", "package_version"]


@dataclass(frozen=True)
class Sourced:
    """A number and where it comes from (a document, a measurement, or ASSUMPTION)."""

    value: float
    source: str


def package_version(name: str) -> str:
    """The installed version of a distribution, or "source checkout" for accelopt run from a
    checkout that was never installed, or "not installed"."""
    try:
        return version(name)
    except PackageNotFoundError:
        return "source checkout" if name == "accelopt" else "not installed"
