"""Sweeping a task's declared tunables without the LLM.

A tunable is a module-level constant of the kernel (`TILE = 512`) with its choices in
task.toml (`[tunables] TILE = [256, 512, 1024]`). Each variant changes one constant of the
given kernel to one other choice; the duplicate check drops variants seen before.

The kernel is an LLM's (the incumbent may be any candidate): its constants are found by the
parse child (nkibench.sandbox.parse_child), never by parsing it here, and the edit is done on
the text.
"""

from __future__ import annotations

from typing import Any

from nkibench.errors import PhaseFailure
from nkibench.sandbox.isolation import Isolation
from nkibench.sandbox.parse_child import assigned_constants

__all__ = ["variants"]


def variants(
    source: str, tunables: dict[str, list[Any]], *, isolation: Isolation
) -> list[tuple[str, Any, str]]:
    """(name, value, new source) for every other choice of every tunable the kernel defines."""
    try:
        constants = assigned_constants(source, sorted(tunables), isolation=isolation)
    except PhaseFailure:
        # a kernel over the size limit, or one the parser gives up on (CPython 3.11: 200,000
        # unary minuses, 200,000 `+` terms), has no variants; its own profile says why
        return []
    lines = source.splitlines(keepends=True)
    out = []
    for name in sorted(tunables):
        constant = constants.get(name)
        if constant is None or constant.line != constant.end_line or constant.line > len(lines):
            continue
        for value in tunables[name]:
            if constant.comparable and value == constant.value:
                continue
            line = lines[constant.line - 1]
            indent = line[: len(line) - len(line.lstrip())]
            changed = [*lines]
            changed[constant.line - 1] = f"{indent}{name} = {value!r}\n"
            out.append((name, value, "".join(changed)))
    return out
