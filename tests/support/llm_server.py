"""The scripted OpenAI-compatible server the tests use; it lives in the package
(`daemon/bench/scripted_llm.py`) because `accelopt bench soak` needs it too."""

from daemon.bench.scripted_llm import Reply, Request, ScriptedLLM, running_llm, usage

__all__ = ["Reply", "Request", "ScriptedLLM", "running_llm", "usage"]
