"""List scheduling of a trace on a NeuronCore's engines.

TensorE, VectorE, ScalarE and GpSimd each run their instructions in program order, an
instruction starting once its engine is free and the instructions it reads from have
finished. DMA transfers go through queues, one per kernel statement (a loop's loads come
from one statement and run in order on its queue), each holding its queue for at least the
fixed cost of a transfer; the sixteen DMA engines behind the queues are one shared fabric
(every tile starts at partition 0, so every transfer needs the first engines), which a
transfer takes at the earliest time its inputs and its queue are ready, filling idle gaps
left by transfers that had to wait.

An instruction that writes a tile into a reused SBUF buffer also waits for the buffer's
earlier holder to be read for the last time: how far loads may run ahead of compute depends on
how many buffers fit. A spilled tile is written to HBM once produced and read back on the DMA
engines, and its reader waits for it (nkibench.cost.buffers plans both).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field

from nkibench.cost.buffers import BufferPlan, Spill
from nkibench.cost.costs import Cost
from nkibench.nkisim.trace import ENGINES, Instruction

__all__ = ["DmaFabric", "Schedule", "schedule"]

MAX_GAPS = 256
"""Idle DMA intervals remembered for back-filling; the oldest are forgotten first."""
MIN_GAP_NS = 1.0


class DmaFabric:
    """The DMA engines as one resource with back-filling of idle gaps."""

    def __init__(self) -> None:
        self._starts: list[float] = []
        self._ends: list[float] = []
        self.tail = 0.0

    def place(self, ready: float, busy: float) -> float:
        """Reserve `busy` ns at the earliest time ≥ `ready`; return the start."""
        ends = self._ends
        for j in range(bisect_right(ends, ready), len(ends)):
            start = max(self._starts[j], ready)
            if start + busy <= ends[j]:
                self._split(j, start, start + busy)
                return start
        start = max(self.tail, ready)
        if start - self.tail >= MIN_GAP_NS:
            self._starts.append(self.tail)
            ends.append(start)
            if len(ends) > MAX_GAPS:
                del self._starts[0], ends[0]
        self.tail = start + busy
        return start

    def _split(self, j: int, start: float, end: float) -> None:
        gap_start, gap_end = self._starts[j], self._ends[j]
        starts: list[float] = []
        ends: list[float] = []
        if start - gap_start >= MIN_GAP_NS:
            starts.append(gap_start)
            ends.append(start)
        if gap_end - end >= MIN_GAP_NS:
            starts.append(end)
            ends.append(gap_end)
        self._starts[j : j + 1] = starts
        self._ends[j : j + 1] = ends


@dataclass
class Schedule:
    makespan_ns: float
    busy_ns: dict[str, float]
    """Per engine; for DMA the larger of the engines' busy time and the busiest queue's."""
    instructions: dict[str, int]
    line_busy_ns: dict[tuple[int, str], float]
    """(kernel line, engine) → busy time issued from that line."""
    dma_queues: int = 0
    costs: list[Cost] = field(default_factory=list)


def _spill(fabric: DmaFabric, spill: Spill, produced: float) -> float:
    """Place a spilled tile's save (if any) and reload; return when it is back in SBUF."""
    back = produced
    for _ in range(spill.transfers):
        back = fabric.place(back, spill.transfer_ns) + spill.transfer_ns
    return back


def schedule(
    instructions: list[Instruction],
    cost: Callable[[Instruction], Cost],
    buffers: BufferPlan | None = None,
) -> Schedule:
    buffers = buffers or BufferPlan()
    waits = buffers.waits
    spilled_by: dict[int, list[Spill]] = {}
    for spill in buffers.spills:
        spilled_by.setdefault(spill.producer, []).append(spill)
    reloaded: dict[int, float] = {}  # reader → when its spilled tile is back in SBUF
    free = dict.fromkeys(ENGINES, 0.0)
    busy = dict.fromkeys(ENGINES, 0.0)
    counts = dict.fromkeys(ENGINES, 0)
    lines: dict[tuple[int, str], float] = {}
    queue_free: dict[int, float] = {}  # a DMA queue per kernel line, in program order
    queue_busy: dict[int, float] = {}
    visible: list[float] = []  # when each instruction's result can be read
    fabric = DmaFabric()
    makespan = 0.0
    costs: list[Cost] = []
    for instruction in instructions:
        c = cost(instruction)
        costs.append(c)
        ready = 0.0
        for dep in instruction.deps:
            ready = max(ready, visible[dep])
        held_by = waits.get(instruction.index)
        if held_by is not None:
            ready = max(ready, visible[held_by])
        ready = max(ready, reloaded.get(instruction.index, 0.0))
        engine = c.engine
        line = instruction.line
        if engine == "dma":
            start = fabric.place(max(ready, queue_free.get(line, 0.0)), c.busy_ns)
            queue_free[line] = done = start + c.queue_ns
            queue_busy[line] = queue_busy.get(line, 0.0) + c.queue_ns
            held = c.queue_ns
        else:
            start = max(ready, free[engine])
            other = c.alternative
            if other is not None:
                other_start = max(ready, free[other.engine])
                if other_start + other.busy_ns < start + c.busy_ns:
                    # the compiler's placement: where it finishes first
                    c = costs[-1] = other
                    engine, start = other.engine, other_start
            free[engine] = start + c.busy_ns
            done = start + c.duration_ns + c.latency_ns
            held = c.busy_ns
        visible.append(done)
        for spill in spilled_by.get(instruction.index, ()):
            back = _spill(fabric, spill, done)
            reloaded[spill.reader] = max(reloaded.get(spill.reader, 0.0), back)
            busy["dma"] += spill.transfer_ns * spill.transfers
        makespan = max(makespan, done)
        busy[engine] += c.busy_ns
        counts[engine] += 1
        lines[line, engine] = lines.get((line, engine), 0.0) + held
    busy["dma"] = max(busy["dma"], *queue_busy.values(), 0.0)
    return Schedule(makespan, busy, counts, lines, len(queue_busy), costs)
