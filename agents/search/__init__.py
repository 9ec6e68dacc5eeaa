"""The beam search of AccelOpt, recorded step by step (see loop.py)."""

from agents.search.loop import IDLE, Interrupted, Search
from agents.search.outcome import SearchOutcome
from agents.search.profiling import Profiler
from agents.search.steps import LLMUnavailable

__all__ = ["IDLE", "Interrupted", "LLMUnavailable", "Profiler", "Search", "SearchOutcome"]
