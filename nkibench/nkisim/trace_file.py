"""The instruction trace as a file: written by the kernel's child, read by a child that never ran
the kernel (nkibench.backends.nkisim.estimate), which estimates and checks it.

The reader treats the file as data from a process that ran untrusted code: every record is
checked for type and range (a dependency on a later instruction would make no schedule, an
unknown engine no cost), and a file that fails is a TraceError, never an exception of another
kind. One JSON array per line:

    ["trace", 1, target]                                     the header
    ["output", index, alloc, shape, box]                      each kernel output, in order
    ["i", op, engine, [operand...], operand|null, [deps], {attrs}, line]
    ["life", buffer, first, last, bytes_per_partition, partitions]

an operand being [alloc, name, buffer, dtype, shape, partitions, elements, bytes,
contiguous_bytes, box], and a box a list of [low, high) pairs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import IO, Any

from nkibench.nkisim.trace import ENGINES, Box, Instruction, Lifetime, Operand

__all__ = ["MAX_LINE", "OutputRecord", "TraceError", "TraceFile", "read_trace", "write_trace"]

FORMAT = 1
BUFFERS = frozenset({"sbuf", "psum", "hbm", "shared_hbm", "private_hbm"})
MAX_RANK = 64
"""NumPy's own limit on an array's dimensions (kernels declare 9-dimensional PSUM tiles: AccelOpt's
NKIBench lora and gqa_full)."""
MAX_LINE = 1 << 20
"""Bytes of one record: an instruction with its operands takes a few hundred."""


class TraceError(Exception):
    """The trace file is not one nkisim writes."""


@dataclass(frozen=True)
class OutputRecord:
    """A kernel output: its allocation, its shape, and the box of the allocation it is."""

    alloc: int
    shape: tuple[int, ...]
    box: Box


@dataclass
class TraceFile:
    target: str
    outputs: list[OutputRecord]
    instructions: list[Instruction]
    lifetimes: list[Lifetime]


def _box(box: Box) -> list[list[int]]:
    return [[low, high] for low, high in box]


def _operand(o: Operand) -> list[Any]:
    return [
        o.alloc,
        o.name,
        o.buffer,
        o.dtype,
        list(o.shape),
        o.partitions,
        o.elements,
        o.bytes,
        o.contiguous_bytes,
        _box(o.box),
    ]


def write_trace(
    out: IO[str],
    target: str,
    outputs: Iterable[OutputRecord],
    instructions: Iterable[Instruction],
    lifetimes: Iterable[Lifetime],
    *,
    beat: Callable[[], None] | None = None,
) -> None:
    """`beat` is called per line: writing a long trace is the simulator's progress too."""

    def line(record: list[Any]) -> None:
        if beat is not None:
            beat()
        out.write(json.dumps(record, separators=(",", ":")) + "\n")

    line(["trace", FORMAT, target])
    for o in outputs:
        line(["output", o.alloc, list(o.shape), _box(o.box)])
    for i in instructions:
        line(
            [
                "i",
                i.op,
                i.engine,
                [_operand(o) for o in i.inputs],
                _operand(i.output) if i.output is not None else None,
                sorted(i.deps),
                i.attrs,
                i.line,
            ]
        )
    for life in lifetimes:
        line(
            ["life", life.buffer, life.first, life.last, life.bytes_per_partition, life.partitions]
        )


def _need(condition: bool, problem: str) -> None:
    if not condition:
        raise TraceError(problem)


def _int(value: Any, what: str) -> int:
    natural = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    _need(natural, f"{what}: {str(value)[:40]!r}")
    return int(value)


def _str(value: Any, what: str, limit: int = 256) -> str:
    _need(isinstance(value, str) and len(value) <= limit, f"{what}: not a short text")
    return str(value)


def _read_box(value: Any, what: str) -> Box:
    _need(isinstance(value, list) and len(value) <= MAX_RANK, f"{what}: not a box")
    pairs = []
    for pair in value:
        _need(isinstance(pair, list) and len(pair) == 2, f"{what}: not a box")
        low, high = _int(pair[0], what), _int(pair[1], what)
        _need(low <= high, f"{what}: an empty range [{low}, {high})")
        pairs.append((low, high))
    return tuple(pairs)


def _read_shape(value: Any, what: str) -> tuple[int, ...]:
    _need(isinstance(value, list) and len(value) <= MAX_RANK, f"{what}: not a shape")
    return tuple(_int(d, what) for d in value)


def _read_operand(value: Any) -> Operand:
    _need(isinstance(value, list) and len(value) == 10, "an operand of the wrong form")
    alloc, name, buffer, dtype, shape, partitions, elements, size, run, box = value
    _need(buffer in BUFFERS, f"an operand in an unknown buffer {str(buffer)[:40]!r}")
    return Operand(
        _int(alloc, "alloc"),
        _str(name, "name"),
        buffer,
        _str(dtype, "dtype", 32),
        _read_shape(shape, "operand shape"),
        _int(partitions, "partitions"),
        _int(elements, "elements"),
        _int(size, "bytes"),
        _int(run, "contiguous bytes"),
        _read_box(box, "operand box"),
    )


def _plain(value: Any, depth: int = 0) -> bool:
    """JSON of bounded depth (an instruction's attributes)."""
    if depth > 4:
        return False
    if isinstance(value, list):
        return all(_plain(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v, depth + 1) for k, v in value.items())
    return value is None or isinstance(value, str | int | float | bool)


def _read_instruction(record: list[Any], index: int) -> Instruction:
    _need(len(record) == 8, "an instruction of the wrong form")
    _, op, engine, inputs, output, deps, attrs, line = record
    _need(engine in ENGINES, f"instruction {index}: unknown engine {str(engine)[:40]!r}")
    _need(isinstance(inputs, list), f"instruction {index}: inputs")
    _need(isinstance(deps, list), f"instruction {index}: dependencies")
    depends = {_int(d, "dependency") for d in deps}
    _need(all(d < index for d in depends), f"instruction {index} depends on a later one")
    _need(isinstance(attrs, dict) and _plain(attrs), f"instruction {index}: attributes")
    return Instruction(
        index,
        _str(op, "op", 64),
        engine,
        [_read_operand(o) for o in inputs],
        None if output is None else _read_operand(output),
        depends,
        attrs,
        _int(line, "line"),
    )


def read_trace(lines: Iterable[bytes]) -> TraceFile:
    """The trace of `lines` (a file's lines), checked record by record."""
    trace: TraceFile | None = None
    for number, raw in enumerate(lines, 1):
        _need(len(raw) <= MAX_LINE, f"line {number}: longer than {MAX_LINE} bytes")
        try:
            record = json.loads(raw)
        except (ValueError, RecursionError):
            raise TraceError(f"line {number}: not JSON") from None
        _need(isinstance(record, list) and bool(record), f"line {number}: not a record")
        kind = record[0]
        if trace is None:
            _need(kind == "trace" and record[1:2] == [FORMAT], "no trace header")
            trace = TraceFile(_str(record[2], "target", 16), [], [], [])
            continue
        try:
            if kind == "i":
                trace.instructions.append(_read_instruction(record, len(trace.instructions)))
            elif kind == "output":
                _need(len(record) == 4, "an output of the wrong form")
                shape = _read_shape(record[2], "output shape")
                trace.outputs.append(
                    OutputRecord(_int(record[1], "alloc"), shape, _read_box(record[3], "box"))
                )
            elif kind == "life":
                _need(len(record) == 6 and record[1] in ("sbuf", "psum"), "a lifetime")
                first, last = _int(record[2], "first"), _int(record[3], "last")
                _need(first <= last, "a lifetime that ends before it starts")
                trace.lifetimes.append(
                    Lifetime(
                        record[1], first, last, _int(record[4], "bytes"), _int(record[5], "parts")
                    )
                )
            else:
                raise TraceError(f"an unknown record {str(kind)[:20]!r}")
        except TraceError as e:
            raise TraceError(f"line {number}: {e}") from None
        except (TypeError, ValueError) as e:
            raise TraceError(f"line {number}: {type(e).__name__}") from None
    _need(trace is not None, "an empty trace")
    assert trace is not None
    count = len(trace.instructions)
    _need(all(life.last < count for life in trace.lifetimes), "a lifetime past the trace's end")
    return trace
