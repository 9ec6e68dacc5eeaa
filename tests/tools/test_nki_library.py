"""The NKI-library survey, run as its README says (`python -m tools.nki_library.survey`) on a
made-up pair of checkouts: an nki-library with a jitted kernel, a helper module it imports
relatively and a plain function its tests launch as a kernel; an aws-neuron-sdk with one
current-NKI example beside a legacy one and a PyTorch driver, which are not read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from textwrap import dedent

from tests.support import REPOSITORY

LIBRARY = "src/nkilib_src/nkilib"
FILES = {
    f"nki-library/{LIBRARY}/core/utils/helpers.py": """
        import nki.language as nl

        def double(x):
            return nl.multiply(x, 2.0, dtype=nl.float32)
        """,
    f"nki-library/{LIBRARY}/core/scale/scale.py": '''
        import nki
        import nki.isa as nisa
        import nki.language as nl

        from ..utils.helpers import double

        @nki.jit
        def scale_kernel(a, out):
            """Scales a tile.

            Args:
                a (nl.ndarray): [128, 512] input.
            """
            tile = nl.load(a)
            nisa.tensor_tensor(dst=tile, data1=tile, data2=double(tile), op=nl.add)
            nl.store(out, value=tile)
        ''',
    f"nki-library/{LIBRARY}/core/copy/copy.py": """
        import nki.language as nl

        def copy(a, out):
            nl.store(out, value=nl.load(a))
        """,
    "nki-library/test/integration/test_copy.py": """
        from nkilib.core.copy.copy import copy

        def test_copy(run):
            run(kernel_entry=copy)
        """,
    "aws-neuron-sdk/nki/examples/add.py": """
        import nki
        import nki.language as nl

        @nki.jit
        def add_kernel(a, b):
            return nl.add(nl.load(a), nl.load(b))
        """,
    "aws-neuron-sdk/nki/examples/legacy.py": """
        from neuronxcc import nki

        @nki.jit
        def legacy_kernel(a):
            return a
        """,
    "aws-neuron-sdk/nki/examples/add_torch.py": """
        import nki

        @nki.jit
        def torch_driver(a):
            return a
        """,
}


def test_survey_counts_the_kernels_and_the_api(tmp_path: Path) -> None:
    for relative, text in FILES.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dedent(text).lstrip())

    done = subprocess.run(
        [sys.executable, "-m", "tools.nki_library.survey", "--ext", str(tmp_path)],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("3 kernels, ")
    kernels = {k["id"]: k for k in json.loads((tmp_path / "kernels.json").read_text())}
    assert sorted(kernels) == [
        "aws-neuron-sdk:nki/examples/add.py::add_kernel",
        "nki-library:core.copy.copy::copy",
        "nki-library:core.scale.scale::scale_kernel",
    ]
    scale = kernels["nki-library:core.scale.scale::scale_kernel"]
    assert scale["kind"] == "jit"
    assert scale["deps"] == ["core.utils.helpers"]
    assert scale["description"] == "Scales a tile."
    assert scale["param_docs"] == {"a": "(nl.ndarray) [128, 512] input."}
    copy = kernels["nki-library:core.copy.copy::copy"]
    assert copy["kind"] == "test entry"
    assert copy["tests"] == ["test/integration/test_copy.py"]

    api = json.loads((tmp_path / "api_usage.json").read_text())
    assert api["nl.load"]["calls"] == 4
    assert api["nl.load"]["files"] == [
        "aws-neuron-sdk:nki/examples/add.py",
        f"nki-library:{LIBRARY}/core/copy/copy.py",
        f"nki-library:{LIBRARY}/core/scale/scale.py",
    ]
    assert api["nisa.tensor_tensor"]["kwargs"] == {"dst": 1, "data1": 1, "data2": 1, "op": 1}
    assert (api["nl.float32"]["calls"], api["nl.float32"]["refs"]) == (0, 1)
    assert (api["nl.add"]["calls"], api["nl.add"]["refs"]) == (1, 1)
    assert "nl.multiply" in api
    assert not any(name.startswith("neuronxcc") for name in api)

    survey = (tmp_path / "survey.md").read_text()
    assert "Files scanned (kernel-side, current NKI): nki-library: 3, aws-neuron-sdk: 1." in survey
    assert "## Kernels (3)" in survey
