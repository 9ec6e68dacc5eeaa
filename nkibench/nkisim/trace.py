"""The instruction trace: every instruction nkisim executes, with engine, operands (buffer,
shape, dtype, bytes, contiguity), the instructions it depends on, and the kernel line that
issued it. The cost model schedules it; capacity accounting reads its liveness."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Box", "Instruction", "Operand", "Trace", "box_covers", "boxes_intersect"]

Box = tuple[tuple[int, int], ...]
"""Per dimension of an allocation, the [low, high) range an access may touch."""

ENGINES = ("tensor", "vector", "scalar", "gpsimd", "dma")
WRITE_LOG_LIMIT = 512


# Plain loops, not all(...) over generators: these run for every operand of every instruction.
def boxes_intersect(a: Box, b: Box) -> bool:
    for (alo, ahi), (blo, bhi) in zip(a, b, strict=True):  # noqa: SIM110 - faster than all()
        if alo >= bhi or blo >= ahi:
            return False
    return True


def box_covers(outer: Box, inner: Box) -> bool:
    for (olo, ohi), (ilo, ihi) in zip(outer, inner, strict=True):
        if ilo < olo or ihi > ohi:
            return False
    return True


@dataclass(slots=True)
class Operand:
    """One side of an instruction: which allocation, where it lives and how much it moves."""

    alloc: int
    name: str
    buffer: str
    dtype: str
    shape: tuple[int, ...]
    partitions: int
    elements: int
    """Elements per partition (the free size)."""
    bytes: int
    contiguous_bytes: int
    """Longest run of consecutive bytes in one partition row (what a DMA descriptor moves)."""
    box: Box

    def to_json(self) -> dict[str, Any]:
        return {
            "alloc": self.alloc,
            "name": self.name,
            "buffer": self.buffer,
            "dtype": self.dtype,
            "shape": list(self.shape),
            "partitions": self.partitions,
            "elements": self.elements,
            "bytes": self.bytes,
            "contiguous_bytes": self.contiguous_bytes,
        }


@dataclass(slots=True)
class Instruction:
    index: int
    op: str
    engine: str
    inputs: list[Operand]
    output: Operand | None
    deps: set[int] = field(default_factory=set)
    attrs: dict[str, Any] = field(default_factory=dict)
    line: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "op": self.op,
            "engine": self.engine,
            "inputs": [o.to_json() for o in self.inputs],
            "output": self.output.to_json() if self.output else None,
            "deps": sorted(self.deps),
            "attrs": self.attrs,
            "line": self.line,
        }


class Trace:
    """The recorded instructions and, per allocation, its writes and live ranges."""

    def __init__(self) -> None:
        self.instructions: list[Instruction] = []
        self._writes: dict[int, dict[tuple[int, ...], list[tuple[Box, int]]]] = {}
        """allocation → block coordinates (() for accesses not inside one block) → writes."""
        self.live: dict[int, dict[tuple[int, ...], list[int]]] = {}
        """allocation → block coordinates → [first instruction, last instruction]."""

    def __len__(self) -> int:
        return len(self.instructions)

    def _deps(self, operand: Operand, block: tuple[int, ...], into: set[int]) -> None:
        """Add the writers of what `operand` reads: only writes in its block, or in no single
        block, can overlap it (an access outside any block is checked against them all)."""
        blocks = self._writes.get(operand.alloc)
        if not blocks:
            return
        target = operand.box
        logs = list(blocks.values()) if not block else [blocks.get(block, []), blocks.get((), [])]
        for log in logs:
            for box, writer in reversed(log):
                if box == target:  # the usual case: the tile that was written is read
                    into.add(writer)
                    break
                if boxes_intersect(box, target):
                    into.add(writer)
                    if box_covers(box, target):
                        break

    def touch(self, operand: Operand, index: int, block: tuple[int, ...]) -> None:
        blocks = self.live.get(operand.alloc)
        if blocks is None:
            self.live[operand.alloc] = {block: [index, index]}
            return
        span = blocks.get(block)
        if span is None:
            blocks[block] = [index, index]
        else:
            span[1] = index

    def add(
        self,
        op: str,
        engine: str,
        inputs: list[tuple[Operand, tuple[int, ...]]],
        output: tuple[Operand, tuple[int, ...]] | None,
        *,
        attrs: dict[str, Any] | None = None,
        line: int = 0,
    ) -> Instruction:
        index = len(self.instructions)
        deps: set[int] = set()
        for operand, block in inputs:
            self._deps(operand, block, deps)
            self.touch(operand, index, block)
        instruction = Instruction(
            index,
            op,
            engine,
            [o for o, _ in inputs],
            output[0] if output else None,
            deps,
            attrs or {},
            line,
        )
        self.instructions.append(instruction)
        if output is not None:
            self.set_output(instruction, *output)
        return instruction

    def set_output(
        self, instruction: Instruction, operand: Operand, block: tuple[int, ...]
    ) -> None:
        """Make `operand` the instruction's output (also used to retarget a fresh result)."""
        instruction.output = operand
        self._deps(operand, block, instruction.deps)  # write after write
        instruction.deps.discard(instruction.index)
        writes = self._writes.setdefault(operand.alloc, {}).setdefault(block, [])
        writes[:] = [w for w in writes if not box_covers(operand.box, w[0])]
        writes.append((operand.box, instruction.index))
        if len(writes) > WRITE_LOG_LIMIT:
            del writes[: len(writes) - WRITE_LOG_LIMIT]
        self.touch(operand, instruction.index, block)

    def forget(self, alloc: int) -> None:
        """An allocation that never existed on hardware (a result written straight to its
        destination): drop its writes and live ranges."""
        self._writes.pop(alloc, None)
        self.live.pop(alloc, None)

    def dump(self, path: Path) -> None:
        with path.open("w", encoding="utf-8") as out:
            for instruction in self.instructions:
                out.write(json.dumps(instruction.to_json(), separators=(",", ":")) + "\n")

    def engine_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(ENGINES, 0)
        for instruction in self.instructions:
            counts[instruction.engine] = counts.get(instruction.engine, 0) + 1
        return counts
