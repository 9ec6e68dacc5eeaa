"""Phase functions for the trust tests: what code that got past every Python-level layer could do
in its own process (run by nkibench.sandbox.child like any phase, named by a test backend).

Each reads what to do from its environment's ACCELOPT_TEST_HOSTILE (the test backend's):
- `junk:<form>`: write an empty, truncated, 1 GB (sparse) or non-JSON result on the result
  channel, then end the process before the child's own result is written;
- `forge:<how>`: run the real nkisim kernel phase, then tamper with what it hands back.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import numpy as np

from nkibench.backends.nkisim.phases import TRACE_FILE
from nkibench.backends.nkisim.phases import kernel_phase as honest_kernel_phase
from nkibench.sandbox.reference import reference_phase as honest_reference_phase

JUNK = ("empty", "truncated", "huge", "not_json")
HOSTILE = "ACCELOPT_TEST_HOSTILE"


def result_channel() -> int:
    """The descriptor of the result channel: the one regular file this process holds open."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if fd > 2 and stat.S_ISREG(os.fstat(fd).st_mode):
                return fd
        except OSError:
            continue
    raise RuntimeError("no result channel")


def write_junk(form: str) -> None:
    fd = result_channel()
    os.ftruncate(fd, 0)
    if form == "truncated":
        os.pwrite(fd, b'{"ok": true, "seeds": {"0": {"inp', 0)
    elif form == "huge":
        os.pwrite(fd, b"}", 1024**3)  # sparse: 1 GB by its size, one block on disk
    elif form == "not_json":
        os.pwrite(fd, b"\x00\xffthe kernel was here", 0)
    os._exit(0)


def _junk_or(request: dict[str, Any], phase: str) -> None:
    hostile = os.environ.get(HOSTILE, "")
    if hostile.startswith(f"junk:{phase}:"):
        write_junk(hostile.rsplit(":", 1)[1])


def reference_phase(request: dict[str, Any]) -> dict[str, Any]:
    _junk_or(request, "reference")
    return honest_reference_phase(request)


def compare_phase(request: dict[str, Any]) -> dict[str, Any]:
    from nkibench.sandbox.compare import compare_phase as honest

    _junk_or(request, "compare")
    return honest(request)


def check_phase(request: dict[str, Any]) -> dict[str, Any]:
    from nkibench.backends.nkisim.estimate import estimate_phase as honest

    _junk_or(request, "check")
    return honest(request)


def _link_everything_to(target: str, out: Path, seeds: list[int]) -> None:
    for seed in seeds:
        os.symlink(f"{target}/seed_{seed}", out / f"seed_{seed}")


def kernel_phase(request: dict[str, Any]) -> dict[str, Any]:
    _junk_or(request, "kernel")
    hostile = os.environ.get(HOSTILE, "")
    out = Path(request["out_dir"])
    expected = str(Path(request["data_dir"]).parent / "expected")  # a sibling it cannot see
    if hostile.startswith("links:"):
        # where the streams and the result were files in the child's folder, read by path
        secret = hostile.partition(":")[2]
        for name in ("stderr.txt", "stdout.txt", "result.json"):
            os.symlink(secret, name)
        os.symlink(secret, out / "trace.jsonl")
        sys.stderr.write("the kernel was here\n")
        sys.stderr.flush()
        os._exit(3)
    if hostile == "forge:link_seed_folders":
        _link_everything_to(expected, out, request["seeds"])
        return {
            "ok": True,
            "seeds": {str(s): {"outputs": 1, "kernel_s": 0.0} for s in request["seeds"]},
        }
    result = honest_kernel_phase(request)
    if hostile == "forge:link_output_files":
        for seed in request["seeds"]:
            target = out / f"seed_{seed}" / "output_0.npy"
            target.unlink()
            target.symlink_to(f"{expected}/seed_{seed}/expected_0.npy")
    elif hostile == "forge:storage_without_instructions":
        # the answer written straight into the outputs: no instruction of the (well-formed)
        # trace writes them
        lines = (out / TRACE_FILE).read_text().splitlines()
        outputs = {json.loads(x)[1] for x in lines if x.startswith('["output"')}
        records = [json.loads(line) for line in lines]
        for record in records:
            if record[0] == "i" and record[4] is not None and record[4][0] in outputs:
                record[4] = None
        (out / TRACE_FILE).write_text("".join(json.dumps(r) + "\n" for r in records))
    elif hostile == "forge:no_attributes":
        # well-formed records whose attributes the cost model needs are gone
        lines = (out / TRACE_FILE).read_text().splitlines()
        records = [json.loads(line) for line in lines]
        for record in records:
            if record[0] == "i":
                record[6] = {}
        (out / TRACE_FILE).write_text("".join(json.dumps(r) + "\n" for r in records))
    elif hostile == "forge:claims":
        # everything the kernel's own result could claim about itself
        result["estimate"] = {"latency_ms": 1e-9, "latency_kind": "estimated"}
        result["latency_ms"] = 1e-9
        result["capacity"] = {"sbuf_peak_bytes": 0}
        for entry in result["seeds"].values():
            entry |= {"instructions": 1, "never_written": [0], "kernel_s": 0.0, "correct": True}
    elif hostile == "forge:unwritten":
        for seed in request["seeds"]:
            path = out / f"seed_{seed}" / "output_0.npy"
            array = np.load(path)
            array.view(np.uint32).reshape(-1)[:7] = 0x7FC0DEAD  # nkisim's never-written NaN
            np.save(path, array)
        for entry in result["seeds"].values():
            entry["never_written"] = [0]
    return result
