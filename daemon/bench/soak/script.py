"""What the scripted LLM answers during a soak: enough for every step of a search to run.

On SiLU (any copy: recognised by its reference), the planner proposes a faster plan and a
slower one; the executor carries them out on the kernel it is shown (so an edited revision
gets its own candidates), once right and once wrong (the wrong one goes to the fixer, which
repairs it); the summarizer turns the slow/fast pairs into lessons, so the memory fills and
kernels are promoted (and later re-verified by the clock). On any other task, the plan is to
keep the kernel and the executor hands it back with a variant line, so candidates are still
profiled. Every answer is a pure function of the request: the same search, the same answers.
"""

from __future__ import annotations

import re

from daemon.bench.scripted_llm import Reply, Request

__all__ = ["MODELS", "SILU_EDITS", "answer"]

MODELS = {
    "ACCELOPT_PLANNER_MODEL": "soak-planner",
    "ACCELOPT_EXECUTOR_MODEL": "soak-executor",
    "ACCELOPT_SUMMARIZER_MODEL": "soak-summarizer",
}
SILU_FORWARD = "return x / (1.0 + np.exp(-x))"
SLOW_DIVISION = """            # exp(-x) on ScalarE, then 1 + e, 1 / (1 + e) and x * that on VectorE
            e = nisa.activation(op=nl.exp, data=tile, scale=-1.0)
            d = nisa.tensor_scalar(data=e, op0=nl.add, operand0=1.0)
            r = nisa.reciprocal(d)
            y = nl.multiply(tile, r)
"""
ONE_SIGMOID = """            # sigmoid on ScalarE replaces exp, add and reciprocal
            s = nisa.activation(op=nl.sigmoid, data=tile)
            y = nl.multiply(tile, s)
"""
RIGHT, WRONG = "y = nl.multiply(tile, r)", "y = nl.multiply(tile, e)"  # wrong: drops 1 / (1 + e)
WIDE, NARROW = "cols = 1024", "cols = 128"  # narrow: eight times as many transfers
PLANS = (
    "PLAN-FAST: compute x * sigmoid(x) with one ScalarE activation instead of exp, add and "
    "reciprocal.",
    "PLAN-SLOW: use narrower tiles of 128 columns.",
)
FAST_LESSON = (
    "**Use one sigmoid activation instead of exp, add and reciprocal**\n\n"
    "ScalarE computes sigmoid in one instruction; VectorE's reciprocal costs 8 cycles per "
    "element.\n"
)
NARROW_LESSON = (
    "**Keep tiles wide: narrow tiles multiply the DMA transfers**\n\n"
    "Each transfer pays a fixed cost; 128-column tiles need eight times as many.\n"
)
SILU_EDITS = (SLOW_DIVISION, RIGHT, WIDE)
"""The lines of the suite's SiLU kernel that the answers replace (each must occur once)."""
VARIANT = re.compile(r"\n# soak: variant \d+\n")


def _fenced(code: str) -> Reply:
    return Reply(f"Here is the kernel.\n\n```python\n{code}```\n")


def _kernel_in(prompt: str) -> str:
    match = re.search(r"Kernel:\n```python\n(.*?)```", prompt, re.S)
    return match.group(1) if match else ""


def _executor(request: Request) -> Reply:
    kernel = _kernel_in(request.user)
    seed = request.seed or 0
    if "This kernel fails" in request.user:  # the fixer (the executor's model by default)
        return _fenced(kernel.replace(WRONG, RIGHT))
    if "PLAN-FAST" in request.user:
        fast = kernel.replace(SLOW_DIVISION, ONE_SIGMOID)
        return _fenced(fast if seed == 0 else kernel.replace(RIGHT, WRONG))
    if "PLAN-SLOW" in request.user:
        if seed != 0:
            return Reply("I would rather not write code.")  # an answer without code
        return _fenced(kernel.replace(WIDE, NARROW))
    return _fenced(VARIANT.sub("\n", kernel) + f"\n# soak: variant {seed}\n")


def answer(request: Request) -> Reply:
    """The soak's script: every call answered at once."""
    if request.model == MODELS["ACCELOPT_PLANNER_MODEL"]:
        if SILU_FORWARD in request.user:
            return Reply(PLANS[(request.seed or 0) % 2])
        return Reply("PLAN-KEEP: keep the kernel as it is.")
    if request.model == MODELS["ACCELOPT_EXECUTOR_MODEL"]:
        return _executor(request)
    if request.model == MODELS["ACCELOPT_SUMMARIZER_MODEL"]:
        return Reply(FAST_LESSON if "nl.sigmoid" in request.user else NARROW_LESSON)
    return Reply(status=404)
