"""Upcasters: pure `dict → dict` steps that lift an old payload one schema version up.

A step is registered for (type, from_version) and returns the payload of from_version + 1;
the chain runs on read, before decoding, so old events stay readable forever and nothing
stored is ever rewritten.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SHIPPED_UPCASTERS", "Upcaster", "Upcasters"]

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Upcasters:
    """A set of upcasting steps keyed by (type name, from_version)."""

    steps: Mapping[tuple[str, int], Upcaster] = field(default_factory=dict)

    def upcast(
        self, type_name: str, version: int, data: dict[str, Any], target: int
    ) -> dict[str, Any]:
        """Apply the chain from `version` to `target`; KeyError names a missing step."""
        while version < target:
            step = self.steps.get((type_name, version))
            if step is None:
                raise KeyError(f"no upcaster for {type_name} from schema version {version}")
            data = step(data)
            version += 1
        return data


def _experience_v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    """v2 added the search and the task's operators; a v1 item has neither."""
    return {**data, "search_id": None, "operators": []}


def _experience_v2_to_v3(data: dict[str, Any]) -> dict[str, Any]:
    """v3 added the kernel language of the lesson (its code snippets are written in it).

    Before v3 there was one NKI, legacy `neuronxcc.nki`: current NKI (the `nki` package)
    arrived together with v3, so no earlier item can be in it. The language then follows from
    the backend the pair was measured on: the triton backend runs Triton, every other one
    (nkisim, neuron) ran legacy NKI."""
    backend = data.get("backend")
    return {**data, "dialect": "triton" if backend == "triton" else "nki-legacy"}


def _experience_v3_to_v4(data: dict[str, Any]) -> dict[str, Any]:
    """v4 added lessons from outside agents; every earlier item is our summarizer's."""
    return {**data, "agent": None}


def _candidate_v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    """v2 added kernels handed in by outside agents (`accelopt mcp`), with who handed them in
    and their plan; every earlier candidate is the daemon's own."""
    return {**data, "agent": None, "plan_blob": None}


def _profile_v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    """v2 added the roofline, the bound-by engine, hot lines and the estimate beside a
    measurement; a v1 profile has none of them."""
    return {
        **data,
        "model_version": None,
        "pct_of_peak": None,
        "roofline_ms": None,
        "bound_by": None,
        "hot_lines": [],
        "estimate_ms": None,
    }


def _profile_v2_to_v3(data: dict[str, Any]) -> dict[str, Any]:
    """v3 added the kernel's dialect; before, NKI meant legacy NKI, but a v2 profile does not
    say whether it was NKI or Triton: unknown."""
    return {**data, "dialect": None}


def _profile_v3_to_v4(data: dict[str, Any]) -> dict[str, Any]:
    """v4 added the autotuner's choice; a v3 profile did not record one (the autotuner was
    refused when v3 was current)."""
    return {**data, "autotuned": {}}


def _profile_v4_to_v5(data: dict[str, Any]) -> dict[str, Any]:
    """v5 added each workload's outcome; a v4 profile ran one shape set (tasks had no
    workloads when v4 was current)."""
    return {**data, "workloads": []}


def _profile_v5_to_v6(data: dict[str, Any]) -> dict[str, Any]:
    """v6 added what the kernel's run cost the host; a v5 profile did not keep it."""
    return {**data, "kernel_seconds": None}


def _profile_v6_to_v7(data: dict[str, Any]) -> dict[str, Any]:
    """v7 added a GPU's counters per launched kernel; a v6 profile had none."""
    return {**data, "gpu_kernels": [], "counters_unavailable": None}


def _source_v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    """v2 added the kernel's dialect, which a v1 revision did not record."""
    return {**data, "dialect": None}


def _daemon_started_v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    """v2 says what the kernels ran in; before, the Python checks were all there was."""
    return {**data, "sandbox": "python checks only (recorded before the OS sandbox)"}


def _daemon_started_v2_to_v3(data: dict[str, Any]) -> dict[str, Any]:
    """v3 names the target and shape set a daemon serves, which a v2 start did not say."""
    return {**data, "target": None, "shapes": None}


SHIPPED_UPCASTERS = Upcasters(
    {
        ("CandidateGenerated", 1): _candidate_v1_to_v2,
        ("DaemonStarted", 1): _daemon_started_v1_to_v2,
        ("DaemonStarted", 2): _daemon_started_v2_to_v3,
        ("ExperienceSummarized", 1): _experience_v1_to_v2,
        ("ExperienceSummarized", 2): _experience_v2_to_v3,
        ("ExperienceSummarized", 3): _experience_v3_to_v4,
        ("KernelSourceChanged", 1): _source_v1_to_v2,
        ("ProfileRecorded", 1): _profile_v1_to_v2,
        ("ProfileRecorded", 2): _profile_v2_to_v3,
        ("ProfileRecorded", 3): _profile_v3_to_v4,
        ("ProfileRecorded", 4): _profile_v4_to_v5,
        ("ProfileRecorded", 5): _profile_v5_to_v6,
        ("ProfileRecorded", 6): _profile_v6_to_v7,
    }
)
"""The upcasters of the released schema history."""
