"""What a task's name and its inputs' and outputs' names may be (a leaf module: the task's file
reader and its workloads' reader both check names, and neither imports the other's room)."""

from __future__ import annotations

import re

__all__ = ["TASK_NAME", "VALUE_NAME", "name_problem"]

TASK_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}")
"""A task name (fullmatch): ASCII letters, digits, `_`, `-` and `.`, not leading (no `..`,
no hidden file), at most 128 characters (FlashInfer-Bench's definition and solution names
run to 118). It names folders of the daemon's state (a path component: 255 bytes at most)."""

VALUE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
"""An input's or output's name (fullmatch): a Python identifier of at most 128 characters
(get_inputs()'s and forward()'s dict keys, task.toml's `[outputs.<name>]`)."""


def name_problem(name: str) -> str | None:
    """Why `name` cannot be a task's name, or None if it can."""
    if TASK_NAME.fullmatch(name):
        return None
    return (
        f"{name!r} is not a task name: use at most 128 ASCII letters, digits, `_`, `-` and `.` "
        "(not leading)"
    )
