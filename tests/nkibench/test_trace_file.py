"""The trace file between the kernel's child and the estimate's: what nkisim writes is read back
exactly, whatever the tensors' rank, and what it does not write is a TraceError."""

from __future__ import annotations

import io
import json

import pytest

from nkibench.cost import estimate
from nkibench.nkisim.trace import Instruction, Lifetime, Operand
from nkibench.nkisim.trace_file import OutputRecord, TraceError, read_trace, write_trace


def _operand(alloc: int, buffer: str, rank: int) -> Operand:
    shape = (2,) * (rank - 2) + (128, 64)
    box = tuple((0, d) for d in shape)
    return Operand(alloc, f"t{alloc}", buffer, "float32", shape, 128, 64, 128 * 64 * 4, 256, box)


def _lines(text: str) -> list[bytes]:
    return [line.encode() for line in text.splitlines(keepends=True)]


def _written(rank: int) -> str:
    hbm, psum = _operand(1, "hbm", rank), _operand(2, "psum", rank)
    instructions = [
        Instruction(
            0, "nc_matmul", "tensor", [hbm], psum, set(), {"m": 128, "n": 64, "k": 128}, 12
        ),
        Instruction(1, "dma_copy", "dma", [psum], _operand(3, "shared_hbm", rank), {0}, {}, 13),
    ]
    out = io.StringIO()
    output = OutputRecord(3, instructions[1].output.shape, instructions[1].output.box)  # type: ignore[union-attr]
    write_trace(out, "trn2", [output], instructions, [Lifetime("psum", 0, 1, 256, 128)])
    return out.getvalue()


@pytest.mark.parametrize("rank", [2, 9, 20])
def test_what_nkisim_writes_is_read_back_and_estimated_the_same(rank: int) -> None:
    text = _written(rank)
    trace = read_trace(_lines(text))
    again = io.StringIO()
    write_trace(again, trace.target, trace.outputs, trace.instructions, trace.lifetimes)
    assert again.getvalue() == text
    assert len(trace.instructions[0].inputs[0].box) == rank
    assert estimate(trace.instructions, "trn2", trace.lifetimes).latency_ns > 0


def _edited(index: int, change: object) -> list[bytes]:
    lines = _written(2).splitlines()
    record = json.loads(lines[index])
    if callable(change):
        change(record)
    else:
        record = change
    lines[index] = json.dumps(record)
    return _lines("\n".join(lines) + "\n")


@pytest.mark.parametrize(
    ("index", "change", "said"),
    [
        (0, ["trace", 2, "trn2"], "no trace header"),
        (2, lambda r: r.__setitem__(2, "warp"), "unknown engine"),
        (3, lambda r: r.__setitem__(5, [1]), "depends on a later one"),
        (2, lambda r: r[3][0].__setitem__(9, [[4, 2]]), "an empty range"),
        (2, lambda r: r[3][0].__setitem__(7, -1), "bytes"),
        (2, lambda r: r.__setitem__(6, {"a": [[[[[[1]]]]]]}), "attributes"),
        (4, ["life", "sbuf", 0, 9, 1, 1], "past the trace's end"),
        (2, "not a record", "not a record"),
    ],
)
def test_a_trace_nkisim_did_not_write_is_a_trace_error(
    index: int, change: object, said: str
) -> None:
    with pytest.raises(TraceError, match=said):
        read_trace(_edited(index, change))


def test_a_line_that_is_not_json_or_too_long_is_a_trace_error() -> None:
    lines = _lines(_written(2))
    with pytest.raises(TraceError, match="not JSON"):
        read_trace([*lines[:2], b"{\n"])
    with pytest.raises(TraceError, match="longer than"):
        read_trace([*lines[:2], b"[" + b" " * (1 << 21) + b"]\n"])
    with pytest.raises(TraceError, match="an empty trace"):
        read_trace([])
