"""Is there a Neuron toolchain and a NeuronCore here? Detection never imports `neuronxcc`
into this process: it looks for the package on the path the sandboxed child will use, asks
`neuron-ls` for the devices, and reads the instance type for the Trainium generation."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.machinery import PathFinder
from importlib.metadata import distributions
from pathlib import Path

from nkibench.errors import BackendUnavailable

__all__ = ["INSTALL_HINT", "NeuronHost", "detect_neuron", "target_of_instance"]

INSTALL_HINT = (
    "on a Trainium instance (Neuron DLAMI), activate the Neuron venv or install neuronx-cc "
    "from https://pip.repos.neuron.amazonaws.com and aws-neuronx-tools (neuron-ls, "
    "neuron-profile); see README 'Running on Trainium'"
)
DMI_PRODUCT = Path("/sys/devices/virtual/dmi/id/product_name")
LIST_TIMEOUT_S = 60


@dataclass(frozen=True)
class NeuronHost:
    compiler_version: str
    cores: tuple[int, ...]
    devices: int
    instance_type: str | None
    profiler: str
    python_path: tuple[str, ...]
    path: str
    """The PATH the tools were found on (the children get the same)."""


def target_of_instance(instance_type: str | None) -> str | None:
    """ "trn1.32xlarge" → "trn1"; inf2 has the trn1 NeuronCore-v2."""
    if not instance_type:
        return None
    family = instance_type.split(".")[0].lower()
    if family.startswith("trn2"):
        return "trn2"
    if family.startswith(("trn1", "inf2")):
        return "trn1"
    return None


def _compiler(python_path: Sequence[str]) -> tuple[str | None, str]:
    """The neuronx-cc version, or None with the reason it cannot be used."""
    search = [*python_path, *sys.path]
    spec = PathFinder.find_spec("neuronxcc", search)
    if spec is None or not spec.submodule_search_locations:
        return None, "the neuronxcc package does not import"
    if not any((Path(p) / "nki").is_dir() for p in spec.submodule_search_locations):
        return None, (
            "neuronxcc is the empty PyPI placeholder (no neuronxcc.nki); the real compiler "
            "comes from AWS's package index"
        )
    for dist in distributions(path=search):
        if dist.metadata["Name"] in ("neuronx-cc", "neuronx_cc"):
            return dist.version, ""
    return "unknown", ""


def _cores(neuron_ls: str, path: str) -> tuple[tuple[int, ...], int]:
    completed = subprocess.run(
        [neuron_ls, "--json-output"],
        capture_output=True,
        text=True,
        timeout=LIST_TIMEOUT_S,
        env={"PATH": path, "LANG": "C.UTF-8"},
        check=False,
    )
    if completed.returncode != 0:
        raise BackendUnavailable(
            f"neuron-ls failed (status {completed.returncode}): {completed.stderr.strip()[:300]}"
        )
    try:
        devices = json.loads(completed.stdout[completed.stdout.find("[") :])
    except json.JSONDecodeError as e:
        raise BackendUnavailable(f"neuron-ls --json-output printed no device list: {e}") from None
    cores: list[int] = []
    for device in devices:
        ids = device.get("neuroncore_ids")
        if not ids:
            first = len(cores)
            ids = list(range(first, first + int(device.get("nc_count", 0))))
        cores.extend(int(i) for i in ids)
    return tuple(sorted(set(cores))), len(devices)


def _instance_type() -> str | None:
    try:
        return DMI_PRODUCT.read_text().strip() or None
    except OSError:
        return None


def detect_neuron(python_path: Sequence[str] = (), path: str | None = None) -> NeuronHost:
    """The Neuron host, or BackendUnavailable listing everything that is missing."""
    path = path if path is not None else os.environ.get("PATH", os.defpath)
    problems: list[str] = []
    version, why = _compiler(python_path)
    if version is None:
        problems.append(why)
    profiler = shutil.which("neuron-profile", path=path)
    if profiler is None:
        problems.append("neuron-profile is not on PATH")
    neuron_ls = shutil.which("neuron-ls", path=path)
    cores: tuple[int, ...] = ()
    devices = 0
    if neuron_ls is None:
        problems.append("neuron-ls is not on PATH")
    else:
        try:
            cores, devices = _cores(neuron_ls, path)
        except BackendUnavailable as e:
            problems.append(e.message)
        except (OSError, subprocess.TimeoutExpired) as e:
            problems.append(f"neuron-ls did not run: {e}")
        else:
            if not cores:
                problems.append("neuron-ls lists no NeuronCore")
    if problems:
        raise BackendUnavailable(
            "the neuron backend cannot run here: " + "; ".join(problems) + f" ({INSTALL_HINT})"
        )
    assert version is not None
    assert profiler is not None
    return NeuronHost(
        compiler_version=version,
        cores=cores,
        devices=devices,
        instance_type=_instance_type(),
        profiler=profiler,
        python_path=tuple(python_path),
        path=path,
    )
