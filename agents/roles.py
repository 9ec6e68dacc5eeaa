"""What each role is asked, and how its answer is read.

- planner: kernel, task, profile, memory -> one plan (its text)
- executor: kernel, task, plan -> a new kernel (the first fenced code block)
- summarizer: slow kernel, fast kernel, speedup -> a titled, general lesson
- fixer: failing kernel and its error -> a repaired kernel (the first fenced code block)
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from agents.prompts import Prompts
from nkibench.task.spec import defined_function, with_imports_of

__all__ = [
    "NO_OPTIMIZATION",
    "Lesson",
    "NoCode",
    "executor_messages",
    "extract_code",
    "fixer_messages",
    "parse_lesson",
    "planner_messages",
    "says_no_optimization",
    "summarizer_messages",
]

NO_OPTIMIZATION = "No optimization found"
"""The summarizer's answer when the two kernels do the same thing (its prompt says so); a
lesson with this title teaches nothing, and the memory ignores it."""
FENCE = "```"
OPENING = re.compile(r"```[ \t]*+[\w+-]*+[ \t]*+\n")
r"""A code block's opening line: a fence, then a language name (or none) between spaces or
tabs. Linear: every quantifier is possessive, so a failed try gives back nothing to read
again (the backtracking `[ \t]*[\w+-]*[ \t]*\n` took quadratic time over a fence followed by
a long run of spaces), and a try reads past its fence only characters that are never a
backtick, so the tries at successive fences never read the same character."""


class NoCode(ValueError):
    """The answer holds no usable code block; `reason` is "no_code" or "truncated"."""

    def __init__(self, reason: Literal["no_code", "truncated"], message: str) -> None:
        super().__init__(message)
        self.reason, self.message = reason, message


def extract_code(
    text: str,
    finish_reason: str,
    parent_source: str,
    functions: tuple[str, ...] = ("kernel", "optimized_kernel"),
) -> str:
    """The first fenced code block, completed with the parent's imports if it has none; it
    must define one of `functions` (the task's entry points: `kernel`, or Triton's `run`)."""
    opening = OPENING.search(text)
    if opening is None:
        if finish_reason == "length":
            raise NoCode("truncated", "the answer was cut at the token limit before any code")
        raise NoCode("no_code", "the answer has no fenced code block")
    start = opening.end()
    end = text.find("\n" + FENCE, start)
    if end == -1:
        raise NoCode(
            "truncated",
            "the code block is not closed"
            + (" (the answer hit the token limit)" if finish_reason == "length" else ""),
        )
    code = text[start:end].strip("\n") + "\n"
    if defined_function(code, functions) is None:
        raise NoCode("no_code", f"the code block defines no function named `{functions[0]}`")
    return with_imports_of(code, parent_source)


@dataclass(frozen=True)
class Lesson:
    title: str
    summary: str

    @property
    def empty(self) -> bool:
        return says_no_optimization(self.title)


def says_no_optimization(title: str) -> bool:
    """Whether a lesson's title is the summarizer's "nothing to learn" (any case, with or
    without a full stop)."""
    return title.strip().rstrip(".").lower() == NO_OPTIMIZATION.lower()


def parse_lesson(text: str) -> Lesson:
    """A `**title**` line (else the first line) and the whole answer as the summary."""
    title = _bold_line(text)
    if title is None:
        title = next(filter(str.strip, text.splitlines()), "").strip("# *")
    return Lesson(title=title[:200] or NO_OPTIMIZATION, summary=text.strip())


def _bold_line(text: str) -> str | None:
    r"""The inside of the first line that is `**...**` alone (spaces around it aside), as
    the regex `^\s*\*\*(.+?)\*\*\s*$` (re.M) found it, in linear time: each line is read
    once. That regex took quadratic time: at every line start `^\s*` ran over all the
    whitespace after it before failing, and 100,000 newlines from the summarizer held the
    interpreter's lock for 15 s (300,000 for two minutes)."""
    for line in text.split("\n"):  # `^` and `$` of re.M: only "\n" ends a line
        bare = line.strip()
        if len(bare) > len("****") and bare.startswith("**") and bare.endswith("**"):
            return bare[2:-2].strip()
    return None


def experiences_block(items: list[tuple[str, str]]) -> str:
    """The memory as the planner sees it: each lesson's summary under a heading."""
    if not items:
        return ""
    lessons = "\n\n".join(summary for _, summary in items)
    return f"\n# Experiences\n\nLessons from earlier optimizations:\n\n{lessons}\n"


def profile_json(profile: dict[str, Any]) -> str:
    return json.dumps(profile, indent=2, sort_keys=True)


def planner_messages(
    prompts: Prompts,
    *,
    kernel: str,
    reference: str,
    profile: dict[str, Any],
    experiences: list[tuple[str, str]],
) -> list[dict[str, str]]:
    return prompts.messages(
        "planner",
        experiences=experiences_block(experiences),
        reference=reference.strip(),
        kernel=kernel.strip(),
        profile=profile_json(profile),
    )


def executor_messages(
    prompts: Prompts, *, kernel: str, reference: str, plan: str
) -> list[dict[str, str]]:
    return prompts.messages(
        "executor", reference=reference.strip(), kernel=kernel.strip(), plan=plan.strip()
    )


def summarizer_messages(
    prompts: Prompts,
    *,
    reference: str,
    slow_kernel: str,
    fast_kernel: str,
    speedup: float,
    latency_kind: str,
) -> list[dict[str, str]]:
    return prompts.messages(
        "summarizer",
        reference=reference.strip(),
        slow_kernel=slow_kernel.strip(),
        fast_kernel=fast_kernel.strip(),
        speedup=f"{speedup:.2f}",
        latency_kind=latency_kind,
    )


def fixer_messages(
    prompts: Prompts, *, kernel: str, reference: str, error_kind: str, error: str
) -> list[dict[str, str]]:
    return prompts.messages(
        "fixer",
        reference=reference.strip(),
        kernel=kernel.strip(),
        error_kind=error_kind,
        error=error.strip(),
    )
