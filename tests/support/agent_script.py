"""Scripted LLM answers for the agent tests, chosen by model name (then by the plan in the
prompt and the request's seed): on silu, a faster kernel, an incorrect one, a slower one and
an answer without code; on any other task, the kernel handed back unchanged."""

from __future__ import annotations

import re
import threading
from pathlib import Path

from nkibench.suites import NKI_LEGACY_SUITE as SUITE
from tests.support import DATA
from tests.support.llm_server import Reply, Request

KERNELS = DATA / "agent_kernels"
BASELINE = (SUITE / "silu" / "kernel.py").read_text()
FAST = (KERNELS / "silu_fast.py").read_text()


def variant(old: str, new: str) -> str:
    """The suite's silu kernel with one change."""
    assert BASELINE.count(old) == 1, old
    return BASELINE.replace(old, new)


WRONG = variant("y = nl.multiply(tile, r)", "y = nl.multiply(tile, e)")  # drops 1 / (1 + e)
SLOW = variant("cols = 1024", "cols = 128")  # eight times as many transfers
HANG = variant(
    "    for i in nl.affine_range", "    while True:\n        pass\n    for i in nl.affine_range"
)

MODELS = {
    "ACCELOPT_PLANNER_MODEL": "planner-model",
    "ACCELOPT_EXECUTOR_MODEL": "executor-model",
    "ACCELOPT_SUMMARIZER_MODEL": "summarizer-model",
}
PRICES = (
    '{"planner-model": {"prompt": 1.0, "completion": 2.0},'
    ' "executor-model": {"prompt": 3.0, "completion": 4.0},'
    ' "summarizer-model": {"prompt": 1.5, "completion": 2.5}}'
)
PLANS = (
    "PLAN-FAST: compute x * sigmoid(x) with one ScalarE activation instead of exp, add and "
    "reciprocal.",
    "PLAN-SLOW: use narrower tiles of 128 columns.",
)
FAST_LESSON = (
    "**Use one sigmoid activation instead of exp, add and reciprocal**\n\n"
    "ScalarE computes sigmoid in one instruction; VectorE's reciprocal costs 8 cycles per "
    "element.\n\n```python\nr = nisa.reciprocal(1 + exp(-x))\n```\n\n```python\n"
    "s = nisa.activation(op=nl.sigmoid, data=x)\n```\n"
)
WIDE_LESSON = (
    "**Keep tiles wide: narrow tiles multiply the DMA transfers**\n\n"
    "Each transfer pays a fixed cost; 128-column tiles need eight times as many.\n"
)


def llm_env(url: str) -> dict[str, str]:
    """A daemon's settings for the scripted LLM server at `url`."""
    return {
        "ACCELOPT_LLM_BASE_URL": url,
        "ACCELOPT_LLM_API_KEY": "test-key",
        "ACCELOPT_LLM_TIMEOUT_S": "5",
        "ACCELOPT_LLM_RETRY_BASE_S": "0.05",
        **MODELS,
    }


def tunable_silu(folder: Path) -> Path:
    """silu with its tile width as a module-level tunable, COLS, as a task folder in `folder`."""
    task = folder / "silu"
    task.mkdir()
    (task / "reference.py").write_text((SUITE / "silu" / "reference.py").read_text())
    kernel = BASELINE.replace("    cols = 1024\n", "    cols = COLS\n")
    kernel = kernel.replace("@nki.jit", "COLS = 1024\n\n\n@nki.jit")
    (task / "kernel.py").write_text(kernel)
    toml = (SUITE / "silu" / "task.toml").read_text()
    (task / "task.toml").write_text(toml + "\n[tunables]\nCOLS = [512, 1024, 2048]\n")
    return task


def fenced(code: str) -> str:
    return f"Here is the kernel.\n\n```python\n{code}```\n"


def kernel_in(prompt: str) -> str:
    match = re.search(r"Kernel:\n```python\n(.*?)```", prompt, re.S)
    assert match, "the prompt shows no kernel"
    return match.group(1)


def executor_answer(request: Request) -> Reply:
    seed = request.seed or 0
    if "PLAN-FAST" in request.user:
        return Reply(fenced(FAST if seed == 0 else WRONG))
    if "PLAN-SLOW" in request.user:
        return Reply(fenced(SLOW)) if seed == 0 else Reply("I would rather not write code.")
    return Reply(fenced(kernel_in(request.user)))


def summarizer_answer(request: Request) -> Reply:
    return Reply(FAST_LESSON if "nl.sigmoid" in request.user else WIDE_LESSON)


def answer(request: Request) -> Reply:
    """The happy script: every call answered at once."""
    if request.model == "planner-model":
        if "def forward(x):\n    return x / (1.0 + np.exp(-x))" in request.user:
            return Reply(PLANS[(request.seed or 0) % 2])
        return Reply("PLAN-KEEP: keep the kernel as it is.")
    if request.model == "executor-model":
        return executor_answer(request)
    if request.model == "summarizer-model":
        return summarizer_answer(request)
    return Reply(status=404)


class HeldExecutorCall:
    """`answer`, except that while armed the `nth` executor request is held past any timeout
    (a minute): the moment for a test to kill the process asking, mid-iteration."""

    def __init__(self, nth: int = 3) -> None:
        self.nth = nth
        self.held = threading.Event()
        self._guard = threading.Lock()
        self._armed = True
        self._executor_requests = 0

    def __call__(self, request: Request) -> Reply:
        if request.model == "executor-model":
            with self._guard:
                self._executor_requests += 1
                hold = self._armed and self._executor_requests == self.nth
            if hold:
                self.held.set()
                return Reply(text="never delivered", delay_s=60)
        return answer(request)

    def disarm(self) -> None:
        """From now on every request is answered (the resumed run's turn)."""
        with self._guard:
            self._armed = False
