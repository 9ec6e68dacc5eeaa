"""`accelopt import-flashinfer` on a small made-up dataset (tests/flashinfer/dataset.py): the
solution it picks by the traces, the folders it writes and that they load, FlashInfer-Bench's
own input draws, and the errors that name the bad file."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from flashinfer_bench.bench import BenchmarkConfig
from flashinfer_bench.bench.utils import gen_inputs
from flashinfer_bench.data import Definition, Workload

from daemon.flashinfer.judging import judging
from daemon.flashinfer.package import FlashInferMissing, require
from daemon.flashinfer.reference_source import reference_source
from daemon.flashinfer.shapes import Unconvertible, check_names
from nkibench.task.spec import load_task
from tests.flashinfer.dataset import (
    BLOB,
    RMSNORM,
    RMSNORM_REFERENCE,
    SCALE_ADD,
    rmsnorm_definition,
    write_dataset,
    write_json,
    write_lines,
)
from tests.support import REPOSITORY
from tests.support.cli import Run, run_cli


def _import(root: Path, dest: Path, *options: str) -> Run:
    return run_cli("import-flashinfer", str(root), str(dest), "--json", *options)


@pytest.mark.parametrize(
    ("latencies", "chosen"),
    [
        ({"rmsnorm_dps": [0.010, 0.012], "rmsnorm_returning": [0.020, 0.030]}, "rmsnorm_dps"),
        ({"rmsnorm_dps": [0.030, 0.030], "rmsnorm_returning": [0.020, 0.025]}, "rmsnorm_returning"),
        # passing on more workloads beats a lower latency on fewer
        ({"rmsnorm_dps": [0.001, None], "rmsnorm_returning": [0.020, 0.025]}, "rmsnorm_returning"),
        # a tie goes to the name that sorts first
        ({"rmsnorm_dps": [0.020, 0.020], "rmsnorm_returning": [0.020, 0.020]}, "rmsnorm_dps"),
        # every trace failed: never chosen
        ({"rmsnorm_dps": [None, None], "rmsnorm_returning": [0.5, 0.5]}, "rmsnorm_returning"),
    ],
)
def test_the_best_traced_triton_solution_becomes_the_kernel(
    tmp_path: Path, latencies: dict[str, list[float | None]], chosen: str
) -> None:
    root = write_dataset(tmp_path / "ds", latencies)
    run = _import(root, tmp_path / "tasks", "--definition", RMSNORM)
    assert run.code == 0, run.err
    (item,) = run.json()["imported"]
    assert item["solution"] == chosen
    provenance = json.loads((tmp_path / "tasks" / RMSNORM / "provenance.json").read_text())
    assert provenance["solution"]["name"] == chosen
    assert {t["workload"] for t in provenance["traces"]} == {"w1", "w2"}
    assert provenance["dataset"] == str(root.resolve())


def test_solution_option_names_the_kernel(tmp_path: Path) -> None:
    root = write_dataset(tmp_path / "ds")
    run = _import(root, tmp_path / "tasks", "--solution", "rmsnorm_returning")
    assert run.code == 0, run.err
    by_definition = {i["definition"]: i["solution"] for i in run.json()["imported"]}
    assert by_definition == {RMSNORM: "rmsnorm_returning", SCALE_ADD: "scale_add_triton"}
    task = load_task(tmp_path / "tasks" / RMSNORM)
    assert task.kernel_function == "rmsnorm"  # the solution's entry point, not named run


def test_every_folder_loads_as_a_triton_task_with_its_workloads(tmp_path: Path) -> None:
    root = write_dataset(tmp_path / "ds")
    run = _import(root, tmp_path / "tasks")
    assert run.code == 0, run.err
    rmsnorm = load_task(tmp_path / "tasks" / RMSNORM)
    assert rmsnorm.name == RMSNORM
    assert rmsnorm.backend == "triton"
    assert rmsnorm.constants == {"hidden_size": 64, "batch_size": 4}  # the first workload's
    out = rmsnorm.outputs["out"]
    assert (out.dtype, out.atol, out.rtol) == ("bfloat16", 0.01, 0.01)
    assert rmsnorm.roofline_counts("full")["bytes"] == 2 * 4 * 64 * 2 + 2 * 64
    assert not rmsnorm.allow_torch_compute
    lines = (tmp_path / "tasks" / RMSNORM / "workloads.jsonl").read_text().splitlines()
    workloads = [Workload.model_validate_json(line) for line in lines]
    assert [w.uuid for w in workloads] == ["w1", "w2"]
    blob = workloads[1].inputs["weight"]
    assert blob.type == "safetensors"
    assert (tmp_path / "tasks" / RMSNORM / blob.path).read_bytes() == (root / BLOB).read_bytes()
    scale_add = load_task(tmp_path / "tasks" / SCALE_ADD)
    assert scale_add.constants == {"n": 100}
    assert "'alpha': 0.5," in scale_add.reference_source  # the workload's scalar


def test_get_inputs_draws_as_flashinfer_bench_draws(tmp_path: Path) -> None:
    """Under one seed, the generated get_inputs() and flashinfer_bench's own gen_inputs() give
    the same values, dtype for dtype (on the CPU, where both draw from one generator)."""
    dtypes = ["float32", "bfloat16", "float16", "float8_e4m3fn", "float8_e5m2", "bool"]
    dtypes += ["int8", "int16", "int32", "int64"]
    inputs: dict[str, Any] = {f"x_{d}": {"shape": ["m", "k"], "dtype": d} for d in dtypes}
    inputs["eps"] = {"shape": None, "dtype": "float32"}  # a Python number
    inputs["scale"] = {"shape": [], "dtype": "float32"}  # a 0-d tensor
    definition = Definition.model_validate(
        {
            "name": "many",
            "op_type": "misc",
            "axes": {"m": {"type": "var"}, "k": {"type": "const", "value": 5}},
            "inputs": inputs,
            "outputs": {"y": {"shape": ["m", "k"], "dtype": "float32"}},
            "reference": "def run(**inputs):\n    return inputs['x_float32']\n",
        }
    )
    workload = Workload(axes={"m": 3}, inputs={}, uuid="u")
    namespace: dict[str, Any] = {}
    exec(reference_source(definition, workload, "test"), namespace)  # as the child runs it
    for seed in (0, 7):
        torch.manual_seed(seed)
        ours = namespace["get_inputs"]()
        torch.manual_seed(seed)
        theirs = gen_inputs(definition, workload, "cpu")
        assert list(ours) == list(definition.inputs)
        for (name, mine), other in zip(ours.items(), theirs, strict=True):
            if isinstance(other, torch.Tensor):
                assert mine.dtype == other.dtype, name
                assert mine.shape == other.shape, name
                bits = [t.reshape(-1).view(torch.uint8) for t in (mine, other)]
                assert torch.equal(*bits), name
            else:
                assert mine == other, name


def test_a_definition_without_a_triton_solution_is_skipped_with_its_reason(
    tmp_path: Path,
) -> None:
    root = write_dataset(tmp_path / "ds")
    lonely = {**rmsnorm_definition(), "name": "rmsnorm_python_only"}
    write_json(root / "definitions" / "rmsnorm" / "rmsnorm_python_only.json", lonely)
    (root / "workloads" / "rmsnorm" / "rmsnorm_python_only.jsonl").write_text(
        json.dumps(
            {
                "definition": "rmsnorm_python_only",
                "workload": {"uuid": "p1", "axes": {"batch_size": 2}, "inputs": {}},
            }
        )
        + "\n"
    )
    write_json(
        root / "solutions" / "rmsnorm" / "rmsnorm_python_only" / "torch.json",
        {
            "name": "python_rmsnorm",
            "definition": "rmsnorm_python_only",
            "author": "tests",
            "spec": {"language": "python", "target_hardware": ["cuda"], "entry_point": "m.py::run"},
            "sources": [
                {"path": "m.py", "content": "def run(hidden_states, weight, out):\n    pass\n"}
            ],
        },
    )
    run = _import(root, tmp_path / "tasks")
    assert run.code == 1
    summary = run.json()
    assert [i["definition"] for i in summary["imported"]] == [RMSNORM, SCALE_ADD]
    (skipped,) = summary["skipped"]
    assert skipped["definition"] == "rmsnorm_python_only"
    assert "no Triton solution" in skipped["reason"]
    assert "python_rmsnorm: not Triton (python)" in skipped["reason"]
    assert not (tmp_path / "tasks" / "rmsnorm_python_only").exists()


def test_a_definition_flashinfer_bench_refuses_is_an_error_naming_its_file(
    tmp_path: Path,
) -> None:
    root = write_dataset(tmp_path / "ds")
    bad = rmsnorm_definition()
    bad["inputs"]["weight"]["shape"] = ["hidden"]  # an axis the definition does not have
    path = root / "definitions" / "rmsnorm" / f"{RMSNORM}.json"
    write_json(path, bad)
    run = _import(root, tmp_path / "tasks")
    assert run.code == 2
    assert str(path) in run.err
    assert 'undefined axis "hidden"' in run.err
    assert not (tmp_path / "tasks").exists()


def test_a_missing_blob_is_an_error_naming_the_workload_and_the_file(tmp_path: Path) -> None:
    root = write_dataset(tmp_path / "ds")
    (root / BLOB).unlink()
    run = _import(root, tmp_path / "tasks")
    assert run.code == 2
    workloads = root / "workloads" / "rmsnorm" / f"{RMSNORM}.jsonl"
    assert f"{workloads} line 2: blob {BLOB!r} is missing" in run.err
    assert not (tmp_path / "tasks").exists()  # nothing written


def test_an_existing_folder_is_never_overwritten(tmp_path: Path) -> None:
    root = write_dataset(tmp_path / "ds")
    (tmp_path / "tasks" / RMSNORM).mkdir(parents=True)
    run = _import(root, tmp_path / "tasks")
    assert run.code == 1
    (skipped,) = run.json()["skipped"]
    assert "never overwritten" in skipped["reason"]
    assert list((tmp_path / "tasks" / RMSNORM).iterdir()) == []


def test_without_flashinfer_bench_the_command_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "flashinfer_bench.data", None)  # import raises ImportError
    with pytest.raises(FlashInferMissing, match=r"pip install 'accelopt\[flashinfer\]'"):
        require()
    run = _import(tmp_path, tmp_path / "tasks")
    assert run.code == 2
    assert "pip install 'accelopt[flashinfer]'" in run.err


def test_a_solution_of_several_python_files_is_not_imported(tmp_path: Path) -> None:
    root = write_dataset(tmp_path / "ds")
    write_json(
        root / "solutions" / "elementwise" / SCALE_ADD / "split.json",
        {
            "name": "scale_add_split",
            "definition": SCALE_ADD,
            "author": "tests",
            "spec": {
                "language": "triton",
                "target_hardware": ["cuda"],
                "entry_point": "main.py::run",
                "destination_passing_style": False,
            },
            "sources": [
                {"path": "main.py", "content": "from helpers import run\n"},
                {"path": "helpers.py", "content": "def run(x, y, alpha):\n    return x\n"},
            ],
        },
    )
    run = _import(root, tmp_path / "tasks", "--solution", "scale_add_split")
    assert run.code == 1
    (skipped,) = run.json()["skipped"]
    assert skipped["definition"] == SCALE_ADD
    assert "has 2 Python files (main.py, helpers.py)" in skipped["reason"]
    # the best by its traces, it is passed over for the next one that makes a kernel.py
    trace = {
        "definition": SCALE_ADD,
        "workload": {"uuid": "s1", "axes": {"n": 100}, "inputs": {}},
        "solution": "scale_add_split",
        "evaluation": {
            "status": "PASSED",
            "environment": {"hardware": "NVIDIA H100"},
            "timestamp": "2026-11-01T00:00:00",
            "correctness": {},
            "performance": {"latency_ms": 0.001},
        },
    }
    write_lines(root / "traces" / "elementwise" / f"{SCALE_ADD}.jsonl", [trace])
    run = _import(root, tmp_path / "tasks2", "--definition", SCALE_ADD)
    assert run.code == 0, run.err
    assert run.json()["imported"][0]["solution"] == "scale_add_triton"
    provenance = json.loads((tmp_path / "tasks2" / SCALE_ADD / "provenance.json").read_text())
    standing = {c["solution"]: c["standing"] for c in provenance["candidates"]}
    assert "has 2 Python files" in standing["scale_add_split"]
    assert standing["scale_add_triton"] == "untraced"


def test_an_unknown_definition_is_an_error_naming_those_the_dataset_holds(
    tmp_path: Path,
) -> None:
    root = write_dataset(tmp_path / "ds")
    run = _import(root, tmp_path / "tasks", "--definition", "gemm")
    assert run.code == 2
    assert f"no definition gemm (it holds {RMSNORM}, {SCALE_ADD})" in run.err


@pytest.mark.parametrize("command", ["import-flashinfer", "export"])
def test_the_commands_help_imports_neither_torch_nor_flashinfer_bench(command: str) -> None:
    probe = (
        "import sys\nfrom daemon.cli import main\ntry:\n    main(sys.argv[1:])\n"
        "except SystemExit:\n    pass\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'flashinfer_bench'}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, command, "--help"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPOSITORY,
    )
    assert "Usage: accelopt" in done.stdout
    assert done.stdout.splitlines()[-1] == "[]"


def test_outputs_are_held_to_what_flashinfer_bench_judges_them_by() -> None:
    """Its benchmark's default tolerances; its low-bit evaluator's share of matching
    elements; and sampling, judged by distribution, is no task."""
    config = BenchmarkConfig()
    plain = judging(Definition.model_validate(rmsnorm_definition()))
    assert (plain.atol, plain.rtol, plain.matched_ratio) == (config.atol, config.rtol, None)
    lowbit = {**rmsnorm_definition(), "name": "moe_fp8_block_scale_h64"}
    assert judging(Definition.model_validate(lowbit)).matched_ratio == 0.95
    sampling = {**rmsnorm_definition(), "op_type": "sampling"}
    with pytest.raises(Unconvertible, match="distribution"):
        judging(Definition.model_validate(sampling))


def test_a_low_bit_definition_s_task_toml_keeps_the_share_of_matching_elements(
    tmp_path: Path,
) -> None:
    root = write_dataset(tmp_path / "ds")
    lowbit = {**rmsnorm_definition(), "name": "moe_fp8_block_scale_h64"}
    write_json(root / "definitions" / "moe" / "moe_fp8_block_scale_h64.json", lowbit)
    write_lines(
        root / "workloads" / "moe" / "moe_fp8_block_scale_h64.jsonl",
        [
            {
                "definition": lowbit["name"],
                "workload": {"uuid": "m1", "axes": {"batch_size": 2}, "inputs": {}},
            }
        ],
    )
    solution = json.loads(next((root / "solutions").rglob("rmsnorm_dps.json")).read_text())
    solution |= {"name": "lowbit_dps", "definition": lowbit["name"]}
    write_json(root / "solutions" / "moe" / "lowbit_dps.json", solution)
    run = _import(root, tmp_path / "tasks", "--definition", lowbit["name"])
    assert run.code == 0, run.err
    task = load_task(tmp_path / "tasks" / lowbit["name"])
    assert task.outputs["out"].matched_ratio == 0.95


def _changed(**change: Any) -> Any:
    return Definition.model_validate({**rmsnorm_definition(), **change})


@pytest.mark.parametrize(
    ("definition", "reason"),
    [
        (
            _changed(reference=RMSNORM_REFERENCE + "\nbatch_size = 3\n"),
            "axis 'batch_size' is also bound at module level by its reference",
        ),
        (
            _changed(reference=RMSNORM_REFERENCE + "\ndef get_inputs():\n    return {}\n"),
            "its reference binds get_inputs",
        ),
        (
            _changed(
                outputs={"forward": {"shape": ["batch_size", "hidden_size"], "dtype": "float32"}}
            ),
            "output 'forward' is not a name",
        ),
        (
            _changed(outputs={"out": {"shape": ["batch_size"], "dtype": "float4_e2m1"}}),
            "out is float4_e2m1, which accelopt's tasks do not carry",
        ),
    ],
)
def test_a_definition_the_task_format_cannot_carry_says_why(definition: Any, reason: str) -> None:
    with pytest.raises(Unconvertible, match=re.escape(reason)):
        check_names(definition)


@pytest.mark.parametrize(
    ("parameters", "convention"),
    [
        ("x, y, alpha", "value-returning (the solution does not say; its entry takes the inputs"),
        ("x, y, alpha, z", "destination-passing (the solution does not say; its entry takes"),
        ("*args", "value-returning (the solution does not say; its entry returns a value)"),
        ("*args, **kw", "destination-passing (the schema's default)"),
        ("x, y, alpha, eps=1e-6", "value-returning (the solution does not say; its entry ret"),
    ],
)
def test_a_solution_silent_on_its_style_is_called_as_its_signature_says(
    tmp_path: Path, parameters: str, convention: str
) -> None:
    """Public solutions written before destination passing became the schema's default say
    nothing of it and return their outputs: their entry's signature (the inputs alone) decides,
    where the solution does not; provenance.json records why."""
    root = write_dataset(tmp_path / "ds")
    body = {
        "x, y, alpha": "    return x * alpha + y\n",
        "*args": "    def inner():\n        return None\n    return args[0]\n",
        "*args, **kw": "    def inner():\n        return 1\n    args[-1].copy_(args[0])\n",
        "x, y, alpha, eps=1e-6": "    return x * alpha + y\n",
    }.get(parameters, "    z.copy_(x)\n")
    write_json(
        root / "solutions" / "elementwise" / SCALE_ADD / "silent.json",
        {
            "name": "scale_add_silent",
            "definition": SCALE_ADD,
            "author": "tests",
            "spec": {"language": "triton", "target_hardware": ["cuda"], "entry_point": "m.py::go"},
            "sources": [{"path": "m.py", "content": f"def go({parameters}):\n{body}"}],
        },
    )
    run = _import(root, tmp_path / "tasks", "--solution", "scale_add_silent")
    assert run.code == 0, run.err
    folder = tmp_path / "tasks" / SCALE_ADD
    provenance = json.loads((folder / "provenance.json").read_text())
    assert provenance["solution"]["calling_convention"].startswith(convention)
    task = load_task(folder)
    bridged = "run_returning_outputs" in task.kernel_source
    assert bridged is convention.startswith("destination-passing")
    assert task.kernel_function == ("run_returning_outputs" if bridged else "go")
