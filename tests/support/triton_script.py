"""Scripted LLM answers for the triton backend's end-to-end runs on a GPU (the GPU machine
reaches no real LLM): on the GPU suite's silu, a plan to change the block size, the kernel
with that block size, and a lesson; any other task gets its kernel back unchanged."""

from __future__ import annotations

import re

from nkibench.suites import GPU_SUITE as SUITE_GPU
from tests.support.llm_server import Reply, Request

BASELINE = (SUITE_GPU / "silu" / "kernel.py").read_text()
BLOCKS = {"PLAN-WIDE": "BLOCK = 8192", "PLAN-NARROW": "BLOCK = 512"}
PLANS = (
    "PLAN-WIDE: process 8192 elements per program (fewer, longer programs).",
    "PLAN-NARROW: process 512 elements per program (more programs in flight).",
)
LESSON = (
    "**Size the block to the memory system**\n\n"
    "An elementwise kernel is bound by HBM: the block size only changes how many programs "
    "are in flight.\n\n```python\nBLOCK = 4096\n```\n\n```python\nBLOCK = 8192\n```\n"
)
MODELS = {
    "ACCELOPT_PLANNER_MODEL": "planner-model",
    "ACCELOPT_EXECUTOR_MODEL": "executor-model",
    "ACCELOPT_SUMMARIZER_MODEL": "summarizer-model",
}


def _block_variant(block: str) -> str:
    match = re.search(r"^BLOCK = \d+$", BASELINE, re.M)
    assert match, "the suite's silu kernel has no module-level BLOCK"
    return BASELINE.replace(match.group(0), block)


def _kernel_in(prompt: str) -> str:
    match = re.search(r"Kernel:\n```python\n(.*?)```", prompt, re.S)
    assert match, "the prompt shows no kernel"
    return match.group(1)


def answer(request: Request) -> Reply:
    if request.model == "planner-model":
        silu = "torch.exp(-x)" in request.user
        return Reply(PLANS[(request.seed or 0) % 2] if silu else "PLAN-KEEP: keep it.")
    if request.model == "executor-model":
        for plan, block in BLOCKS.items():
            if plan in request.user:
                return Reply(f"```python\n{_block_variant(block)}```\n")
        return Reply(f"```python\n{_kernel_in(request.user)}```\n")
    if request.model == "summarizer-model":
        return Reply(LESSON)
    return Reply(status=404)
