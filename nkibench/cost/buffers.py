"""How much room the compiler has for a kernel's SBUF tiles, and what the lack of it costs.

Buffers. A tile allocated in a loop body gets a fixed number of buffers that its iterations
take in turn; the next iteration's tile can be written only once the buffer's earlier holder
has been read for the last time (a write-after-read wait). The compiler gives as many buffers
as SBUF holds: every statement that allocates tiles gets the same number of sets, `depth`, the
most that fit once each statement's tiles live at once in program order are counted, and what
room is left over goes one buffer at a time to the statements that allocate first. With room
for several iterations, loads run ahead of compute (double buffering); with room for one, the
next iteration's loads wait for this one's compute to let go of its tiles. AccelOpt's trn1 profiles
show it: bmm_softmax, whose tiles of one iteration take more than a partition's 192 KiB,
measured 12.0 ms where loads running ahead of compute would take 7.2; gqa_full, matmul and
lora are short in the same way.

Spills. Where the tiles live at once in program order exceed a partition, a tile allocated
while there is no room is spilled whole: written back to HBM once produced and read back for
its last reader, which waits for it. A tile that a load brought from HBM is read again from
its source instead (a re-read: nothing is written). neuron-profile counts spills in whole
tiles (mamba's 55,050,240 spilled bytes are exactly fifteen of its 28 KiB x 128-partition
tiles), and counting them this way puts the spill traffic of AccelOpt's five spilling kernels
within 0.6-2x of the measured bytes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from nkibench.cost.costs import is_hbm
from nkibench.nkisim.trace import Instruction, Lifetime, peak_overlap

__all__ = ["BufferPlan", "Spill", "plan_buffers"]


@dataclass(frozen=True, slots=True)
class Spill:
    producer: int
    """The instruction that writes the tile (a load, for a re-read)."""
    reader: int
    """The instruction that reads it back (its last reader), which waits for the reload."""
    bytes: int
    saved: bool
    """Written to HBM first; False for a loaded tile, read again from where it came from."""
    transfer_ns: float
    """How long one transfer (the save or the reload) holds the DMA engines."""

    @property
    def transfers(self) -> int:
        """The save, if any, and the reload."""
        return 2 if self.saved else 1


@dataclass(frozen=True)
class BufferPlan:
    waits: dict[int, int] = field(default_factory=dict)
    """Instruction index → the instruction it waits for: the last to touch the buffer that the
    instruction's new tile reuses."""
    depth: int = 0
    """Buffer sets per tile-allocating statement (0 when the kernel has no SBUF tiles)."""
    spills: list[Spill] = field(default_factory=list)

    @property
    def saved_bytes(self) -> int:
        return sum(s.bytes for s in self.spills if s.saved)

    @property
    def reloaded_bytes(self) -> int:
        return sum(s.bytes for s in self.spills)


def _spilled(lives: Sequence[Lifetime], capacity: float) -> list[Lifetime]:
    """The tiles allocated while SBUF has no room for them (program order)."""
    events = sorted(
        [(life.first, 1, n) for n, life in enumerate(lives)]
        + [(life.last + 1, 0, n) for n, life in enumerate(lives)]
    )  # at one position, frees before allocations
    level = 0
    out: set[int] = set()
    for _, starts, n in events:
        life = lives[n]
        if not starts:
            level -= 0 if n in out else life.bytes_per_partition
        elif level + life.bytes_per_partition <= capacity or life.last == life.first:
            level += life.bytes_per_partition  # a tile read nowhere else is never spilled
        else:
            out.add(n)
    return [lives[n] for n in sorted(out)]


def _buffers(
    by_statement: dict[int, list[Lifetime]],
    at_once: dict[int, int],
    size: dict[int, int],
    depth: int,
    spare: float,
) -> dict[int, int]:
    """Buffers per statement: `depth` sets of what it holds at once, and the room left over
    handed out one buffer at a time, statements in the order they first allocate, each up to one
    more set (the first loads of the next iteration may start early)."""
    buffers = {line: at_once[line] * depth for line in by_statement}
    order = sorted(by_statement, key=lambda line: min(life.first for life in by_statement[line]))
    handed = True
    while handed:
        handed = False
        for line in order:
            wanted = buffers[line] < min(at_once[line] * (depth + 1), len(by_statement[line]))
            if wanted and size[line] <= spare:
                buffers[line] += 1
                spare -= size[line]
                handed = True
    return buffers


def plan_buffers(
    instructions: Sequence[Instruction],
    lifetimes: Sequence[Lifetime],
    capacity: float,
    transfer_ns: Callable[[int], float],
) -> BufferPlan:
    """`capacity`: SBUF bytes per partition; `transfer_ns`: the DMA time of a spill of so
    many bytes."""
    sbuf = [life for life in lifetimes if life.buffer == "sbuf"]
    if not sbuf:
        return BufferPlan()
    by_statement: dict[int, list[Lifetime]] = defaultdict(list)
    for life in sbuf:
        by_statement[instructions[life.first].line].append(life)
    at_once = {  # the most of a statement's tiles live at once
        line: peak_overlap((life.first, life.last, 1) for life in lives)[0]
        for line, lives in by_statement.items()
    }
    size = {
        line: max(life.bytes_per_partition for life in lives)
        for line, lives in by_statement.items()
    }
    working_set = sum(at_once[line] * size[line] for line in by_statement)
    depth = max(1, int(capacity // working_set))
    buffers = _buffers(by_statement, at_once, size, depth, capacity - depth * working_set)
    waits: dict[int, int] = {}
    for line, lives in by_statement.items():
        lives.sort(key=lambda life: life.first)
        for earlier, later in zip(lives, lives[buffers[line] :], strict=False):
            if earlier.last < later.first:
                waits[later.first] = max(waits.get(later.first, -1), earlier.last)
    spills = []
    for life in _spilled(sbuf, capacity):
        moved = life.bytes_per_partition * life.partitions
        producer = instructions[life.first]
        saved = producer.engine != "dma" or not any(is_hbm(o) for o in producer.inputs)
        spills.append(Spill(life.first, life.last, moved, saved, transfer_ns(moved)))
    return BufferPlan(waits, depth, spills)
