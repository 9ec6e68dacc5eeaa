"""What current NKI adds to a run: its tensor views on the machine, the PSUM accumulation
flags nc_matmul's `accumulate` needs, and the engines' reduce registers.

The state lives on the machine (`Machine.dialect_state`), so each run (and each SPMD program of
one run) starts clean and nothing is kept between runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nkibench.nkisim.current.limits import Limits, limits_of
from nkibench.nkisim.current.storage import flat_positions, storage_offset, storage_strides
from nkibench.nkisim.current.views import TENSOR_METHODS
from nkibench.nkisim.machine import Machine, current
from nkibench.nkisim.tensor import Access, Allocation, Buffer, NkiTensor

__all__ = ["MATMUL_WRITTEN", "NEVER_WRITTEN", "VALUE_WRITTEN", "CurrentState", "prepare", "state"]

KEY = "nki"
NEVER_WRITTEN, VALUE_WRITTEN, MATMUL_WRITTEN = 0, 1, 2
OOB_HINT = "bound the slice (e.g. min(n, start + 128)) or fix the number of tiles"


Marks = np.ndarray[Any, np.dtype[np.int8]]


@dataclass
class CurrentState:
    limits: Limits
    psum: dict[int, int | Marks] = field(default_factory=dict)
    """Per PSUM allocation, per element: never written, written by a non-matmul instruction,
    or written by a matmul (which later matmuls may accumulate onto). One int while every
    element has the same mark: most PSUM tiles are written whole, and a kernel's inner loop
    then costs no per-element bookkeeping."""
    accumulators: dict[str, np.ndarray[Any, Any] | None] = field(default_factory=dict)
    """The reduce registers of ScalarE ("scalar") and VectorE ("vector"), one per partition."""

    def _stored(self, alloc: Allocation) -> int | Marks:
        found = self.psum.get(alloc.id)
        if found is None:
            return NEVER_WRITTEN if alloc.pending else VALUE_WRITTEN  # nl.zeros: initialised
        return found

    def _array(self, alloc: Allocation) -> Marks:
        """The allocation's marks element by element (made so on the first partial write)."""
        found = self._stored(alloc)
        if isinstance(found, int):
            found = self.psum[alloc.id] = np.full(alloc.data.shape, found, dtype=np.int8)
        return found

    def _view(self, target: NkiTensor) -> Marks:
        """The marks of a view's elements, laid out like the view (int8: strides in bytes
        are strides in elements)."""
        flat = self._array(target.alloc).reshape(-1)
        view: Marks = np.lib.stride_tricks.as_strided(
            flat[storage_offset(target) :], target.shape, storage_strides(target)
        )
        return view

    def mark(self, target: NkiTensor | Access, value: int) -> None:
        alloc = target.alloc
        if isinstance(target, NkiTensor):
            if target.box == alloc.full_box:
                self.psum[alloc.id] = value
            else:
                self._view(target)[...] = value
        else:
            self._array(alloc).reshape(-1)[flat_positions(target).reshape(-1)] = value

    def marks_view(self, target: NkiTensor | Access) -> int | Marks:
        """The marks of `target`'s elements, to read: one int when they all agree because the
        allocation was only ever marked whole, else an array (a view where it can be)."""
        found = self._stored(target.alloc)
        if isinstance(found, int):
            return found
        if isinstance(target, NkiTensor):
            return self._view(target)
        return found.reshape(-1)[flat_positions(target)]


def prepare(machine: Machine) -> CurrentState:
    """Set a machine up for current NKI (idempotent): views, write tracking, messages."""
    found = machine.dialect_state.get(KEY)
    if isinstance(found, CurrentState):
        return found
    created = CurrentState(limits_of(machine))
    machine.dialect_state[KEY] = created
    machine.tensor_methods.update(TENSOR_METHODS)
    machine.oob_hint = OOB_HINT
    machine.python_indices = True

    def on_store(target: NkiTensor | Access) -> None:
        if target.alloc.buffer is Buffer.PSUM:
            created.mark(target, VALUE_WRITTEN)

    machine.store_hook = on_store
    return created


def state() -> tuple[Machine, CurrentState]:
    """The running machine and its current-NKI state."""
    machine = current()
    return machine, prepare(machine)
