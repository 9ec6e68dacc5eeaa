"""What the tests share: factories of events, a real daemon process, a scripted
OpenAI-compatible server and its scripts, helpers for nkisim and Triton kernels, and the
paths of the test data."""

from pathlib import Path

__all__ = ["DATA", "REPOSITORY"]

REPOSITORY = Path(__file__).parents[2]
DATA = REPOSITORY / "tests" / "data"
"""Planted kernels, golden events, the Neuron SDK's test double: data, not test code."""
