"""Is there a Neuron toolchain and a NeuronCore here, which Neuron SDK is it, and which NKI
dialects can it run?

Detection never imports `neuronxcc` or `nki` into this process: it looks for the packages on
the path the sandboxed child will use and reads their installed versions, asks `neuron-ls` for
the devices, and reads the instance type for the Trainium generation.

The SDK release is not a package of its own. Its number is read off the packages it ships
(the Neuron release manifest, src/helperscripts/n2-manifest.json in aws-neuron/aws-neuron-sdk):
neuronx-cc 2.N comes with SDK 2.(N+5) (2.15 with 2.20 through 2.27 with 2.32), and each
`nki` minor with one SDK (0.3 with 2.29 ... 0.6 with 2.32; 0.7 with 2.33, by the 2.33 notes,
which postdate the manifest read; later minors are assumed to keep one SDK each). When both
are installed the later one governs: NKI 0.4 and later refuse `neuronxcc.nki` inside a
kernel whatever neuronx-cc sits beside them.

Which dialects run (nkibench.dialects):
- `nki-legacy` (`neuronxcc.nki`): the package is installed and the SDK is 2.29 or older; from
  SDK 2.30 (NKI 0.4) a legacy namespace inside a kernel is a compile error.
- `nki` (the standalone `nki` package): NKI 0.3 or later (0.1 and 0.2 were betas with other
  APIs), on the dialect's targets (Trainium2 and Trainium3, as the NKI FAQ says).
SDK 2.29 with NKI 0.3 runs both: the legacy namespace still compiles there and NKI 0.3 is the
GA release; the one rule against mixing them is per model, and each job compiles one kernel.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.machinery import PathFinder
from importlib.metadata import distributions
from pathlib import Path

from nkibench.dialects import get_dialect
from nkibench.errors import BackendUnavailable

__all__ = [
    "CURRENT",
    "FIRST_CURRENT_ONLY_SDK",
    "INSTALL_HINT",
    "LEGACY",
    "NeuronHost",
    "detect_neuron",
    "dialect_refusal",
    "runnable_dialects",
    "sdk_of",
    "target_of_instance",
]

LEGACY = "nki-legacy"
CURRENT = "nki"
FIRST_CURRENT_ONLY_SDK = (2, 30)
"""From this SDK (NKI 0.4) `neuronxcc.nki` inside a kernel is a compile error."""
FIRST_GA_NKI = (0, 3)
"""NKI 0.3 (SDK 2.29) is the first release of the `nki` dialect accelopt runs."""
NKI_SDK = {(0, 1): (2, 27), (0, 2): (2, 28), (0, 3): (2, 29), (0, 4): (2, 30)}
NKI_SDK |= {(0, 5): (2, 31), (0, 6): (2, 32), (0, 7): (2, 33)}
"""The SDK each NKI release shipped in (the release manifest up to 2.32; 0.7: SDK 2.33)."""
COMPILER_SDK_OFFSET = 5
FIRST_MAPPED_COMPILER = 15
"""neuronx-cc 2.15 (SDK 2.20) is the oldest release whose SDK the offset was checked for."""

INSTALL_HINT = (
    "on a Trainium instance (Neuron DLAMI), activate the Neuron venv, or install neuronx-cc "
    "and nki from https://pip.repos.neuron.amazonaws.com and aws-neuronx-tools (neuron-ls, "
    "neuron-explorer; neuron-profile before SDK 2.32); see README 'Running on Trainium'"
)
DMI_PRODUCT = Path("/sys/devices/virtual/dmi/id/product_name")
LIST_TIMEOUT_S = 60
VERSION = re.compile(r"^(\d+)\.(\d+)")


@dataclass(frozen=True)
class NeuronHost:
    compiler_version: str
    """neuronx-cc's version ("none": not installed, "unknown": installed without metadata)."""
    cores: tuple[int, ...]
    devices: int
    instance_type: str | None
    python_path: tuple[str, ...]
    path: str
    """The PATH the tools were found on (the children get the same)."""
    legacy_nki: bool = False
    """`neuronxcc.nki` is installed (not the empty PyPI placeholder)."""
    nki_version: str | None = None
    """The standalone `nki` package's version (None: not installed; "unknown": no metadata)."""
    sdk_version: str | None = None
    """The Neuron SDK release, "2.32" (None: its packages do not say)."""
    neuron_profile: str | None = None
    neuron_explorer: str | None = None
    nrtpy_python: str | None = None
    """An interpreter whose environment has `nrtpy` (the standalone nrtpy and nki wheels cannot
    share one environment yet), or None: latencies come from the profiler's captures."""

    def profiler(self, dialect: str) -> str:
        """The profiling CLI for a dialect's route: neuron-explorer for current NKI (it
        replaces `neuron-profile capture` from SDK 2.32, same flags), neuron-profile for
        legacy kernels as before; either stands in for the other."""
        tools = (self.neuron_profile, self.neuron_explorer)
        ordered = tools if dialect == LEGACY else tools[::-1]
        found = next((t for t in ordered if t), None)
        if found is None:
            raise BackendUnavailable("neither neuron-explorer nor neuron-profile is on PATH")
        return found

    def describe(self) -> str:
        """ "Neuron SDK 2.32 (neuronx-cc 2.27.5334.0, NKI 0.6.0)", for messages."""
        parts = [f"neuronx-cc {self.compiler_version}"]
        if self.nki_version is not None:
            parts.append(f"NKI {self.nki_version}")
        sdk = f"Neuron SDK {self.sdk_version}" if self.sdk_version else "a Neuron SDK"
        return f"{sdk} ({', '.join(parts)})"


def _pair(version: str | None) -> tuple[int, int] | None:
    match = VERSION.match(version or "")
    return (int(match[1]), int(match[2])) if match else None


def sdk_of(compiler_version: str | None, nki_version: str | None) -> tuple[int, int] | None:
    """The SDK release its packages name, the later of the two where both do."""
    found: list[tuple[int, int]] = []
    compiler = _pair(compiler_version)
    if compiler and compiler[0] == 2 and compiler[1] >= FIRST_MAPPED_COMPILER:
        found.append((2, compiler[1] + COMPILER_SDK_OFFSET))
    nki = _pair(nki_version)
    if nki and nki[0] == 0:
        found.append(NKI_SDK.get(nki, (2, 26 + nki[1])))
    return max(found) if found else None


def _sdk(host: NeuronHost) -> tuple[int, int] | None:
    return _pair(host.sdk_version)


def dialect_refusal(host: NeuronHost, target: str | None, dialect: str) -> str | None:
    """Why this host cannot run kernels of `dialect` on `target` (None: it can), naming the
    SDK and what to do."""
    sdk = _sdk(host)
    if dialect == LEGACY:
        if not host.legacy_nki:
            return f"legacy NKI (nki-legacy: neuronxcc.nki) is not installed with {host.describe()}"
        if sdk is not None and sdk >= FIRST_CURRENT_ONLY_SDK:
            return (
                f"{host.describe()} no longer compiles legacy NKI (nki-legacy): since Neuron "
                "SDK 2.30 `neuronxcc.nki` inside a kernel is a compile error; port the kernel "
                "to current NKI (accelopt port TASK_DIR --to nki) or run it on SDK 2.29 or older"
            )
    elif dialect == CURRENT:
        nki = _pair(host.nki_version)
        if host.nki_version is None:
            return (
                f"current NKI (nki: the `nki` package, 0.3 or later) is not installed with "
                f"{host.describe()}; it comes with Neuron SDK 2.29 and later"
            )
        if nki is not None and nki < FIRST_GA_NKI:
            return (
                f"NKI {host.nki_version} is a beta of current NKI; the nki dialect is NKI "
                "0.3-0.7 (Neuron SDK 2.29 and later)"
            )
        if sdk is not None and sdk < NKI_SDK[FIRST_GA_NKI]:
            return f"current NKI (nki) needs Neuron SDK 2.29 or later, not {host.describe()}"
    else:
        return f"the neuron backend runs NKI kernels, not {dialect}"
    targets = get_dialect(dialect).targets
    if target is not None and targets and target not in targets:
        return (
            f"{get_dialect(dialect).language} ({dialect}) runs on {' or '.join(targets)}, "
            f"and this host is {target}"
        )
    return None


def runnable_dialects(host: NeuronHost, target: str | None) -> tuple[str, ...]:
    """The NKI dialects this host runs on `target`, current NKI first."""
    return tuple(d for d in (CURRENT, LEGACY) if dialect_refusal(host, target, d) is None)


def target_of_instance(instance_type: str | None) -> str | None:
    """ "trn1.32xlarge" → "trn1"; inf2 has the trn1 NeuronCore-v2."""
    if not instance_type:
        return None
    family = instance_type.split(".")[0].lower()
    for generation in ("trn3", "trn2"):
        if family.startswith(generation):
            return generation
    if family.startswith(("trn1", "inf2")):
        return "trn1"
    return None


def _version(names: tuple[str, ...], search: Sequence[str]) -> str:
    for dist in distributions(path=list(search)):
        if dist.metadata["Name"] in names:
            return dist.version
    return "unknown"


def _legacy(search: Sequence[str]) -> tuple[bool, str]:
    """Whether `neuronxcc.nki` is installed, or the reason it is not."""
    spec = PathFinder.find_spec("neuronxcc", list(search))
    if spec is None or not spec.submodule_search_locations:
        return False, "the neuronxcc package does not import"
    if not any((Path(p) / "nki").is_dir() for p in spec.submodule_search_locations):
        return False, (
            "neuronxcc is the empty PyPI placeholder (no neuronxcc.nki); the real compiler "
            "comes from AWS's package index"
        )
    return True, ""


def _current(search: Sequence[str]) -> tuple[str | None, str]:
    """The standalone nki package's version, or None with the reason it cannot be used."""
    spec = PathFinder.find_spec("nki", list(search))
    if spec is None or not spec.submodule_search_locations:
        return None, "the nki package does not import"
    if PathFinder.find_spec("language", list(spec.submodule_search_locations)) is None:
        return None, (
            "nki is the empty PyPI placeholder (no nki.language); the real one comes from "
            "AWS's package index"
        )
    return _version(("nki",), search), ""


def _nrtpy(search: Sequence[str], given: str | None) -> tuple[str | None, str]:
    """The interpreter that runs nrtpy: the one named, else this one where nrtpy is on the
    children's path."""
    if given is not None:
        if not (Path(given).is_file() and os.access(given, os.X_OK)):
            return None, f"the nrtpy interpreter {given} is not an executable file"
        return given, ""
    if PathFinder.find_spec("nrtpy", list(search)) is not None:
        return sys.executable, ""
    return None, ""


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


def detect_neuron(
    python_path: Sequence[str] = (), path: str | None = None, nrtpy_python: str | None = None
) -> NeuronHost:
    """The Neuron host, or BackendUnavailable listing everything that is missing.
    `nrtpy_python`: an interpreter of an environment with nrtpy (optional)."""
    path = path if path is not None else os.environ.get("PATH", os.defpath)
    search = [*python_path, *sys.path]
    problems: list[str] = []
    legacy, legacy_why = _legacy(search)
    nki_version, nki_why = _current(search)
    if not legacy and nki_version is None:
        problems += [legacy_why, nki_why]
    has_compiler = PathFinder.find_spec("neuronxcc", search) is not None
    compiler = _version(("neuronx-cc", "neuronx_cc"), search) if has_compiler else "none"
    profile = shutil.which("neuron-profile", path=path)
    explorer = shutil.which("neuron-explorer", path=path)
    if profile is None and explorer is None:
        problems.append("neuron-profile is not on PATH (nor neuron-explorer, its successor)")
    nrtpy, nrtpy_why = _nrtpy(search, nrtpy_python)
    if nrtpy_why:
        problems.append(nrtpy_why)
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
    sdk = sdk_of(compiler, nki_version)
    return NeuronHost(
        compiler_version=compiler,
        cores=cores,
        devices=devices,
        instance_type=_instance_type(),
        python_path=tuple(python_path),
        path=path,
        legacy_nki=legacy,
        nki_version=nki_version,
        sdk_version=f"{sdk[0]}.{sdk[1]}" if sdk else None,
        neuron_profile=profile,
        neuron_explorer=explorer,
        nrtpy_python=nrtpy,
    )
