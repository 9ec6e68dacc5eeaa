"""The roofline's formulas: plain arithmetic, min(), max() and ceil() over named numbers, in
bounded time, and nothing else (nkibench.task.safe_eval)."""

from __future__ import annotations

import ast
import math
import time
from pathlib import Path

import pytest

from nkibench.errors import TaskError
from nkibench.task.safe_eval import (
    MAX_BITS,
    UnsafeExpression,
    evaluate,
    formula_names,
    module_constants,
)
from nkibench.task.spec import load_task
from nkibench.task.toml import FULL

NAMES = {"SEQ": 1000, "WINDOW": 256, "PAGE": 16, "HEADS": 8, "SCALE": 0.5}


@pytest.mark.parametrize(
    ("formula", "python"),
    [
        ("min(SEQ, WINDOW)", lambda n: min(n["SEQ"], n["WINDOW"])),
        ("max(SEQ, WINDOW, 4096)", lambda n: max(n["SEQ"], n["WINDOW"], 4096)),
        ("2 * HEADS * min(SEQ, WINDOW) * SEQ", lambda n: 2 * n["HEADS"] * 256 * n["SEQ"]),
        ("ceil(SEQ / PAGE)", lambda n: math.ceil(n["SEQ"] / n["PAGE"])),
        ("ceil(SEQ * SCALE)", lambda n: math.ceil(n["SEQ"] * n["SCALE"])),
        ("SEQ // PAGE", lambda n: n["SEQ"] // n["PAGE"]),
        ("-(-SEQ // PAGE)", lambda n: -(-n["SEQ"] // n["PAGE"])),
        ("max(min(SEQ, WINDOW), PAGE) % 7", lambda n: max(min(1000, 256), 16) % 7),
        ("min(SEQ - 2 * WINDOW, max(PAGE, 3) ** 2)", lambda n: min(1000 - 512, 16**2)),
    ],
)
def test_min_max_ceil_and_floor_division_compute_as_python_does(
    formula: str, python: object
) -> None:
    assert callable(python)
    assert evaluate(formula, NAMES) == python(NAMES)


@pytest.mark.parametrize(
    ("formula", "said"),
    [
        ("abs(SEQ)", r"'abs\(SEQ\)' calls something other than min\(\), max\(\), ceil\(\)"),
        ("__import__('os')", "calls something other than min"),
        ("math.ceil(SEQ)", "calls something other than min"),
        ("(lambda: 1)()", "calls something other than min"),
        ("min(SEQ)", r"min\(\) takes 2 or more argument"),
        ("max()", r"max\(\) takes 2 or more argument"),
        ("ceil(SEQ, PAGE)", r"ceil\(\) takes 1 argument"),
        ("ceil()", r"ceil\(\) takes 1 argument"),
        ("min(*SEQ)", r"give min\(\) its numbers plainly"),
        ("max(SEQ, WINDOW, key=PAGE)", r"give max\(\) its numbers plainly"),
        ("min", "unknown name 'min'"),
        ("SEQ.real", "is not plain arithmetic"),
        ("[SEQ, WINDOW]", "is not plain arithmetic"),
        ("SEQ if WINDOW else PAGE", "is not plain arithmetic"),
        ("SEQ < WINDOW", "is not plain arithmetic"),
        ("min(SEQ, 'a')", "'a' is not a number"),
        ("True * SEQ", "True is not a number"),
        ("ceil(SEQ / 0)", "division by zero"),
        ("SEQ % 0", "division by zero"),
        ("ceil(1e308 * 10)", r"ceil\(inf\) is no number"),
        ("(-SEQ) ** 0.5", "is not a real number"),
        ("1e300 ** 2", "too large for a float"),
        ("SEQ ** 65", "exponent too large"),
        ("(10 ** 64) ** 64", f"a number beyond 2\\*\\*{MAX_BITS}"),
        ("((9 ** 40) ** 40) * 1.0", f"a number beyond 2\\*\\*{MAX_BITS}"),
        ("min(" + ", ".join(["9 ** 64"] * 20) + ") ** 64", "a number beyond"),
    ],
)
def test_anything_else_is_refused_naming_it(formula: str, said: str) -> None:
    with pytest.raises(UnsafeExpression, match=said):
        evaluate(formula, NAMES)


def test_a_formula_takes_bounded_time_however_it_is_written() -> None:
    """task.toml may hold 64 KiB: a chain of tens of thousands of terms, or powers of powers,
    is refused at once instead of exhausting the stack or computing for ever."""
    started = time.monotonic()
    chain = " + ".join(["SEQ"] * 20_000)  # about 120 KiB
    with pytest.raises(UnsafeExpression, match="nested too deeply"):
        evaluate(chain, NAMES)
    powers = "(" * 150 + "9" + " ** 64)" * 150
    with pytest.raises(UnsafeExpression, match="a number beyond"):
        evaluate(powers, NAMES)
    with pytest.raises(UnsafeExpression, match="nested too deeply"):
        evaluate("-" * 100_000 + "1", NAMES)
    assert time.monotonic() - started < 10  # generous: the machine runs other tests too


def test_a_constant_too_long_to_evaluate_is_no_constant() -> None:
    """reference.py's constants go through the same evaluator: a binding it refuses is simply
    no shape constant, never a crash of the loader (1500 terms parse, and nest deeper than
    Python's recursion limit)."""
    source = "N = " + " + ".join(["1"] * 1500) + "\nM = 4\nBIG = (10 ** 64) ** 64\n"
    assert module_constants(ast.parse(source)) == {"M": 4}


def test_the_names_a_formula_reads_leave_out_the_functions_it_calls() -> None:
    formula = "2 * causal_pairs * HEAD_DIM + ceil(tokens / PAGE) * max(E, min(K, 2))"
    assert formula_names(formula) == {"causal_pairs", "HEAD_DIM", "tokens", "PAGE", "E", "K"}
    # read before any value is known, so refused for its shape alone
    with pytest.raises(UnsafeExpression, match="calls something other than"):
        formula_names("2 * open(PATH)")
    with pytest.raises(UnsafeExpression, match="is not plain arithmetic"):
        formula_names("x.y + 1")


def _window_task(tmp_path: Path, bytes_formula: str) -> Path:
    folder = tmp_path / "window"
    folder.mkdir()
    (folder / "kernel.py").write_text("import nki\n\n\n@nki.jit\ndef kernel(q):\n    return q\n")
    (folder / "reference.py").write_text(
        "import numpy as np\n\nSEQ = 4096\nWINDOW = 1024\nD = 64\n\n\n"
        "def get_inputs():\n    return [np.random.rand(SEQ, D).astype(np.float32)]\n\n\n"
        "def forward(q):\n    return q\n"
    )
    (folder / "task.toml").write_text(
        f'[shapes.small]\nSEQ = 512\n\n[roofline]\nbytes = "{bytes_formula}"\n'
    )
    return folder


def test_a_sliding_window_in_task_toml_follows_each_shape_set(tmp_path: Path) -> None:
    task = load_task(_window_task(tmp_path, "4 * D * min(SEQ, WINDOW) * ceil(SEQ / 128)"))
    for shapes, seq in ((FULL, 4096), ("small", 512)):
        expected = 4 * 64 * min(seq, 1024) * math.ceil(seq / 128)
        assert task.roofline_counts(shapes) == {"bytes": expected}


def test_task_toml_names_the_key_of_a_formula_it_refuses(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match=r"task.toml: roofline.bytes: .*abs.* calls something"):
        load_task(_window_task(tmp_path, "abs(SEQ - WINDOW)"))
