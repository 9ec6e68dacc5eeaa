"""Counts reference.py computes from each seed's inputs (its roofline_counts()), used by
task.toml's roofline formulas: recorded per seed in the manifest, averaged over the seeds the
latency is measured on, and a clear task error when malformed (nkibench.task.counts)."""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from nkibench.backends.nkisim.backend import NkisimBackend
from nkibench.errors import TaskError
from nkibench.harness import check_kernel, profile_kernel
from nkibench.policy.roofline import PEAKS
from nkibench.sandbox.reference import TaskCodeFailed, reference_phase
from nkibench.sandbox.results import MalformedResult, check_manifest
from nkibench.task.counts import checked_counts, mean_counts
from nkibench.task.spec import load_task
from nkibench.task.toml import FULL
from tests.support import DATA

RAGGED = DATA / "format" / "ragged_rows"
SEEDS = (3, 5)


def _module(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("ragged_reference", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _valid_elements(seed: int) -> int:
    """The count, computed here from the seed's inputs as NumPy draws them (np.random.seed,
    then get_inputs()), not by the reference's roofline_counts()."""
    np.random.seed(seed)
    inputs = _module(RAGGED / "reference.py").get_inputs()
    return int(np.count_nonzero(np.arange(inputs["x"].shape[1]) < inputs["lengths"]))


class EverySeedNkisim(NkisimBackend):
    """nkisim as a backend whose latency covers every seed (triton's way): the harness must
    then average the counts over all of them."""

    times_every_seed = True


@pytest.mark.parametrize(
    ("backend", "timed"), [(NkisimBackend(), SEEDS[:1]), (EverySeedNkisim(), SEEDS)]
)
def test_a_count_drawn_per_seed_sets_the_roofline(
    tmp_path: Path, backend: NkisimBackend, timed: tuple[int, ...]
) -> None:
    """Ragged row lengths drawn per seed: the roofline's bytes (and so its time and the % of
    peak) are task.toml's formula over the valid elements of the seeds the latency was
    measured on (nkisim estimates the first seed's run)."""
    per_seed = {seed: _valid_elements(seed) for seed in SEEDS}
    assert per_seed[3] != per_seed[5]  # the lengths are drawn per seed
    valid = sum(per_seed[s] for s in timed) / len(timed)
    task = load_task(RAGGED)
    result = profile_kernel(task, backend=backend, shapes=FULL, seeds=SEEDS, workdir=tmp_path)
    assert result.correct, result.message
    assert result.roofline is not None
    assert result.latency_ms is not None
    work = result.roofline["work"]
    rows = task.constants["M"]
    assert work["counts"] == {"valid": pytest.approx(valid)}
    assert work["bytes"] == pytest.approx(2 * 4 * valid + 4 * rows)
    assert work["vec_flops"] == pytest.approx(valid)
    seconds = work["bytes"] / PEAKS["trn2"].bandwidth.value  # memory-bound
    assert result.roofline["time_ms"] == pytest.approx(seconds * 1e3)
    assert result.pct_of_peak == pytest.approx(100 * seconds / (result.latency_ms * 1e-3))


def _reference(tmp_path: Path, source: str, seeds: list[int]) -> dict[str, Any]:
    """The NumPy reference phase, in this process, on `source`: its result, as the child
    hands it back (nkibench.sandbox.child)."""
    (tmp_path / "reference.py").write_text(source)
    for folder in ("data", "expected"):
        (tmp_path / folder).mkdir()
    request = {
        "reference": str(tmp_path / "reference.py"),
        "overrides": {},
        "seeds": seeds,
        "data_dir": str(tmp_path / "data"),
        "expected_dir": str(tmp_path / "expected"),
    }
    try:
        return reference_phase(request)
    except TaskCodeFailed as failure:
        return failure.result


def test_the_manifest_records_each_seeds_counts(tmp_path: Path) -> None:
    result = _reference(tmp_path, (RAGGED / "reference.py").read_text(), list(SEEDS))
    assert result["ok"], result
    manifest = check_manifest(result, SEEDS)
    for seed in SEEDS:
        assert manifest[str(seed)]["counts"] == {"valid": _valid_elements(seed)}


COUNTS = 'def roofline_counts(x, lengths):\n    return {"valid": lengths.sum()}\n'


@pytest.mark.parametrize(
    ("function", "said"),
    [
        (
            "def roofline_counts(x, lengths):\n    return {'valid': float('nan')}\n",
            "reference.py: roofline_counts() on seed 1: valid = nan: a count must be a finite "
            "number >= 0",
        ),
        (
            "def roofline_counts(x, lengths):\n    return {'valid': -lengths.sum()}\n",
            "valid = np.int64(-",
        ),
        ("def roofline_counts(x, lengths):\n    return {'valid': np.inf}\n", "valid = inf"),
        ("def roofline_counts(x, lengths):\n    return {'valid': True}\n", "valid = True"),
        ("def roofline_counts(x, lengths):\n    return {'valid': '3'}\n", "valid = '3'"),
        (
            "def roofline_counts(x, lengths):\n    return {'valid': lengths}\n",
            "valid = array([[",
        ),
        (
            "def roofline_counts(x, lengths):\n    return [lengths.sum()]\n",
            "roofline_counts() on seed 1: returned a list, not a dict of name -> number",
        ),
        (
            "def roofline_counts(x, lengths):\n    return {'2x': 1}\n",
            "'2x' is not a name",
        ),
        (
            "def roofline_counts(x, lengths):\n    return {f'c{i}': 1 for i in range(65)}\n",
            "returned 65 counts, more than 64",
        ),
        (
            "def roofline_counts(x, lengths):\n    return {'valid': 1 / 0}\n",
            "reference.py line {line}: roofline_counts() on seed 1: ZeroDivisionError",
        ),
        (
            "CALLS = []\n\n\ndef roofline_counts(x, lengths):\n    CALLS.append(1)\n"
            "    return {'valid': 1} if len(CALLS) == 1 else {'other': 1}\n",
            "roofline_counts() on seed 2: seed 1 gives valid and seed 2 other: return the same "
            "names for every seed",
        ),
    ],
)
def test_a_malformed_count_is_the_tasks_error_naming_reference_py(
    tmp_path: Path, function: str, said: str
) -> None:
    source = (RAGGED / "reference.py").read_text().replace(COUNTS, function)
    assert function in source
    line = source.splitlines().index(function.splitlines()[-1]) + 1
    result = _reference(tmp_path, source, [1, 2])
    assert not result["ok"]
    assert result["kind"] == "task"
    assert said.format(line=line) in result["message"], result["message"]
    assert "\n" not in result["message"]  # one line, an array's repr too


@pytest.mark.parametrize(
    ("counts", "said"),
    [
        ({"valid": -1}, "seed 1: counts: valid = -1: a count must be a finite number >= 0"),
        ({"valid": "7"}, "valid = '7'"),
        ([1, 2], "returned a list"),
        ({"a b": 1}, "is not a name"),
    ],
)
def test_the_parent_refuses_malformed_counts_in_a_manifest(counts: Any, said: str) -> None:
    """The reference's child ran the task's code, so what it hands back is checked again."""
    result = {"ok": True, "seeds": {"1": {"inputs": [], "expected": [], "counts": counts}}}
    with pytest.raises(MalformedResult, match=said):
        check_manifest(result, [1])


def test_counts_combine_by_their_mean_and_must_name_the_same_things() -> None:
    assert mean_counts({"1": {"a": 1.0, "b": 4.0}, "2": {"a": 2.0, "b": 0.0}}) == {
        "a": 1.5,
        "b": 2.0,
    }
    assert mean_counts({}) == {}
    with pytest.raises(ValueError, match="seed 1 gives a and seed 2 b"):
        mean_counts({"1": {"a": 1.0}, "2": {"b": 1.0}})
    # NumPy numbers and 0-d arrays are numbers; counts are floats from then on
    assert checked_counts({"n": np.int64(3), "m": np.array(2.5)}) == {"n": 3.0, "m": 2.5}


def _ragged_copy(tmp_path: Path, toml: str | None = None, function: str | None = None) -> Path:
    folder = tmp_path / "ragged_rows"
    shutil.copytree(RAGGED, folder)
    if toml is not None:
        (folder / "task.toml").write_text(toml)
    if function is not None:
        reference = folder / "reference.py"
        reference.write_text(reference.read_text().replace(COUNTS, function))
    return folder


def test_a_formula_over_a_count_loads_and_is_evaluated_once_the_counts_are_known(
    tmp_path: Path,
) -> None:
    task = load_task(RAGGED)
    assert task.roofline_counts(FULL, counts={"valid": 10.0}) == {
        "vec_flops": 10.0,
        "bytes": 2 * 4 * 10.0 + 4 * task.constants["M"],
    }
    with pytest.raises(TaskError, match=r"task.toml: roofline.vec_flops: unknown name 'valid'"):
        task.roofline_counts(FULL)
    with pytest.raises(TaskError, match=r"reference.py: roofline_counts\(\) returns M, the name"):
        task.roofline_counts(FULL, counts={"valid": 1.0, "M": 2.0})
    # without the function, a name that is no constant is refused as the task loads
    folder = _ragged_copy(tmp_path, function="def other(x, lengths):\n    return {}\n")
    with pytest.raises(TaskError, match=r"unknown name 'valid'.*defines no roofline_counts"):
        load_task(folder)


@pytest.mark.parametrize(
    ("toml", "function", "said"),
    [
        (
            '[roofline]\nbytes = "2 * 4 * valid_elements"\n',
            None,
            r"task.toml: roofline.bytes: unknown name 'valid_elements' \(reference.py's "
            r"roofline_counts\(\) gave valid\)",
        ),
        (
            '[roofline]\nbytes = "2 * 4 * M * N / valid"\n',
            "def roofline_counts(x, lengths):\n    return {'valid': 0}\n",
            "task.toml: roofline.bytes: division by zero",
        ),
        (
            '[roofline]\nbytes = "2 * 4 * (valid - M * N)"\n',
            None,
            r"task.toml: roofline.bytes: -\d+.* is not a finite number >= 0",
        ),
        (
            '[roofline]\nbytes = "2 * 4 * M"\n',
            "def roofline_counts(x, lengths):\n    return {'M': 1}\n",
            r"reference.py: roofline_counts\(\) returns M, the name\(s\) of shape constants",
        ),
    ],
)
def test_a_formula_the_counts_break_fails_the_check_as_the_tasks_error(
    tmp_path: Path, toml: str, function: str | None, said: str
) -> None:
    """Found once the reference has run, before the kernel runs: a check fails too."""
    task = load_task(_ragged_copy(tmp_path, toml, function))
    result = check_kernel(task, backend=NkisimBackend(), shapes=FULL, seeds=SEEDS)
    assert result.error_kind == "task", result
    assert not result.compiled  # the kernel never ran
    assert result.message is not None
    assert re.search(said, result.message), result.message


CAUSAL_REFERENCE = """\
import torch

B = 4
MAX_LEN = 64
D = 8


def get_inputs():
    lengths = torch.randint(1, MAX_LEN + 1, (B,), dtype=torch.int32)
    q = torch.randn(B, MAX_LEN, D, dtype=torch.bfloat16)
    return {"q": q, "lengths": lengths}


def forward(q, lengths):
    return q * 2


def roofline_counts(q, lengths):
    return {"causal_pairs": (lengths * (lengths + 1) // 2).sum()}  # a 0-d tensor
"""


def test_a_triton_reference_counts_causal_pairs_from_torch_tensors(tmp_path: Path) -> None:
    """The Triton reference phase (torch inputs, drawn under torch.manual_seed) records each
    seed's counts the same way; a 0-d tensor is a number."""
    torch = pytest.importorskip("torch")
    phases = pytest.importorskip("nkibench.backends.triton.phases")
    (tmp_path / "reference.py").write_text(CAUSAL_REFERENCE)
    request = {
        "reference": str(tmp_path / "reference.py"),
        "overrides": {},
        "seeds": list(SEEDS),
        "data_dir": str(tmp_path / "data"),
        "expected_dir": str(tmp_path / "expected"),
    }
    result = phases.reference_phase(request)
    assert result["ok"], result
    manifest = check_manifest(result, SEEDS)
    for seed in SEEDS:
        torch.manual_seed(seed)
        lengths = torch.randint(1, 65, (4,), dtype=torch.int32).tolist()
        pairs = sum(n * (n + 1) // 2 for n in lengths)
        assert manifest[str(seed)]["counts"] == {"causal_pairs": pairs}
    assert manifest["3"]["counts"] != manifest["5"]["counts"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("vec_flops", "said"),
    [
        ("3 * M * N + positive", None),
        (
            "3 * M * N + negative",
            r"task.toml: roofline.vec_flops: unknown name 'negative' \(reference.py's "
            r"roofline_counts\(\) gave positive\)",
        ),
    ],
)
def test_a_triton_tasks_counts_reach_its_formulas_from_the_sandboxed_reference(
    tmp_path: Path, vec_flops: str, said: str | None
) -> None:
    """Under Triton's CPU interpreter (no GPU, so no profile): the counts of the Triton
    reference's sandboxed child reach the parent, which evaluates the formulas with them
    before the kernel runs."""
    backend = pytest.importorskip("nkibench.backends.triton.backend").TritonBackend()
    folder = tmp_path / "scaled_rows"
    shutil.copytree(DATA / "format" / "scaled_rows", folder)
    reference = folder / "reference.py"
    reference.write_text(
        reference.read_text()
        + "\n\ndef roofline_counts(x, y, scale):\n    return {'positive': (x > 0).sum()}\n"
    )
    toml = folder / "task.toml"
    toml.write_text(
        toml.read_text().replace('vec_flops = "3 * M * N"', f'vec_flops = "{vec_flops}"')
    )
    task = load_task(folder)
    assert task.roofline["vec_flops"] == vec_flops
    result = check_kernel(task, backend=backend, shapes="small")
    if said is None:
        assert result.correct, result.message
        return
    assert result.error_kind == "task", result
    assert result.message is not None
    assert re.search(said, result.message), result.message
