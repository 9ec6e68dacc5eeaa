"""The task format as wide as FlashInfer-Bench's (issue 25, part 2), under Triton's CPU
interpreter: inputs by name, outputs by name, per-output dtypes and tolerances, float8,
integer, boolean and scalar values across the phases, inputs fixed across seeds."""

from __future__ import annotations

import pytest

from nkibench.backends.triton.backend import TritonBackend
from nkibench.harness import check_kernel
from nkibench.task.spec import load_task
from tests.support import DATA
from tests.support.triton_helpers import triton_backend

__all__ = ["triton_backend"]

pytestmark = pytest.mark.slow

FORMAT = DATA / "format"
SCALED_ADD = FORMAT / "scaled_add"


def _kernel(task: str) -> str:
    return (FORMAT / task / "kernel.py").read_text()


def test_named_inputs_reach_run_by_keyword(triton_backend: TritonBackend) -> None:
    """get_inputs() returns a dict; run(y, x, scale) names its parameters in another order
    than the dict's, so only a call by keyword is correct."""
    result = check_kernel(load_task(SCALED_ADD), backend=triton_backend)
    assert result.correct, f"{result.error_kind}: {result.message}"


@pytest.mark.parametrize(
    ("signature", "unpack"),
    [
        ("run(*inputs)", "    x, y, scale = inputs\n"),  # binds no name: positional
        ("run(*args, **kwargs)", '    x, y, scale = kwargs["x"], kwargs["y"], kwargs["scale"]\n'),
    ],
)
def test_a_run_that_names_no_input_gets_them_in_order_and_kwargs_by_name(
    triton_backend: TritonBackend, signature: str, unpack: str
) -> None:
    source = _kernel("scaled_add").replace(
        "def run(y, x, scale):  # not get_inputs()'s order: the inputs come by name\n",
        f"def {signature}:\n{unpack}",
    )
    assert signature in source
    result = check_kernel(load_task(SCALED_ADD), backend=triton_backend, kernel_source=source)
    assert result.correct, f"{result.error_kind}: {result.message}"


SCALED_ROWS = FORMAT / "scaled_rows"
RETURNED = (
    '    return {"row_sum": row_sum, "out": out}  # by name, in another order than the '
    "reference's\n"
)


def test_outputs_by_name_are_each_compared_with_the_references_of_that_name(
    triton_backend: TritonBackend,
) -> None:
    """forward() returns {"out", "row_sum"}; run() returns the same names in another order."""
    assert RETURNED in _kernel("scaled_rows")
    result = check_kernel(load_task(SCALED_ROWS), backend=triton_backend)
    assert result.correct, f"{result.error_kind}: {result.message}"


@pytest.mark.parametrize(
    ("old", "new", "kind", "said"),
    [
        (RETURNED, "    return out, row_sum\n", None, ""),  # a tuple, in the reference's order
        (RETURNED, "    return row_sum, out\n", "incorrect", "output out: shape [8] differs"),
        (RETURNED, '    return {"out": out}\n', "runtime", "no output row_sum"),
        ("row_sum.to(sum_ptr", "(row_sum * 1.5).to(sum_ptr", "incorrect", "output row_sum:"),
    ],
)
def test_each_output_is_judged_on_its_own_and_by_its_name(
    triton_backend: TritonBackend, old: str, new: str, kind: str | None, said: str
) -> None:
    source = _kernel("scaled_rows").replace(old, new)
    result = check_kernel(load_task(SCALED_ROWS), backend=triton_backend, kernel_source=source)
    if kind is None:
        assert result.correct, f"{result.error_kind}: {result.message}"
        return
    assert not result.correct
    assert result.error_kind == kind, result.message
    assert said in (result.message or ""), result.message


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        # 0.5% off: within bfloat16's 2e-2, the task's, not float32's 1e-3, the output's
        (
            "row_sum.to(sum_ptr",
            "(row_sum * 1.005).to(sum_ptr",
            "output row_sum: relative L2 error 5.0",
        ),
        (
            "row_sum = torch.empty(M, dtype=torch.float32",
            "row_sum = torch.empty(M, dtype=torch.bfloat16",
            "output row_sum: dtype bfloat16, where the task declares float32",
        ),
    ],
)
def test_an_output_is_held_to_its_own_dtype_and_tolerance(
    triton_backend: TritonBackend, old: str, new: str, said: str
) -> None:
    """scaled_rows: `[outputs.row_sum] dtype = "float32"` in a bfloat16 task."""
    source = _kernel("scaled_rows").replace(old, new)
    assert source != _kernel("scaled_rows")
    result = check_kernel(load_task(SCALED_ROWS), backend=triton_backend, kernel_source=source)
    assert not result.correct
    assert result.error_kind == "incorrect", result.message
    assert said in (result.message or ""), result.message


def test_float8_boolean_integer_and_scalar_values_cross_the_phases(
    triton_backend: TritonBackend,
) -> None:
    """dequant: float8_e4m3fn, float32, bool and a Python int in; bfloat16 and int32 out (the
    count compared exactly). A float8 input failed with `Got unsupported ScalarType`."""
    task = load_task(FORMAT / "dequant")
    result = check_kernel(task, backend=triton_backend)
    assert result.correct, f"{result.error_kind}: {result.message}"
    off_by_one = _kernel("dequant").replace("axis=0) + shift", "axis=0) + shift + 1")
    wrong = check_kernel(task, backend=triton_backend, kernel_source=off_by_one)
    assert wrong.error_kind == "incorrect", wrong.message
    assert "output kept: 8 of 8 element(s) off by more than atol 0 and rtol 0" in (
        wrong.message or ""
    )


def test_an_index_input_fixed_across_seeds(triton_backend: TritonBackend) -> None:
    task = load_task(FORMAT / "gather_rows")
    assert task.fixed_inputs == ("indices",)
    result = check_kernel(task, backend=triton_backend)
    assert result.correct, f"{result.error_kind}: {result.message}"
