"""What the Neuron compiler does to a kernel's loads before they run, as far as the cost model
follows it.

Within one pass through a loop body, a load of HBM data that an earlier statement of the same
pass already loaded, with no write to that HBM tensor in between, is served from SBUF: the
compiler eliminates the repeated load (common subexpression elimination). AccelOpt's trn1
profiles show it: `rope_optimized` loads each of its inputs twice per tile and reads exactly
as many HBM bytes as the baseline that loads them once (268,435,456).

Across iterations the compiler does not: a load repeated by a loop (the same statement again)
is paid every time. The NKI matmul tutorial's measured ladder shows it, where hoisting the
loop-invariant loads by hand takes the tiled kernel from 51.8 to 43.0 ms on trn1. So a load
is served from SBUF only when it comes from another statement than the earlier one, and its own
statement has not run since (no loop went round between them).

The earlier copy must also still be in SBUF: SBUF is modelled as a cache of the loaded tiles,
least recently used first out, a tile staying resident until the loads after its last use
have filled one SBUF partition's capacity (counted per partition, as a tile occupies every
partition it spans).
"""

from __future__ import annotations

from collections import OrderedDict

from nkibench.cost.costs import is_hbm
from nkibench.nkisim.trace import Box, Instruction

__all__ = ["resident_loads"]


def resident_loads(instructions: list[Instruction], sbuf_bytes_per_partition: float) -> set[int]:
    """Indices of the loads whose data is already in SBUF when they would run."""
    resident: OrderedDict[tuple[int, Box], tuple[float, int, int]] = OrderedDict()
    """(HBM allocation, box) → (the running total of bytes per partition when it was last
    loaded or used, the index and the kernel line of the load that brought it)."""
    by_alloc: dict[int, set[tuple[int, Box]]] = {}
    last_run: dict[int, int] = {}  # kernel line → the index of its latest instruction
    loaded = 0.0  # bytes per partition loaded so far
    found: set[int] = set()
    for instruction in instructions:
        output = instruction.output
        previous_run = last_run.get(instruction.line, -1)
        last_run[instruction.line] = instruction.index
        if instruction.engine != "dma" or output is None:
            continue
        if is_hbm(output):  # a store: what SBUF holds of that tensor is stale
            for key in by_alloc.pop(output.alloc, ()):
                resident.pop(key, None)
            continue
        sources = [o for o in instruction.inputs if is_hbm(o)]
        if len(sources) != 1:
            continue
        key = (sources[0].alloc, sources[0].box)
        while resident and loaded - next(iter(resident.values()))[0] > sbuf_bytes_per_partition:
            resident.popitem(last=False)  # evicted: later loads filled SBUF since
        loaded += output.bytes / max(1, output.partitions)
        earlier = resident.get(key)
        if earlier is not None and earlier[2] != instruction.line and previous_run < earlier[1]:
            found.add(instruction.index)  # served from SBUF, which keeps it as long again
            resident[key] = (loaded, earlier[1], earlier[2])
            resident.move_to_end(key)
            continue
        resident[key] = (loaded, instruction.index, instruction.line)
        resident.move_to_end(key)
        by_alloc.setdefault(key[0], set()).add(key)
    return found
