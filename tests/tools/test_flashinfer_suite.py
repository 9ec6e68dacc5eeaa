"""The FlashInfer suite's assembler and survey, run as README.md says (`python -m
tools.flashinfer_suite.assemble`) on two made-up sources: a git checkout holding the tests'
small dataset under data/ beside a CUDA solution and an old-schema definition, and a plain
folder with a differing copy of a definition, one more trace (its workload only in the trace)
and a line that is not a valid Trace."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from flashinfer_bench.data import TraceSet

from tests.flashinfer.dataset import (
    BLOB,
    RMSNORM,
    WORKLOADS,
    _trace,
    rmsnorm_definition,
    write_dataset,
    write_json,
    write_lines,
)
from tests.support import REPOSITORY

ORIGIN = "https://example.invalid/fib-a.git"


def _git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def _sources(tmp_path: Path) -> tuple[Path, Path, str]:
    a = tmp_path / "a"
    data = write_dataset(a / "data")
    cuda = json.loads((data / "solutions/rmsnorm/rmsnorm_h64/rmsnorm_dps.json").read_text())
    cuda |= {"name": "rmsnorm_cuda", "spec": {**cuda["spec"], "language": "cuda"}}
    write_json(data / "solutions/rmsnorm/rmsnorm_h64/rmsnorm_cuda.json", cuda)
    old = rmsnorm_definition()
    del old["op_type"]
    write_json(a / "old/definitions/rmsnorm_old.json", old | {"name": "rmsnorm_old"})
    _git(a, "init", "--quiet")
    _git(a, "add", ".")
    _git(a, "commit", "--quiet", "-m", "made up")
    _git(a, "remote", "add", "origin", ORIGIN)

    b = tmp_path / "b"
    write_json(b / "defs/rmsnorm.json", rmsnorm_definition() | {"description": "another"})
    extra = {**WORKLOADS[RMSNORM][0], "axes": {"batch_size": 5}, "uuid": "w9"}
    trace = _trace(RMSNORM, extra, "rmsnorm_dps", 0.011)
    broken = _trace(RMSNORM, WORKLOADS[RMSNORM][0], "rmsnorm_dps", 0.011)
    del broken["evaluation"]["status"]
    write_lines(b / "runs.jsonl", [trace, broken])
    return a, b, _git(a, "rev-parse", "HEAD")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_assemble_keeps_traced_triton_solutions_with_their_provenance(tmp_path: Path) -> None:
    a, b, commit = _sources(tmp_path)
    out = tmp_path / "suite"

    done = _run("tools.flashinfer_suite.assemble", "--from", str(a), str(b), "--out", str(out))

    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["definitions"] == 1  # scale_add's only solution has no trace
    assert summary["triton_solutions"] == 2
    assert summary["traces"] == 5
    assert summary["traces_passed"] == 5
    assert summary["workloads"] == 3
    assert summary["workloads_from_traces"] == 1
    assert summary["blobs"] == 1
    assert (out / BLOB).is_file()
    loaded = TraceSet.from_path(str(out))
    assert sorted(s.name for s in loaded.solutions[RMSNORM]) == ["rmsnorm_dps", "rmsnorm_returning"]

    provenance = json.loads((out / "PROVENANCE.json").read_text())
    definition = provenance["files"][f"definitions/rmsnorm/{RMSNORM}.json"]
    assert definition == {
        "repo": ORIGIN,
        "commit": commit,
        "path": f"data/definitions/rmsnorm/{RMSNORM}.json",
    }
    lines = provenance["files"][f"traces/rmsnorm/{RMSNORM}.jsonl"]
    assert [line["line"] for line in lines] == [1, 2, 3, 4, 5]
    assert lines[-1]["from"] == {
        "repo": str(b.resolve()),
        "commit": None,
        "path": "runs.jsonl",
        "line": 1,
    }
    workloads = provenance["files"][f"workloads/rmsnorm/{RMSNORM}.jsonl"]
    assert [w["from"]["path"] for w in workloads if "derived" in w["from"]] == ["runs.jsonl"]

    refused = {(r["path"], r.get("line")): r["reason"] for r in provenance["refused"]}
    assert "op_type: Field required" in refused[("old/definitions/rmsnorm_old.json", None)]
    assert "differs from the copy kept" in refused[("defs/rmsnorm.json", None)]
    assert "evaluation.status: Field required" in refused[("runs.jsonl", 2)]
    left_out = {r["path"].rsplit("/", 1)[-1]: r["reason"] for r in provenance["left_out"]}
    assert left_out["rmsnorm_cuda.json"] == "not Triton (cuda)"
    assert left_out["scale_add_triton.json"].startswith("no trace kept")


def test_assemble_writes_nothing_inside_the_repository(tmp_path: Path) -> None:
    a, _, _ = _sources(tmp_path)
    out = REPOSITORY / "fib-suite-never-written"
    done = _run("tools.flashinfer_suite.assemble", "--from", str(a), "--out", str(out))
    assert done.returncode == 2
    assert "inside the repository" in done.stderr
    assert not out.exists()


def test_survey_counts_per_source(tmp_path: Path) -> None:
    a, b, _ = _sources(tmp_path)
    report = tmp_path / "survey.json"
    done = _run("tools.flashinfer_suite.survey", "--from", str(a), str(b), "--json", str(report))
    assert done.returncode == 0, done.stderr
    counts = json.loads(report.read_text())["all"]
    assert counts["definitions"] == 2
    assert counts["definitions_refused"] == 1
    assert counts["solutions_by_language"] == {"cuda": 1, "triton": 3}
    assert counts["triton_traced"] == 2
    assert counts["triton_traces"] == 5
    assert counts["triton_traces_by_hardware"] == {"NVIDIA H100": 5}
    assert counts["traces_refused"] == 1
    assert done.stdout.splitlines()[-1].startswith(
        "| all | 2 | 1 | 4 | 0 | 3 | 2 | 2 | 5 | 5 | 1 |"
    )
