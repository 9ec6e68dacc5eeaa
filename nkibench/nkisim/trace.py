"""The instruction trace: every instruction nkisim executes, with engine, operands (buffer,
shape, dtype, bytes, contiguity), the instructions it depends on, and the kernel line that
issued it. The cost model schedules it; capacity accounting reads its liveness."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "Box",
    "Instruction",
    "Lifetime",
    "Operand",
    "Trace",
    "WriteLog",
    "box_covers",
    "boxes_intersect",
    "compiler_placed",
    "peak_overlap",
]

Box = tuple[tuple[int, int], ...]
"""Per dimension of an allocation, the [low, high) range an access may touch."""

ENGINES = ("tensor", "vector", "scalar", "gpsimd", "dma")
WRITE_LOG_LIMIT = 512
PLACED_BY = "placed"
"""The attribute that marks (value "compiler") an instruction the kernel left to the compiler
to place on an engine, a copy without `engine=`: nkisim records it on VectorE, and the cost
model places it as the compiler does."""


def compiler_placed(by_compiler: bool) -> dict[str, str]:
    """The attributes of an instruction, as to who placed it: the mark when the compiler did."""
    return {PLACED_BY: "compiler"} if by_compiler else {}


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

    @property
    def compiler_placed(self) -> bool:
        return self.attrs.get(PLACED_BY) == "compiler"

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


@dataclass(frozen=True, slots=True)
class Lifetime:
    """One on-chip block's life in program order: from the instruction that first touches it
    to the last one, and the room it takes (what capacity accounting and the cost model's
    buffer and spill rules read)."""

    buffer: str
    """"sbuf" or "psum"."""
    first: int
    last: int
    bytes_per_partition: int
    partitions: int


def peak_overlap(spans: Iterable[tuple[int, int, int]]) -> tuple[int, int]:
    """The most that (first, last, amount) spans of program order hold at once, and the
    position where that is first reached; a span ending just before a position frees its
    amount before one starting there takes its own."""
    events: list[tuple[int, int]] = []
    for first, last, amount in spans:
        events += [(first, amount), (last + 1, -amount)]
    events.sort()
    level = peak = peak_at = 0
    for position, change in events:
        level += change
        if level > peak:
            peak, peak_at = level, position
    return peak, peak_at


class WriteLog:
    """The writes into one block of one allocation: each box written, with the instruction
    that wrote it last, oldest first. Kernels mostly write a grid of disjoint tiles and read
    back the very tiles they wrote; while no two boxes overlap, such a read finds its one
    writer without a scan."""

    __slots__ = ("disjoint", "writers")

    def __init__(self) -> None:
        self.writers: dict[Box, int] = {}
        self.disjoint = True
        """No two logged boxes overlap."""

    def writers_of(self, target: Box, into: set[int]) -> None:
        """Add the instructions whose writes `target` may see: newest first, down to a write
        that covers it."""
        writers = self.writers
        if self.disjoint:
            found = writers.get(target)
            if found is not None:  # every other box is disjoint from this one
                into.add(found)
                return
        for box, writer in reversed(writers.items()):
            if box == target:
                into.add(writer)
                return
            if boxes_intersect(box, target):
                into.add(writer)
                if box_covers(box, target):
                    return

    def record(self, box: Box, writer: int) -> None:
        """`writer` wrote `box`: boxes it covers are forgotten, and it becomes the newest."""
        writers = self.writers
        if box in writers:
            del writers[box]  # re-inserted below, as the newest
            if not self.disjoint:
                self._forget_covered(box)
        elif writers:
            overlaps = self._forget_covered(box)
            self.disjoint = self.disjoint and not overlaps
        writers[box] = writer
        if len(writers) > WRITE_LOG_LIMIT:
            del writers[next(iter(writers))]
        if len(writers) == 1:
            self.disjoint = True

    def _forget_covered(self, box: Box) -> bool:
        """Drop the boxes `box` covers; whether any box left overlaps it."""
        covered: list[Box] = []
        overlaps = False
        for old in self.writers:
            if boxes_intersect(box, old):
                if box_covers(box, old):
                    covered.append(old)
                else:
                    overlaps = True
        for old in covered:
            del self.writers[old]
        return overlaps


class Trace:
    """The recorded instructions and, per allocation, its writes and live ranges."""

    def __init__(self, beat: Callable[[], None] | None = None) -> None:
        self.beat = beat
        """Called on every instruction added (nkisim.machine.Config.beat)."""
        self.instructions: list[Instruction] = []
        self._writes: dict[int, dict[tuple[int, ...], WriteLog]] = {}
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
        if not block:
            for log in blocks.values():
                log.writers_of(target, into)
            return
        for key in (block, ()):
            found = blocks.get(key)
            if found is not None:
                found.writers_of(target, into)

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
        if self.beat is not None:
            self.beat()
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
        blocks = self._writes.setdefault(operand.alloc, {})
        log = blocks.get(block)
        if log is None:
            log = blocks[block] = WriteLog()
        log.record(operand.box, instruction.index)
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
