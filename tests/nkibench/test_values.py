"""Values between the phases (issue 25, part 2): inputs and outputs by name, and how the
parent checks what a child says about them; no child runs here."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from nkibench.policy import correctness
from nkibench.policy.correctness import compare_outputs, mismatched
from nkibench.policy.tolerance import Tolerance
from nkibench.sandbox.arrays import load_array, restore, save_array, value_spec
from nkibench.sandbox.readback import UnsafeFile
from nkibench.sandbox.reference import FIXED_SEED, reference_phase
from nkibench.sandbox.results import MalformedResult, check_manifest, decode
from nkibench.sandbox.values import call, named, ordered, takes_names


def _positional(x: int, y: int) -> tuple[int, int]:
    return x, y


def _swapped(y: int, x: int) -> tuple[int, int]:
    return x, y


def _star(*inputs: int) -> tuple[int, ...]:
    return inputs


def _keywords(*args: int, **kwargs: int) -> tuple[int, int]:
    return kwargs["x"], kwargs["y"]


def test_named_inputs_are_passed_by_keyword_where_the_signature_takes_them() -> None:
    values, names = named({"x": 1, "y": 2}, "get_inputs()")
    assert (values, names) == ([1, 2], ["x", "y"])
    assert call(_swapped, values, names) == (1, 2)  # by name, whatever the order
    assert call(_keywords, values, names) == (1, 2)
    assert call(_star, values, names) == (1, 2)  # binds no name: positionally
    assert call(_positional, values, None) == (1, 2)
    assert not takes_names(_star, names)
    assert takes_names(_swapped, names)
    assert not takes_names(_swapped, ["x", "z"])  # other names: positionally
    assert named([1, 2], "get_inputs()") == ([1, 2], None)
    assert named(3, "forward()") == ([3], None)


class _Dict(dict[str, Any]):
    pass


@pytest.mark.parametrize(
    ("value", "names", "said"),
    [
        ({"out": 1}, ["out", "lse"], "no output lse"),
        ({"out": 1, "lse": 2, "extra": 3}, ["out", "lse"], "unknown output(s) 'extra'"),
        ({"out": 1, "lse": 2}, None, "the reference's outputs have no names"),
        (_Dict(out=1, lse=2), ["out", "lse"], "_Dict, not a plain dict"),
    ],
)
def test_a_kernels_dict_must_name_the_references_outputs_exactly(
    value: Any, names: list[str] | None, said: str
) -> None:
    with pytest.raises(TypeError) as caught:
        ordered(value, names, "run()'s result")
    assert said in str(caught.value)


def test_a_kernels_outputs_come_in_the_references_order() -> None:
    assert ordered({"lse": 2, "out": 1}, ["out", "lse"], "run()") == [1, 2]
    assert ordered((1, 2), ["out", "lse"], "run()") == [1, 2]  # a tuple: positionally
    assert ordered(1, None, "run()") == [1]


@pytest.mark.parametrize("key", [1, "not a name", "a-b", "", "x" * 129])
def test_a_dict_whose_keys_are_not_names_is_refused(key: Any) -> None:
    with pytest.raises(TypeError, match="is not a name"):
        named({key: 1}, "get_inputs()'s result")


def _manifest(**names: Any) -> dict[str, Any]:
    scalar = {"kind": "scalar", "value": 1.0}
    return {"seeds": {"0": {"inputs": [scalar, scalar], "expected": [scalar], **names}}}


@pytest.mark.parametrize(
    "names",
    [
        {"input_names": ["x"]},  # one name for two values
        {"input_names": ["x", "x"]},
        {"input_names": ["x", "../y"]},
        {"input_names": "xy"},
        {"output_names": ["out", "lse"]},
        {"output_names": [7]},
    ],
)
def test_names_a_reference_hands_back_are_checked_like_the_rest_of_its_result(
    names: dict[str, Any],
) -> None:
    assert check_manifest(_manifest(input_names=["x", "y"], output_names=["out"]), [0])
    with pytest.raises(MalformedResult, match="not one distinct name"):
        check_manifest(_manifest(**names), [0])


def test_each_output_is_judged_under_its_own_tolerance() -> None:
    ref = np.linspace(1.0, 2.0, 100)
    off = ref * 1.005  # relative L2 5e-3, every element 0.5% off
    names = ["out", "lse"]
    assert compare_outputs((off, ref), (ref, ref), 2e-2, names).correct
    tight = {"out": Tolerance(1e-3)}
    judged = compare_outputs((off, ref), (ref, ref), 2e-2, names, tight)
    assert not judged.correct
    assert judged.message.startswith("output out: relative L2 error 5.0")
    by_position = compare_outputs((ref, off), (ref, ref), 2e-2, None, {"1": Tolerance(1e-3)})
    assert by_position.message.startswith("output 1: relative L2")


def test_flashinfer_benchs_per_element_rule_with_a_matched_ratio() -> None:
    ref = np.ones(100, dtype=np.float32)
    out = ref.copy()
    out[:3] = 1.5  # three elements off by 0.5: more than atol and rtol 0.1 both
    strict = {"0": Tolerance(None, 0.1, 0.1)}
    judged = compare_outputs(out, ref, 1.0, None, strict)
    assert not judged.correct
    assert "3 of 100 element(s) off by more than atol 0.1 and rtol 0.1" in judged.message
    assert compare_outputs(out, ref, 1e-9, None, {"0": Tolerance(None, 0.1, 0.1, 0.97)}).correct
    assert compare_outputs(out, ref, 1e-9, None, {"0": Tolerance(None, 0.6, 0.0)}).correct
    assert compare_outputs(out, ref, 1e-9, None, {"0": Tolerance(None, 0.0, 0.6)}).correct
    assert mismatched(out, ref, 0.1, 0.1) == 3
    indices = np.arange(10)
    exact = {"0": Tolerance(None, 0.0, 0.0, dtype="int64")}
    assert compare_outputs(indices, indices, 1.0, None, exact).correct
    moved = compare_outputs(indices[::-1].copy(), indices, 1.0, None, exact)
    assert "10 of 10 element(s)" in moved.message
    narrow = compare_outputs(indices.astype(np.int32), indices, 1.0, None, exact)
    assert narrow.message == "output 0: dtype int32, where the task declares int64"


@pytest.mark.parametrize("threads", [1, 3])
def test_an_output_of_many_chunks_is_judged_as_one_whatever_the_threads(
    monkeypatch: pytest.MonkeyPatch, threads: int
) -> None:
    monkeypatch.setattr(correctness, "CHUNK", 1000)
    rng = np.random.default_rng(7)
    ref = rng.standard_normal(10_500).astype(np.float32)  # ten full chunks and a half
    out = ref.astype(ml_dtypes.bfloat16)
    out[-3:] = 9.0  # the last, partial chunk differs most: a lost tail would show
    x, y = out.astype(np.float64), ref.astype(np.float64)
    monkeypatch.setattr(correctness, "THREADS", threads)
    assert correctness.relative_l2(out, ref) == pytest.approx(
        np.linalg.norm(x - y) / np.linalg.norm(y), rel=1e-12
    )
    off = np.abs(x - y) > 1e-2 + 1e-2 * np.abs(y)
    assert mismatched(out, ref, 1e-2, 1e-2) == int(np.count_nonzero(off)) >= 3


def test_a_tolerance_from_the_parent_is_read_strictly() -> None:
    kept = Tolerance(None, 1e-2, 1e-2, 0.9, "bfloat16")
    assert Tolerance.from_json(kept.to_json()) == kept
    for junk, said in (
        ({"rel_tol": float("nan")}, "bound nan"),
        ({"atol": 1.0}, "atol and rtol go together"),
        ({"rel_tol": 1e-3, "dtype": "object"}, "dtype 'object'"),
    ):
        with pytest.raises(ValueError, match=re.escape(said)):
            Tolerance.from_json(junk)


@pytest.mark.parametrize(
    "dtype",
    [
        ml_dtypes.float8_e4m3fn,
        ml_dtypes.float8_e5m2,
        ml_dtypes.bfloat16,
        np.bool_,
        np.int8,
        np.int64,
        np.uint8,
        np.float16,
    ],
)
def test_every_dtype_of_the_format_crosses_as_an_array_file(tmp_path: Path, dtype: Any) -> None:
    values = np.arange(8).reshape(2, 4).astype(np.float32).astype(dtype)
    spec = value_spec(values, tmp_path, "input_0")
    assert spec["dtype"] == np.dtype(dtype).name
    back = restore(spec, tmp_path)
    assert back.dtype == np.dtype(dtype)
    assert np.array_equal(back.view(np.uint8), values.view(np.uint8))
    assert value_spec(np.float32(2.5), tmp_path, "x") == {"kind": "scalar", "value": 2.5}
    assert value_spec(True, tmp_path, "x") == {"kind": "scalar", "value": True}


def test_an_array_file_is_read_whole_in_its_own_order_or_refused(tmp_path: Path) -> None:
    fortran = np.asfortranarray(np.arange(12, dtype=np.float64).reshape(3, 4))
    np.save(tmp_path / "f.npy", fortran)
    back = load_array(tmp_path, "f.npy")
    assert back.flags.f_contiguous
    assert np.array_equal(back, fortran)
    back[0, 0] = 5.0  # the reader's own memory, not a view of the file
    assert np.array_equal(load_array(tmp_path, "f.npy"), fortran)
    np.save(tmp_path / "empty.npy", np.zeros((0, 3), np.float32))
    assert load_array(tmp_path, "empty.npy").shape == (0, 3)
    (tmp_path / "cut.npy").write_bytes((tmp_path / "f.npy").read_bytes()[:-8])
    with pytest.raises(UnsafeFile, match="its header says 96 bytes of data, it holds 88"):
        load_array(tmp_path, "cut.npy")


def test_the_readback_stays_strict_for_the_new_dtypes(tmp_path: Path) -> None:
    """A sidecar naming float8 beside 16-bit data, or an object array, is refused."""
    save_array(tmp_path / "a.npy", np.zeros(4, dtype=ml_dtypes.bfloat16))
    (tmp_path / "a.npy.dtype").write_text("float8_e4m3fn")
    with pytest.raises(UnsafeFile, match=r"does not name the dtype of a\.npy"):
        load_array(tmp_path, "a.npy")
    np.save(tmp_path / "o.npy", np.array([1, "x"], dtype=object), allow_pickle=True)
    with pytest.raises(UnsafeFile, match="not a numeric array's"):
        load_array(tmp_path, "o.npy")


FIXED_REFERENCE = """\
import numpy as np

N = 6
FIXED_INPUTS = ["indices"]


def get_inputs():
    table = np.random.rand(N, 4).astype(np.float32)
    indices = np.random.permutation(N).astype(np.int32)
    return {"table": table, "indices": indices}


def forward(table, indices):
    return {"rows": table[indices], "first": indices[:1]}
"""


def _reference(tmp_path: Path, source: str, seeds: list[int], fixed: list[Any]) -> dict[str, Any]:
    (tmp_path / "reference.py").write_text(source)
    for folder in ("data", "expected"):
        (tmp_path / folder).mkdir()
    request = {
        "reference": str(tmp_path / "reference.py"),
        "overrides": {},
        "seeds": seeds,
        "data_dir": str(tmp_path / "data"),
        "expected_dir": str(tmp_path / "expected"),
        "fixed_inputs": fixed,
    }
    return reference_phase(request)


def test_fixed_inputs_are_drawn_once_under_the_fixed_seed_and_shared_by_every_seed(
    tmp_path: Path,
) -> None:
    """The NumPy reference phase (NKI tasks); the Triton one shares FixedInputs."""
    result = _reference(tmp_path, FIXED_REFERENCE, [1, 2, 3], ["indices"])
    assert result["ok"], result
    manifest = check_manifest(result, [1, 2, 3])
    inputs = {
        seed: [restore(s, tmp_path / "data" / f"seed_{seed}") for s in entry["inputs"]]
        for seed, entry in manifest.items()
    }
    np.random.seed(FIXED_SEED)
    np.random.rand(6, 4)
    fixed = np.random.permutation(6).astype(np.int32)
    for seed in ("1", "2", "3"):
        assert np.array_equal(inputs[seed][1], fixed)
        assert manifest[seed]["input_names"] == ["table", "indices"]
        assert manifest[seed]["output_names"] == ["rows", "first"]
    assert not np.array_equal(inputs["1"][0], inputs["2"][0])  # the rest is drawn per seed


@pytest.mark.parametrize(
    ("change", "fixed", "said"),
    [
        ("", ["offsets"], "FIXED_INPUTS: 'offsets' is no input of get_inputs() (table, indices)"),
        ("", [2], "FIXED_INPUTS: 2 is no input"),
        (
            "np.random.permutation(N)",
            "np.arange(np.random.randint(1, 1000))",
            "FIXED_INPUTS: input indices has shape",
        ),
    ],
)
def test_a_fixed_input_that_is_not_one_or_changes_shape_is_the_tasks_error(
    tmp_path: Path, change: str, fixed: Any, said: str
) -> None:
    source = FIXED_REFERENCE
    if change:
        source, fixed = source.replace(change, fixed), ["indices"]
    result = _reference(tmp_path, source, [1, 2], fixed)
    assert not result["ok"]
    assert result["kind"] == "task"
    assert said in result["message"], result["message"]


def test_a_child_cannot_report_that_no_verdict_was_reached() -> None:
    """`job_failed` spares a promoted kernel its demotion: the daemon's to say, never a
    child's (a kernel reporting it of itself would stay in the library for good)."""
    failure = {"ok": False, "kind": "incorrect", "message": "off by one"}
    assert decode(json.dumps(failure).encode(), 1 << 20)["kind"] == "incorrect"
    with pytest.raises(MalformedResult, match="a failure of an unknown kind"):
        decode(json.dumps({**failure, "kind": "job_failed"}).encode(), 1 << 20)
