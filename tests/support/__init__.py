"""What the tests share: factories of events, a real daemon process, a scripted
OpenAI-compatible server and its scripts, helpers for nkisim and Triton kernels, and the
paths of the test data."""

from pathlib import Path

from nkibench.sandbox.isolation import Isolation

__all__ = ["DATA", "PARSE_ISOLATION", "REPOSITORY"]

REPOSITORY = Path(__file__).parents[2]
DATA = REPOSITORY / "tests" / "data"
"""Planted kernels, golden events, the Neuron SDK's test double: data, not test code."""
PARSE_ISOLATION = Isolation.unsafe("the tests' parse children run only the trusted parser")
"""The parse child's sandbox in tests that do not test the sandbox (bubblewrap adds ~20 ms)."""
