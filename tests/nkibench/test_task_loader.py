"""Loading task folders: the suite loads, and every broken folder gets a message naming the
file and the problem."""

from __future__ import annotations

import ast
import os
import re
import shutil
import time
from pathlib import Path

import pytest

from nkibench.benchmarks.nki import suite_tasks
from nkibench.dialects import check_target, needs_port
from nkibench.errors import TaskError
from nkibench.policy.tolerance import Tolerance
from nkibench.sandbox.reference import load_reference
from nkibench.suites import GPU_SUITE
from nkibench.task.files import FILE_LIMITS, folder_hash, read_task_files
from nkibench.task.safe_eval import module_constants
from nkibench.task.spec import load_task
from nkibench.task.toml import FULL
from tests.support import DATA

REFERENCE = """\
import numpy as np

M = 256
N = 2 * 64


def get_inputs():
    return [np.random.normal(size=(M, N)).astype(np.float32)]


def forward(x):
    return x * 2
"""
KERNEL = """\
import neuronxcc.nki as nki


@nki.jit
def kernel(x):
    return x
"""


def make_task(
    root: Path, *, kernel: str = KERNEL, reference: str = REFERENCE, toml: str | None = None
) -> Path:
    folder = root / "task"
    folder.mkdir(exist_ok=True)
    (folder / "kernel.py").write_text(kernel)
    (folder / "reference.py").write_text(reference)
    if toml is not None:
        (folder / "task.toml").write_text(toml)
    return folder


def test_every_suite_task_loads_with_small_shapes_and_roofline_counts() -> None:
    folders = suite_tasks()
    assert len(folders) == 14
    for folder in folders:
        task = load_task(folder)
        assert task.kernel_function == "kernel"
        assert "small" in task.shape_sets
        for shapes in (FULL, "small"):
            counts = task.roofline_counts(shapes)
            assert set(counts) == {"vec_flops", "mm_flops", "bytes"}
            assert counts["bytes"] > 0
        full, small = task.roofline_counts(FULL), task.roofline_counts("small")
        assert full["bytes"] > small["bytes"]


def test_a_minimal_task_and_its_defaults(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path))
    assert task.name == "task"
    assert task.constants == {"M": 256, "N": 128}
    assert task.seeds == (0, 21, 42, 63, 84)
    assert task.rel_tol == 2e-5
    assert task.shape_values(FULL) == {"M": 256, "N": 128}
    assert task.timeout_for(FULL) == 1800.0


def test_task_toml_settings(tmp_path: Path) -> None:
    folder = make_task(
        tmp_path,
        toml="""
name = "double"
weight = 2.5
[correctness]
rel_tol = 1e-4
seeds = [1, 2]
[shapes.small]
M = 128
[roofline]
vec_flops = "M * N"
bytes = "2 * M * N * 4"
[limits]
timeout_s = {small = 30, full = 600}
memory_mb = 2048
strict_capacity = true
[tunables]
TILE = [128, 256]
""",
    )
    task = load_task(folder)
    assert (task.name, task.weight, task.rel_tol, task.seeds) == ("double", 2.5, 1e-4, (1, 2))
    assert task.shape_values("small") == {"M": 128, "N": 128}
    assert task.roofline_counts("small") == {"vec_flops": 128 * 128, "bytes": 2 * 128 * 128 * 4}
    assert (task.timeout_for("small"), task.timeout_for(FULL)) == (30.0, 600.0)
    assert (task.memory_mb, task.strict_capacity) == (2048, True)
    assert task.tunables == {"TILE": [128, 256]}
    with pytest.raises(TaskError, match="no shape set 'huge'"):
        task.shape_values("huge")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"kernel": None}, "missing kernel.py"),
        ({"reference": None}, "missing reference.py"),
        ({"kernel": b"\xff\xfe not utf-8"}, r"kernel.py: not UTF-8 \(byte 0xff at offset 0\)"),
        ({"kernel": "def kernel(:\n"}, r"kernel.py line 1: SyntaxError"),
        ({"kernel": "def other(x):\n    return x\n"}, "no module-level function named `kernel`"),
        ({"kernel": "async def kernel(x):\n    return x\n"}, "it must not be async"),
        ({"reference": "def forward(x):\n    return x\n"}, "no module-level function `get_inputs`"),
        (
            {"reference": "def get_inputs(n):\n    return []\ndef forward(x):\n    return x\n"},
            "get_inputs\\(\\) must take no arguments",
        ),
        ({"toml": "colour = 'red'"}, r"task.toml: top level: unknown key\(s\) colour"),
        ({"toml": "[correctness]\nrel_tol = 2"}, "correctness.rel_tol: must be between 0 and 1"),
        ({"toml": "[correctness]\nseeds = []"}, "correctness.seeds: must be a non-empty list"),
        (
            {"toml": "[shapes.small]\nK = 4"},
            r"\[shapes.small\]: sets K, but reference.py has no module-level K",
        ),
        ({"toml": "[shapes.full]\nM = 4"}, "`full` is reference.py's own constants"),
        (
            {"toml": "[roofline]\nbytes = 'M * Q'"},
            "roofline.bytes: unknown name 'Q': neither a constant of reference.py nor a count "
            r"\(reference.py defines no roofline_counts\(\)\)",
        ),
        (
            {"toml": "[roofline]\nbytes = \"__import__('os')\""},
            r"roofline.bytes: .* calls something other than min\(\), max\(\), ceil\(\)",
        ),
        ({"toml": "[roofline]\nbytes = 'M.real'"}, "roofline.bytes: .* is not plain arithmetic"),
        ({"toml": "[roofline]\nbytes = 'min(M)'"}, r"roofline.bytes: .* takes 2 or more"),
        ({"toml": "[roofline]\nbytes = 'M - 1000'"}, "roofline.bytes: must be a finite number"),
        ({"toml": "[roofline]\nflops = '1'"}, r"\[roofline\]: unknown key\(s\) flops"),
        ({"toml": "weight = 0"}, "weight: must be a finite number > 0"),
        ({"toml": "[limits]\nmemory_mb = 10"}, "limits.memory_mb: must be an integer ≥ 256"),
        ({"toml": "[tunables]\nTILE = []"}, "tunables.TILE: must be a non-empty list"),
        ({"toml": "this is = = not toml"}, "task.toml: "),
        ({"toml": "backend = 'cuda'"}, "backend: must be one of nkisim, neuron, triton"),
        ({"toml": "dtype = 'int8'"}, "dtype: must be one of float32, bfloat16, float16"),
        ({"toml": "backend = 'triton'"}, "a Triton task must give its dtype"),
        (
            {"toml": "backend = 'triton'\ndtype = 'bfloat16'"},
            r"\[roofline\]: a Triton task must give at least `bytes`",
        ),
        (
            {"toml": "backend = 'triton'\ndtype = 'float32'\n[roofline]\nbytes = 'M'"},
            r"backend: the kernel is legacy NKI \(neuronxcc.nki\) \(its imports\), and the "
            "triton backend runs triton kernels",
        ),
        (
            {
                "toml": "backend = 'triton'\ndialect = 'triton'\ndtype = 'float32'\n"
                "[roofline]\nbytes = 'M'"
            },
            "no module-level function named `run`",
        ),
        ({"toml": "allow_torch_compute = 'yes'"}, "allow_torch_compute: must be true or false"),
        (
            {"toml": "allow_torch_compute = true"},
            "allow_torch_compute: only a Triton task's run\\(\\) can compute with PyTorch",
        ),
    ],
)
def test_broken_task_folders_are_named_precisely(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    toml = change.get("toml")
    folder = make_task(tmp_path, toml=toml if isinstance(toml, str) else None)
    for name in ("kernel", "reference"):
        if name in change:
            path = folder / f"{name}.py"
            value = change[name]
            if value is None:
                path.unlink()
            elif isinstance(value, bytes):
                path.write_bytes(value)
            else:
                path.write_text(str(value))
    with pytest.raises(TaskError, match=message):
        load_task(folder)


def test_not_a_directory(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match="not a directory"):
        load_task(tmp_path / "nothing")


def test_folder_hash_follows_names_and_contents() -> None:
    base = folder_hash({"kernel.py": b"a", "reference.py": b"b"})
    assert base == folder_hash({"reference.py": b"b", "kernel.py": b"a"})
    assert base != folder_hash({"kernel.py": b"a", "reference.py": b"c"})
    assert base != folder_hash({"kernel.py": b"ab", "reference.py": b""})
    assert base != folder_hash({"kernel.py": b"a", "reference.py": b"b", "task.toml": b""})


def test_a_triton_task_takes_its_defaults_from_its_dtype() -> None:
    from nkibench.suites import GPU_SUITE as SUITE_GPU

    silu = load_task(SUITE_GPU / "silu")
    assert (silu.dialect, silu.kernel_function, silu.dtype) == ("triton", "run", "bfloat16")
    assert (silu.rel_tol, silu.matmul_dtype, silu.seeds) == (2e-2, "bfloat16", (0, 21, 42))
    adamw = load_task(SUITE_GPU / "adamw")
    assert (adamw.rel_tol, adamw.matmul_dtype) == (1e-3, "float32")


# --- hostile folders (issue 14): names, sizes, limits, symlinks --------------------------------


@pytest.mark.parametrize(
    "name", ["../..", "../../library/silu", "a/b", ".hidden", "", "x" * 129, "naïve", "a b"]
)
def test_a_task_name_that_is_no_plain_identifier_is_refused(tmp_path: Path, name: str) -> None:
    """A name becomes a folder of the daemon's state (`revisions/<hash>/<name>`): `../..`
    wrote task files outside it and overwrote a promoted kernel.py there."""
    folder = make_task(tmp_path, toml=f"name = {name!r}\n")
    with pytest.raises(TaskError, match=r"task.toml: name: .* is not a task name"):
        load_task(folder)


def test_plain_names_load_and_a_folder_name_is_held_to_the_same_rule(tmp_path: Path) -> None:
    # FlashInfer-Bench's definition + solution names run to 118 characters
    fib = "gdn_prefill_qk4_v8_d128_k_last_pr3001_blackwell_narrow_short_fallback_submission_v26"
    for name in ("rms_norm", "rms-norm.v2", "-x", "A9", "x" * 64, "x" * 128, fib):
        assert load_task(make_task(tmp_path, toml=f"name = {name!r}\n")).name == name
    odd = tmp_path / "my kernel"
    make_task(tmp_path).rename(odd)
    (odd / "task.toml").unlink()
    with pytest.raises(TaskError, match="the folder's name is its task's name, and 'my kernel'"):
        load_task(odd)
    (odd / "task.toml").write_text("name = 'my_kernel'\n")
    assert load_task(odd).name == "my_kernel"


def test_a_file_over_its_size_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """A 5 MB kernel.py took 2.26 GB and 35 s to parse inside the daemon. Here a sparse
    kernel.py of 8 GiB: read, it would not fit this test's memory; it is refused at once,
    naming the file, its size and the limit."""
    folder = make_task(tmp_path)
    os.truncate(folder / "kernel.py", 8 * 1024**3)
    started = time.monotonic()
    with pytest.raises(TaskError) as caught:
        load_task(folder)
    # a stat, where a read would take tens of seconds: bounded far from both, for busy hosts
    assert time.monotonic() - started < 5.0
    assert caught.value.message == (
        f"{folder / 'kernel.py'}: 8192 MiB (8589934592 bytes), over the 256 KiB limit of kernel.py"
    )
    five_mb = ("x = 1\n" * (5 * 1024 * 1024 // 6)).encode()
    (folder / "kernel.py").write_text(KERNEL)
    (folder / "reference.py").write_bytes(REFERENCE.encode() + five_mb)
    with pytest.raises(
        TaskError, match=r"reference.py: 5 MiB \(\d+ bytes\), over the 256 KiB limit"
    ):
        load_task(folder)
    (folder / "reference.py").write_text(REFERENCE)
    (folder / "task.toml").write_text("# " + "x" * FILE_LIMITS["task.toml"] + "\n")
    with pytest.raises(
        TaskError, match=r"task.toml: 64 KiB \(65539 bytes\), over the 64 KiB limit"
    ):
        load_task(folder)


@pytest.mark.parametrize(
    ("limits", "key"),
    [
        ("timeout_s = 1e12", "limits.timeout_s"),
        ("timeout_s = inf", "limits.timeout_s"),
        ("timeout_s = nan", "limits.timeout_s"),
        ("timeout_s = 21601", "limits.timeout_s"),
        ("timeout_s = {small = 30, full = inf}", "limits.timeout_s.full"),
        ("timeout_s = -1", "limits.timeout_s"),
        ("memory_mb = 1073741824", "limits.memory_mb"),
    ],
)
def test_limits_that_would_hold_a_worker_for_ever_are_refused(
    tmp_path: Path, limits: str, key: str
) -> None:
    """`timeout_s = 1e12` was accepted, and one such task held the only worker for ever."""
    folder = make_task(tmp_path, toml=f"[shapes.small]\nM = 128\n[limits]\n{limits}\n")
    with pytest.raises(TaskError, match=rf"task.toml: {re.escape(key)}: must be"):
        load_task(folder)


def test_the_longest_limits_still_load(tmp_path: Path) -> None:
    folder = make_task(tmp_path, toml="[limits]\ntimeout_s = 21600\nmemory_mb = 1048576\n")
    task = load_task(folder)
    assert (task.timeout_for(FULL), task.memory_mb) == (21600.0, 1048576)


def test_symlinks_out_of_the_watched_directory_and_loops_are_refused(tmp_path: Path) -> None:
    """A task file (or folder) that is a symlink out of the watched directory had the
    outside file copied into the log; a loop is refused too; a link inside is followed."""
    root = tmp_path / "kernels"
    root.mkdir()
    folder = make_task(root)
    outside = tmp_path / "secret.py"
    outside.write_text(KERNEL + "# the secret\n")
    (folder / "kernel.py").unlink()
    (folder / "kernel.py").symlink_to(outside)
    with pytest.raises(TaskError) as caught:
        read_task_files(folder, root=root)
    assert caught.value.message == (
        f"{folder / 'kernel.py'}: a symlink to {outside}, outside the watched directory "
        f"{root.resolve()}"
    )
    assert load_task(folder).kernel_source.endswith("# the secret\n")  # no root: a CLI's own

    (folder / "kernel.py").unlink()
    (folder / "kernel.py").symlink_to("kernel.py")
    with pytest.raises(TaskError, match=r"kernel.py: a symlink loop \(.* -> kernel.py\)"):
        read_task_files(folder, root=root)

    shared = root / "shared.py"
    shared.write_text(KERNEL)
    (folder / "kernel.py").unlink()
    (folder / "kernel.py").symlink_to(shared)
    assert load_task(folder, root=root).kernel_source == KERNEL

    (root / "out").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(TaskError, match=rf"out: a symlink to {tmp_path}, outside the watched"):
        read_task_files(root / "out", root=root)
    (root / "loop").symlink_to(root / "loop")
    with pytest.raises(TaskError, match=r"loop: a symlink loop"):
        read_task_files(root / "loop", root=root)
    (root / "inside").symlink_to(folder, target_is_directory=True)
    assert set(read_task_files(root / "inside", root=root)) == {"kernel.py", "reference.py"}


def test_a_fifo_or_a_folder_in_place_of_a_file_does_not_block_the_reader(tmp_path: Path) -> None:
    folder = make_task(tmp_path)
    (folder / "kernel.py").unlink()
    os.mkfifo(folder / "kernel.py")  # opened for reading, it would wait for a writer for ever
    with pytest.raises(TaskError, match=r"kernel.py: not a regular file"):
        load_task(folder)
    (folder / "kernel.py").unlink()
    (folder / "kernel.py").mkdir()
    with pytest.raises(TaskError, match=r"kernel.py: not a regular file"):
        load_task(folder)


TUPLE_REFERENCE = """\
import numpy as np

ROWS, COLS = 300, 1000
A = B = 4
N: int = 8
(P, Q), R = (1, 2), 3
SIZE = ROWS * COLS
STEPS = 5
STEPS += 2
SEED = np.int64(7)


def get_inputs():
    return [np.random.normal(size=(ROWS, COLS)).astype(np.float32)]


def forward(x):
    return x * 2
"""


def test_tuple_chained_and_annotated_constants_are_constants(tmp_path: Path) -> None:
    """`ROWS, COLS = 300, 1000` (and chains, annotations, nested tuples, `+=`) bind numbers a
    shape set can override and a roofline formula can use; derived constants follow."""
    folder = make_task(
        tmp_path,
        reference=TUPLE_REFERENCE,
        toml=(
            "[shapes.small]\nROWS = 48\nA = 2\n"
            "[roofline]\nvec_flops = 'SIZE * N'\nbytes = '4 * ROWS * COLS * (A + B)'\n"
        ),
    )
    task = load_task(folder)
    assert task.constants == {
        "ROWS": 300,
        "COLS": 1000,
        "A": 4,
        "B": 4,
        "N": 8,
        "P": 1,
        "Q": 2,
        "R": 3,
        "SIZE": 300_000,
        "STEPS": 7,
    }
    small = task.shape_values("small")
    assert (small["ROWS"], small["COLS"], small["A"], small["B"]) == (48, 1000, 2, 4)
    assert small["SIZE"] == 48_000  # derived from the overridden ROWS, as the reference sees it
    assert task.roofline_counts("small") == {"vec_flops": 48_000 * 8, "bytes": 4 * 48_000 * 6}
    assert task.roofline_counts(FULL) == {"vec_flops": 300_000 * 8, "bytes": 4 * 300_000 * 8}


def test_a_later_binding_that_is_not_a_number_forgets_the_constant() -> None:
    tree = ast.parse("M = 4\nM = f()\nK, L = 1\nJ = 2\nJ, *rest = 1, 2, 3\n")
    assert module_constants(tree) == {}


def test_the_reference_runs_with_the_shape_set_in_every_binding(tmp_path: Path) -> None:
    """load_reference (the child's side) replaces tuple, chained and annotated constants, and
    what is derived from them, exactly as module_constants computes them for the roofline."""
    path = tmp_path / "reference.py"
    path.write_text(TUPLE_REFERENCE)
    module = load_reference(path, {"ROWS": 48, "A": 2, "N": 16, "Q": 9})
    values = {name: getattr(module, name) for name in ("ROWS", "COLS", "A", "B", "N", "Q", "SIZE")}
    assert values == {"ROWS": 48, "COLS": 1000, "A": 2, "B": 4, "N": 16, "Q": 9, "SIZE": 48_000}
    assert module.get_inputs()[0].shape == (48, 1000)
    with pytest.raises(TaskError, match="no module-level assignment of Z"):
        load_reference(path, {"Z": 1})


def test_allow_torch_compute_is_read_for_triton_tasks() -> None:
    assert load_task(GPU_SUITE / "silu").allow_torch_compute is False
    assert load_task(DATA / "adversarial" / "tasks" / "silu_torch").allow_torch_compute is True


CURRENT_KERNEL = """\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def kernel(x):
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    return out
"""


@pytest.mark.parametrize(
    ("kernel", "toml", "dialect"),
    [
        (KERNEL, None, "nki-legacy"),
        (CURRENT_KERNEL, None, "nki"),
        (
            KERNEL.replace("import neuronxcc.nki as nki", "from neuronxcc import nki"),
            None,
            "nki-legacy",
        ),
        # task.toml's dialect wins over the imports (the static check then judges them)
        (KERNEL, 'dialect = "nki"', "nki"),
        # a kernel that imports no kernel package takes its backend's first dialect
        ("def kernel(x):\n    return x\n", None, "nki"),
    ],
)
def test_the_dialect_comes_from_the_imports_unless_task_toml_names_it(
    tmp_path: Path, kernel: str, toml: str | None, dialect: str
) -> None:
    assert load_task(make_task(tmp_path, kernel=kernel, toml=toml)).dialect == dialect


def test_a_kernel_mixing_the_two_nki_dialects_is_refused_with_both_lines(tmp_path: Path) -> None:
    mixed = CURRENT_KERNEL.replace("import nki\n", "import nki\nimport neuronxcc.nki.isa as old\n")
    with pytest.raises(TaskError) as refused:
        load_task(make_task(tmp_path, kernel=mixed))
    message = refused.value.message
    assert "kernel.py: mixes kernel dialects" in message
    assert "NKI 0.3-0.7 (the nki package) (line 1)" in message
    assert "legacy NKI (neuronxcc.nki) (line 2)" in message


def test_an_unknown_dialect_in_task_toml_is_named(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match=r"task.toml: dialect: must be one of nki, nki-legacy"):
        load_task(make_task(tmp_path, toml='dialect = "nki2"'))


@pytest.mark.parametrize(
    ("kernel", "target", "problem"),
    [
        (
            CURRENT_KERNEL,
            "trn1",
            "a nki task (NKI 0.3-0.7 (the nki package)) runs on trn2 or trn3, not trn1",
        ),
        (
            KERNEL,
            "trn3",
            "a nki-legacy task (legacy NKI (neuronxcc.nki)) runs on trn1 or trn2, "
            "not trn3; port it to current NKI with accelopt port",
        ),
    ],
)
def test_a_dialect_on_a_target_it_does_not_run_on_is_refused(
    tmp_path: Path, kernel: str, target: str, problem: str
) -> None:
    task = load_task(make_task(tmp_path, kernel=kernel))
    for fine in {"nki": ("trn2", "trn3"), "nki-legacy": ("trn1", "trn2")}[task.dialect]:
        check_target(task.dialect, fine, str(task.path))
    with pytest.raises(TaskError) as refused:
        check_target(task.dialect, target, str(task.path))
    assert problem in refused.value.message


@pytest.mark.parametrize(
    ("dialect", "target", "runs", "port"),
    [
        ("nki-legacy", "trn2", ("nki", "nki-legacy"), False),  # nkisim on trn2: runs both
        ("nki-legacy", "trn3", ("nki", "nki-legacy"), True),  # Trainium3: current NKI only
        ("nki-legacy", "trn2", ("nki",), True),  # a neuron backend on SDK >= 2.30
        ("nki-legacy", "trn1", ("nki-legacy",), False),  # SDK <= 2.29 on trn1
        ("nki-legacy", "trn1", ("nki",), False),  # current NKI cannot run on trn1 either
        ("nki", "trn3", ("nki",), False),
        ("triton", "trn3", ("nki",), False),
    ],
)
def test_a_legacy_task_is_ported_only_where_legacy_cannot_run_and_current_can(
    dialect: str, target: str, runs: tuple[str, ...], port: bool
) -> None:
    assert needs_port(dialect, target, runs) is port


# --- per-output dtypes and tolerances (issue 25, part 2) -------------------------------------


def test_outputs_tables_resolve_each_outputs_tolerance(tmp_path: Path) -> None:
    toml = (
        "[correctness]\nrel_tol = 1e-4\n"
        "[outputs.out]\nrtol = 1e-2\natol = 1e-2\nmatched_ratio = 0.95\n"
        "[outputs.lse]\ndtype = 'float32'\nrel_tol = 1e-6\n"
        "[outputs.indices]\ndtype = 'int64'\n"
        "[outputs.1]\ndtype = 'bfloat16'\n"
    )
    outputs = load_task(make_task(tmp_path, toml=toml)).outputs
    assert outputs["out"] == Tolerance(None, 1e-2, 1e-2, 0.95)  # the per-element rule alone
    assert outputs["lse"] == Tolerance(1e-6, dtype="float32")
    assert outputs["indices"] == Tolerance(None, 0.0, 0.0, dtype="int64")  # exact
    assert outputs["1"] == Tolerance(1e-4, dtype="bfloat16")  # nkisim: the task's rel_tol
    rows = load_task(DATA / "format" / "scaled_rows")
    assert rows.rel_tol == 2e-2  # bfloat16's, the task's dtype
    assert rows.outputs["row_sum"] == Tolerance(1e-3, dtype="float32")  # float32's


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[outputs.lse]\ndtype = 'float64'", r"outputs.lse.dtype: must be one of float32"),
        ("[outputs.lse]\nrel_tol = 2", r"outputs.lse.rel_tol: must be between 0 and 1"),
        ("[outputs.lse]\natol = -1\nrtol = 0", r"outputs.lse.atol: must be a finite number ≥ 0"),
        ("[outputs.lse]\natol = 1e-2", r"\[outputs.lse\]: atol and rtol go together"),
        ("[outputs.lse]\nmatched_ratio = 0.9", r"outputs.lse.matched_ratio: applies to atol"),
        ("[outputs.lse]\nrtol = 0\natol = 0\nmatched_ratio = 0", r"must be > 0 and ≤ 1"),
        ("[outputs.lse]\nslack = 1", r"\[outputs.lse\]: unknown key\(s\) slack"),
        ("[outputs.lse]\nrel_tol = 'tight'", r"outputs.lse.rel_tol: must be a number"),
        ("[outputs.'a-b']\nrel_tol = 1e-3", r"\[outputs.a-b\]: name an output as forward"),
        ("outputs = 3", r"outputs: must be a table"),
        ("[outputs]\nlse = 3", r"\[outputs.lse\]: must be a table of dtype"),
    ],
)
def test_a_broken_outputs_table_is_named_by_file_and_key(
    tmp_path: Path, toml: str, message: str
) -> None:
    with pytest.raises(TaskError, match=r"task.toml: .*" + message):
        load_task(make_task(tmp_path, toml=toml))


def test_a_triton_float8_output_needs_its_own_tolerance(tmp_path: Path) -> None:
    folder = tmp_path / "rows"
    shutil.copytree(DATA / "format" / "scaled_rows", folder)
    with (folder / "task.toml").open("a") as toml:
        toml.write("\n[outputs.out]\ndtype = 'float8_e4m3fn'\n")
    with pytest.raises(TaskError, match=r"\[outputs.out\]: no default tolerance for float8_e4m3fn"):
        load_task(folder)


@pytest.mark.parametrize(
    ("line", "found"),
    [
        ("FIXED_INPUTS = ['indices', 'indptr']", ("indices", "indptr")),
        ("FIXED_INPUTS = (1,)", (1,)),
        ("FIXED_INPUTS = 'indices'", "must be a literal list of distinct input names"),
        ("FIXED_INPUTS = [1.5]", "must be a literal list"),
        ("FIXED_INPUTS = ['a', 'a']", "must be a literal list"),
        ("FIXED_INPUTS = ['a-b']", "must be a literal list"),
        ("FIXED_INPUTS = [N]", "must be a literal list"),
        ("FIXED_INPUTS, X = ['a'], 1", "assign it alone"),
    ],
)
def test_fixed_inputs_are_read_from_reference_py_without_running_it(
    tmp_path: Path, line: str, found: object
) -> None:
    folder = make_task(tmp_path, reference=REFERENCE + "\n" + line + "\n")
    if isinstance(found, tuple):
        assert load_task(folder).fixed_inputs == found
        return
    said = r"reference.py line \d+: FIXED_INPUTS: " + re.escape(str(found))
    with pytest.raises(TaskError, match=said):
        load_task(folder)
