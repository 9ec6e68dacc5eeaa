"""Small builders of typed events for tests."""

from __future__ import annotations

import uuid
from typing import Any

from events.catalog import (
    ExperienceSummarized,
    KernelDemoted,
    KernelPromoted,
    KernelRemoved,
    KernelSourceChanged,
    LLMCallCompleted,
    ProfileRecorded,
    SearchEnd,
    SearchFinished,
    SearchStarted,
    TaskInvalid,
)


def source_changed(task: str, content_hash: str) -> KernelSourceChanged:
    return KernelSourceChanged(
        task=task,
        task_dir=f"/kernels/{task}",
        content_hash=content_hash,
        files={"kernel.py": "k" + content_hash, "reference.py": "r" + content_hash},
        dialect="nki-legacy",
    )


def invalid(task: str, content_hash: str, message: str = "SyntaxError") -> TaskInvalid:
    return TaskInvalid(
        task=task,
        task_dir=f"/kernels/{task}",
        content_hash=content_hash,
        file="kernel.py",
        message=message,
    )


def removed(task: str) -> KernelRemoved:
    return KernelRemoved(task=task, task_dir=f"/kernels/{task}")


def profile(
    task: str,
    source_hash: str,
    *,
    purpose: str = "baseline",
    latency_ms: float | None = 1.0,
    candidate_id: str | None = None,
    backend: str = "nkisim",
    target: str = "trn1",
    job_id: str | None = None,
    **extra: Any,
) -> ProfileRecorded:
    correct = latency_ms is not None
    return ProfileRecorded.model_validate(
        {
            "job_id": job_id or str(uuid.uuid4()),
            "task": task,
            "purpose": purpose,
            "candidate_id": candidate_id,
            "kernel_hash": "kh-" + (candidate_id or source_hash),
            "task_source_hash": source_hash,
            "backend": backend,
            "target": target,
            "dialect": "nki-legacy",
            "compiled": True,
            "correct": correct,
            "error_kind": None if correct else "incorrect",
            "error_message": None if correct else "max relative error 0.3",
            "latency_ms": latency_ms,
            "latency_kind": ("estimated" if backend == "nkisim" else "measured")
            if correct
            else None,
            "model_version": "trn-cost-1" if backend == "nkisim" else None,
            "pct_of_peak": None,
            "roofline_ms": None,
            "bound_by": None,
            "hot_lines": [],
            "estimate_ms": None,
            **extra,
        }
    )


def promoted(
    task: str, source_hash: str, candidate_id: str, latency_ms: float, baseline_ms: float
) -> KernelPromoted:
    return KernelPromoted(
        task=task,
        candidate_id=candidate_id,
        kernel_hash="kh-" + candidate_id,
        task_source_hash=source_hash,
        backend="nkisim",
        target="trn1",
        latency_ms=latency_ms,
        latency_kind="estimated",
        baseline_latency_ms=baseline_ms,
        speedup=baseline_ms / latency_ms,
    )


def demoted(task: str, candidate_id: str) -> KernelDemoted:
    return KernelDemoted(
        task=task,
        candidate_id=candidate_id,
        backend="nkisim",
        target="trn1",
        reason="re-verification failed: max relative error 0.2",
    )


def llm_call(task: str = "t") -> LLMCallCompleted:
    return LLMCallCompleted(
        call_id=str(uuid.uuid4()),
        role="planner",
        model="gpt-oss-120b",
        base_url="http://127.0.0.1:1/v1",
        parameters={"temperature": 1.0},
        prompt_blob="p" * 64,
        response_blob="r" * 64,
        prompt_tokens=10,
        completion_tokens=5,
        latency_s=0.5,
        cost_usd=0.0,
        task=task,
    )


def started(task: str, revision: str, search: str, *, agents: bool = True) -> SearchStarted:
    return SearchStarted(
        task=task,
        search_id=search,
        task_source_hash=revision,
        baseline_candidate_id=f"{search}-base",
        backend="nkisim",
        target="trn1",
        shapes="full",
        settings={"beam": 2},
        models={"planner": "m"} if agents else {},
    )


def finished(
    task: str, search: str, reason: SearchEnd = "plateau", best_ms: float | None = 0.5
) -> SearchFinished:
    return SearchFinished(
        task=task,
        search_id=search,
        reason=reason,
        detail="",
        iterations=2,
        best_candidate_id="c1" if best_ms else None,
        best_latency_ms=best_ms,
        latency_kind="estimated" if best_ms else None,
    )


def lesson(
    item: str,
    task: str,
    speedup: float,
    *,
    target: str = "trn1",
    search: str | None = None,
    title: str = "Hoist loads",
) -> ExperienceSummarized:
    return ExperienceSummarized(
        task=task,
        search_id=search or f"{task}@1",
        operators=["exp"],
        item_id=item,
        polarity="positive" if speedup > 1 else "negative",
        slow_candidate_id="s",
        fast_candidate_id="f",
        speedup=speedup,
        title=title,
        summary_blob="0" * 64,
        llm_call_id="call-" + item,
        model="m",
        backend="nkisim",
        target=target,
        dialect="nki-legacy",
    )
