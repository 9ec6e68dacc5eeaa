"""The churn a team's kernel directory sees, from a seed: folders dropped, edited, broken,
fixed and removed.

Two halves, so that the plan can be tested without a daemon or a disk: `churn_plan` is a pure
function of a seed that returns timed actions (the same seed, the same plan, on any machine),
and `ChurnApplier` carries them out on a directory.

The actions touch a fixed set of slots (task folders), as a team keeps a bounded set of
kernels: the daemon's state per task is then bounded too, so memory that keeps growing over
the run is a leak, not more tasks. Every edit appends a line naming its action, so each save
is a new revision (a new baseline and search); a fix puts back exactly what the break
replaced, as an editor's undo does, and a drop copies the suite's task as it is, so a folder
also returns to contents the daemon has seen before.
"""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from nkibench.task.files import KERNEL_FILE, REFERENCE_FILE, TOML_FILE

__all__ = [
    "Action",
    "ActionKind",
    "Breakage",
    "ChurnApplier",
    "SlotState",
    "churn_plan",
]

ActionKind = Literal[
    "drop", "drop_broken", "edit_in_place", "edit_atomic", "break", "fix", "remove"
]
Breakage = Literal["bad_toml", "no_reference", "syntax_error", "not_utf8"]
BREAKAGES: tuple[Breakage, ...] = get_args(Breakage)
SlotState = Literal["absent", "valid", "broken"]

WEIGHTS: dict[SlotState, dict[ActionKind, float]] = {
    "absent": {"drop": 3.0, "drop_broken": 1.0},
    "valid": {"edit_in_place": 3.0, "edit_atomic": 3.0, "break": 1.0, "remove": 1.0},
    "broken": {"fix": 3.0, "remove": 1.0},
}
"""What may happen to a slot in each state, and how often: mostly edits, as in a team's
directory; a break is mostly fixed, sometimes given up on (removed)."""
AFTER: dict[ActionKind, SlotState] = {
    "drop": "valid",
    "drop_broken": "broken",
    "edit_in_place": "valid",
    "edit_atomic": "valid",
    "break": "broken",
    "fix": "valid",
    "remove": "absent",
}


@dataclass(frozen=True)
class Action:
    serial: int
    """Its place in the plan; edits write it into the kernel, so each edit is new content."""
    at_s: float
    """Seconds after the churn starts."""
    kind: ActionKind
    slot: str
    task: str | None = None
    """The suite task a drop copies."""
    breakage: Breakage | None = None
    """How a break (or a broken drop) breaks the folder."""


def churn_plan(
    seed: int,
    *,
    duration_s: float,
    mean_interval_s: float,
    slots: int,
    tasks: Sequence[str],
    task_weights: Sequence[float] | None = None,
) -> list[Action]:
    """The actions of a churn of `duration_s` seconds: first half the slots filled (a team's
    directory is not empty), then one action every `mean_interval_s` on average (Poisson
    arrivals), each on a slot chosen at random and allowed by the slot's state."""
    if slots < 1 or not tasks:
        raise ValueError("a churn needs at least one slot and one task")
    rng = random.Random(seed)
    names = [f"slot{i}" for i in range(slots)]
    state: dict[str, SlotState] = dict.fromkeys(names, "absent")
    actions: list[Action] = []

    def add(at_s: float, kind: ActionKind, slot: str) -> None:
        task = rng.choices(tasks, task_weights)[0] if kind.startswith("drop") else None
        broken = rng.choice(BREAKAGES) if kind in ("drop_broken", "break") else None
        actions.append(Action(len(actions), round(at_s, 3), kind, slot, task, broken))
        state[slot] = AFTER[kind]

    for i, slot in enumerate(names[: max(1, slots // 2)]):
        add(0.5 * i, "drop", slot)
    at_s = actions[-1].at_s
    while True:
        at_s += rng.expovariate(1.0 / mean_interval_s)
        if at_s >= duration_s:
            return actions
        slot = rng.choice(names)
        choices = WEIGHTS[state[slot]]
        kind = rng.choices(list(choices), list(choices.values()))[0]
        add(at_s, kind, slot)


class ChurnApplier:
    """Carries out a plan's actions on the watched directory, as people and tools do: drops
    by an atomic rename from a staging directory (a deployment tool), edits in place or by
    writing a temporary file and renaming it over the kernel (an editor's atomic save)."""

    def __init__(self, watch: Path, staging: Path, suite: Path) -> None:
        self.watch = watch
        self.staging = staging
        self.suite = suite
        self.undo: dict[str, tuple[str, bytes | None]] = {}
        """Slot → the file a break changed and its contents before (None: it did not exist)."""

    def apply(self, action: Action) -> None:
        folder = self.watch / action.slot
        if action.kind in ("drop", "drop_broken"):
            assert action.task is not None
            staged = self.staging / action.slot
            shutil.rmtree(staged, ignore_errors=True)
            shutil.copytree(self.suite / action.task, staged)
            if action.breakage is not None:
                self._break(action.slot, staged, action.breakage)
            os.rename(staged, folder)
        elif action.kind == "edit_in_place":
            with (folder / KERNEL_FILE).open("a", encoding="utf-8") as handle:
                handle.write(f"\n# soak: in-place edit {action.serial}\n")
        elif action.kind == "edit_atomic":
            kernel = folder / KERNEL_FILE
            temporary = folder / f".{KERNEL_FILE}.soak.tmp"
            temporary.write_bytes(
                kernel.read_bytes() + f"\n# soak: atomic save {action.serial}\n".encode()
            )
            os.replace(temporary, kernel)
        elif action.kind == "break":
            assert action.breakage is not None
            self._break(action.slot, folder, action.breakage)
        elif action.kind == "fix":
            name, before = self.undo.pop(action.slot)
            if before is None:
                (folder / name).unlink(missing_ok=True)
            else:
                (folder / name).write_bytes(before)
        elif action.kind == "remove":
            self.undo.pop(action.slot, None)
            shutil.rmtree(folder)

    def _break(self, slot: str, folder: Path, breakage: Breakage) -> None:
        name = {"bad_toml": TOML_FILE, "no_reference": REFERENCE_FILE}.get(breakage, KERNEL_FILE)
        path = folder / name
        before = path.read_bytes() if path.is_file() else None
        self.undo[slot] = (name, before)
        if breakage == "bad_toml":
            path.write_bytes((before or b"") + b"\n[shapes.small\nM = \n")
        elif breakage == "no_reference":
            path.unlink()
        elif breakage == "syntax_error":
            path.write_bytes((before or b"") + b"\ndef broken(:\n    pass\n")
        else:  # not_utf8: a file saved in Latin-1
            path.write_bytes(b"# r\xe9sum\xe9 of the kernel\n" + (before or b""))
