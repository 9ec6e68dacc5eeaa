"""The watcher against a hostile kernel directory (issue 14): names that climb out of the
state folder or take another folder's task, bad folders among good ones, a daemon option the
tasks lack, folders that go back to what they held, files it must not read."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

import pytest
import structlog

from daemon.coordinator.library import sync_library
from daemon.coordinator.watcher import TaskWatcher
from daemon.revisions import materialize, record_task
from events.base import Event
from events.catalog import KernelRemoved, KernelSourceChanged, TaskInvalid
from events.codec import decode, encode
from events.projection import fold
from nkibench.errors import TaskError
from nkibench.suites import NKI_LEGACY_SUITE
from nkibench.task.spec import TaskSpec, load_task
from store.base import blob_hash
from store.memory import MemoryEventStore
from store.projections.library import LibraryProjection, LibraryState
from store.recorder import Recorder
from tests.support import DATA, factories

Lifecycle = KernelSourceChanged | TaskInvalid | KernelRemoved


def lifecycle(store: MemoryEventStore) -> list[Lifecycle]:
    events: list[Event] = [decode(s).event for s in store.read_all()]
    return [e for e in events if isinstance(e, KernelSourceChanged | TaskInvalid | KernelRemoved)]


def summary(store: MemoryEventStore, after: int = 0) -> list[tuple[str, str]]:
    """(event type, task) of each lifecycle event from the `after`-th on."""
    return [(type(e).__name__, e.task) for e in lifecycle(store)[after:]]


def library_of(store: MemoryEventStore) -> LibraryState:
    projection = LibraryProjection()
    return fold(projection, map(decode, store.read_all()), projection.initial())


def start(root: Path, store: MemoryEventStore, shapes: str = "full") -> TaskWatcher:
    """A watcher as the daemon starts one: from the library, every folder evaluated."""
    watcher = TaskWatcher(root, Recorder(store), library=library_of(store), shapes=shapes)
    watcher.rescan(recheck=True)
    return watcher


def drop(root: Path, name: str, task: str | None = None) -> Path:
    """The suite's silu as folder `name`, its task.toml naming it `task` if given."""
    folder = root / name
    shutil.copytree(NKI_LEGACY_SUITE / "silu", folder)
    if task is not None:
        name_task(folder, task)
    return folder


def name_task(folder: Path, task: str) -> None:
    toml = folder / "task.toml"
    toml.write_text(f"name = {task!r}\n" + toml.read_text())


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "kernels"
    folder.mkdir()
    return folder.resolve()


# --- 5: names ------------------------------------------------------------------------------


def test_a_name_that_climbs_out_is_invalid_and_a_logged_one_is_never_written(
    root: Path, tmp_path: Path
) -> None:
    """`name = "../../library/silu"` made the daemon write the task's files outside its state
    folder and overwrite the promoted kernel.py there."""
    drop(root, "evil", task="../../library/silu")
    store = MemoryEventStore()
    start(root, store)
    [invalid] = lifecycle(store)
    assert isinstance(invalid, TaskInvalid)
    assert (invalid.task, invalid.file) == ("evil", "task.toml")
    assert "name: '../../library/silu' is not a task name" in invalid.message

    # a log written before names were checked holds such a revision and its promotion
    state = tmp_path / "state"
    old = MemoryEventStore()
    bad, good = "../../library/silu", factories.source_changed("silu", "b" * 64)
    legacy = factories.source_changed(bad, "a" * 64)
    for event in (good, factories.promoted("silu", "b" * 64, "c1", 1.0, 2.0), legacy):
        old.append("task:x", [encode(event)])
    promotion = factories.promoted(bad, "a" * 64, "c2", 1.0, 2.0)
    old.append("task:x", [encode(promotion)])
    assert set(library_of(old).promoted()) == {"silu", bad}
    kernels = {"kh-c1": "# the promoted kernel\n", "kh-c2": "# the climber's kernel\n"}
    assert set(sync_library(library_of(old), state / "library", kernels.__getitem__)) == {"silu"}
    promoted = state / "library" / "silu" / "kernel.py"
    before = promoted.read_text()
    with pytest.raises(TaskError, match=r"cannot be rebuilt: '\.\./\.\./library/silu' is not"):
        materialize(old, legacy, state / "revisions")
    assert promoted.read_text() == before
    assert before.endswith("# the promoted kernel\n")
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.py")) == [
        *(f"kernels/evil/{name}" for name in ("kernel.py", "reference.py")),
        "state/library/silu/kernel.py",
    ]


def test_a_folder_claiming_a_held_name_is_invalid_and_the_first_keeps_it(root: Path) -> None:
    """A folder that claimed another folder's task name took that task over: the library
    and `accelopt export` served its kernel, and the owner's search was left unfinished."""
    owner = drop(root, "silu")
    store = MemoryEventStore()
    watcher = start(root, store)
    attacker = drop(root, "attacker", task="silu")
    with (attacker / "kernel.py").open("a") as handle:
        handle.write("\n# the attacker's kernel\n")
    watcher.rescan()
    assert summary(store) == [("KernelSourceChanged", "silu"), ("TaskInvalid", "attacker")]
    invalid = lifecycle(store)[1]
    assert isinstance(invalid, TaskInvalid)
    assert invalid.message == (
        f"{attacker / 'task.toml'}: name: 'silu' is the task of the folder {owner}, which "
        "claimed it first; give this folder's task another name"
    )
    library = library_of(store)
    assert library.revisions["silu"].task_dir == str(owner)
    assert library.tasks["silu"].state == "stale"

    # across restarts: the same owner, nothing recorded again
    head = store.head()
    start(root, store)
    assert store.head() == head

    # the owner goes (while the daemon is down): the name is free, and the folder refused
    # for it takes it, freeing the name its invalid record held
    shutil.rmtree(owner)
    start(root, store)
    assert summary(store, 2) == [
        ("KernelRemoved", "silu"),
        ("KernelRemoved", "attacker"),
        ("KernelSourceChanged", "silu"),
    ]
    assert library_of(store).revisions["silu"].task_dir == str(attacker)


def test_two_folders_claiming_one_name_at_once_resolve_the_same_way_every_time(
    root: Path,
) -> None:
    for name in ("b", "a"):
        drop(root, name, task="rms")
    outcomes = []
    for _ in range(2):
        store = MemoryEventStore()
        start(root, store)
        outcomes.append(summary(store))
        assert library_of(store).revisions["rms"].task_dir == str(root / "a")
    assert outcomes[0] == outcomes[1] == [("KernelSourceChanged", "rms"), ("TaskInvalid", "b")]


def test_a_folder_that_takes_another_name_frees_its_old_one(root: Path) -> None:
    folder = drop(root, "rms")
    store = MemoryEventStore()
    watcher = start(root, store)
    name_task(folder, "rms2")
    watcher.rescan()
    assert summary(store) == [
        ("KernelSourceChanged", "rms"),
        ("KernelRemoved", "rms"),
        ("KernelSourceChanged", "rms2"),
    ]
    other = drop(root, "other", task="rms")
    watcher.rescan()
    assert summary(store, 3) == [("KernelSourceChanged", "rms")]
    assert library_of(store).owners() == {"rms": str(other), "rms2": str(folder)}


# --- 8: one bad folder among good ones ----------------------------------------------------------


def test_one_bad_folder_neither_stops_a_scan_nor_the_others(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder whose name is not UTF-8 ended the daemon at start (its record could not be
    stored) and ended every rescan at run time; so did a folder the daemon may not read."""
    for name in ("a", "locked", "z"):
        drop(root, name)
    os.mkdir(os.fsencode(root) + b"/bad\xff")
    shutil.copytree(NKI_LEGACY_SUITE / "silu", os.fsdecode(os.fsencode(root) + b"/bad\xff/x"))
    real_open = os.open

    def denying_open(path: object, *args: object, **kwargs: object) -> int:
        if "/locked/" in os.fsdecode(path):  # type: ignore[arg-type]
            raise PermissionError(13, "Permission denied")  # chmod 000, for a daemon not root
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", denying_open)
    store = MemoryEventStore()
    with structlog.testing.capture_logs() as logs:
        start(root, store).rescan()
    assert summary(store) == [
        ("KernelSourceChanged", "a"),
        ("TaskInvalid", "locked"),
        ("KernelSourceChanged", "z"),
    ]
    locked = lifecycle(store)[1]
    assert isinstance(locked, TaskInvalid)
    assert locked.message == (
        f"{root / 'locked' / 'kernel.py'}: permission denied (the daemon cannot read it)"
    )
    [alone] = [line for line in logs if line["event"] == "task folder left alone"]
    assert alone["folder"] == f"{root}/bad\\xff"
    assert alone["problem"] == "the folder's name is not UTF-8: rename it"


def test_a_folder_that_fails_unexpectedly_is_logged_and_the_scan_goes_on(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("a", "boom", "z"):
        drop(root, name)
    import daemon.coordinator.watcher

    real = load_task  # the watcher's own, imported from nkibench.task.spec

    def load(
        path: Path | str, *, root: Path | None = None, files: Mapping[str, bytes] | None = None
    ) -> TaskSpec:
        if Path(path).name == "boom":
            raise OSError("the disk is on fire")
        return real(path, root=root, files=files)

    monkeypatch.setattr(daemon.coordinator.watcher, "load_task", load)
    store = MemoryEventStore()
    with structlog.testing.capture_logs() as logs:
        start(root, store)
    assert summary(store) == [("KernelSourceChanged", "a"), ("KernelSourceChanged", "z")]
    assert [line["folder"] for line in logs if line["event"] == "recording a task folder failed"]
    assert [line["folder"] for line in logs if line["log_level"] == "error"] == ["boom"]


# --- 17: a shape set the task lacks --------------------------------------------------------------


def test_a_task_without_the_daemons_shape_set_is_invalid_until_a_restart_with_another(
    root: Path,
) -> None:
    """A typo in --shapes marked tasks as failing for good: a restart with the right value
    did not clear it. Now the task is invalid for that daemon only, and every start
    evaluates it again (and again: back and forth twice)."""
    folder = drop(root, "silu")
    store = MemoryEventStore()
    start(root, store, shapes="tiny")
    [invalid] = lifecycle(store)
    assert isinstance(invalid, TaskInvalid)
    assert invalid.message == (
        f"{folder / 'task.toml'}: shapes: no shape set 'tiny', which this daemon profiles "
        "(--shapes tiny); the task has full, small: add [shapes.tiny] to it, or restart the "
        "daemon with one of those"
    )
    for shapes in ("small", "small", "tiny", "full", "tiny"):
        start(root, store, shapes=shapes)
    assert [type(e).__name__ for e in lifecycle(store)] == [
        "TaskInvalid",
        "KernelSourceChanged",
        "TaskInvalid",
        "KernelSourceChanged",
        "TaskInvalid",
    ]
    changes = [e for e in lifecycle(store) if isinstance(e, KernelSourceChanged | TaskInvalid)]
    assert len({e.content_hash for e in changes}) == 1
    assert library_of(store).tasks["silu"].state == "invalid"


# --- a folder going back to what it held -------------------------------------------------------


def test_a_folder_that_goes_back_to_recorded_content_is_recorded_again(root: Path) -> None:
    """The idempotency key was `source|<folder>|<hash>`: a folder going back to a revision
    recorded before (after an invalid save, or a removal) recorded nothing, and the task
    stayed invalid, or removed."""
    folder = drop(root, "silu")
    kernel = folder / "kernel.py"
    good = kernel.read_text()
    store = MemoryEventStore()
    watcher = start(root, store)
    for _ in range(2):  # back and forth twice: the previous hash alone would repeat a key
        kernel.write_text(good.replace("def kernel(", "def kernel(("))
        watcher.rescan()
        kernel.write_text(good)
        watcher.rescan()
    assert [type(e).__name__ for e in lifecycle(store)] == [
        "KernelSourceChanged",
        "TaskInvalid",
        "KernelSourceChanged",
        "TaskInvalid",
        "KernelSourceChanged",
    ]
    assert library_of(store).tasks["silu"].state == "stale"
    shutil.move(folder, root.parent / "away")
    watcher.rescan()
    shutil.move(root.parent / "away", folder)
    watcher.rescan()
    assert summary(store, 5) == [("KernelRemoved", "silu"), ("KernelSourceChanged", "silu")]
    library = library_of(store)
    assert library.tasks["silu"].state == "stale"
    assert library.revisions["silu"].content_hash == lifecycle(store)[0].content_hash  # type: ignore[union-attr]
    head = store.head()
    start(root, store)  # and a restart records none of it again
    assert store.head() == head


# --- 9, 15: files the watcher must not read ---------------------------------------------------


def test_hostile_files_are_each_recorded_invalid_once_and_never_copied(
    root: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the secret\n")
    drop(root, "huge")
    os.truncate(root / "huge" / "kernel.py", 5 * 1024**3)  # sparse: no disk used
    drop(root, "binary")
    (root / "binary" / "kernel.py").write_bytes(b"\xff" + os.urandom(4096))
    for name in ("outward", "looping", "fifo", "undecodable"):
        (drop(root, name) / "kernel.py").unlink()
    (root / "outward" / "kernel.py").symlink_to(secret)
    os.symlink(os.fsencode(tmp_path) + b"/\xff.py", root / "undecodable" / "kernel.py")
    (root / "looping" / "kernel.py").symlink_to("x.py")
    (root / "looping" / "x.py").symlink_to("kernel.py")
    os.mkfifo(root / "fifo" / "kernel.py")
    (root / "etc").symlink_to("/etc", target_is_directory=True)
    (root / "loop").symlink_to(root / "loop")
    store = MemoryEventStore()
    watcher = start(root, store)
    invalid = {e.task: e.message for e in lifecycle(store) if isinstance(e, TaskInvalid)}
    assert not [e for e in lifecycle(store) if not isinstance(e, TaskInvalid)]
    expected = {
        "huge": "kernel.py: 5120 MiB (5368709120 bytes), over the 256 KiB limit of kernel.py",
        "binary": "kernel.py: not UTF-8",
        "outward": f"kernel.py: a symlink to {secret}, outside the watched directory {root}",
        "looping": "kernel.py: a symlink loop",
        "fifo": "kernel.py: not a regular file",
        "undecodable": f"kernel.py: a symlink to {tmp_path}/\\xff.py, which does not exist",
        "etc": "etc: a symlink to /etc, outside the watched directory",
        "loop": "loop: a symlink loop",
    }
    assert set(invalid) == set(expected)
    for name, message in expected.items():
        assert message in invalid[name], name
    assert all(blob_hash(b"the secret\n") not in str(s.data) for s in store.read_all())
    head = store.head()
    watcher.rescan()
    start(root, store)
    assert store.head() == head


def test_optimize_records_a_folder_once_and_again_after_it_changed(root: Path) -> None:
    """`accelopt optimize` records the revision it optimizes itself: once per change of the
    folder, however often it runs (the new keys name the record before)."""
    folder = drop(root, "silu")
    store = MemoryEventStore()
    recorder = Recorder(store)
    for _ in range(2):
        task = load_task(folder)
        record_task(recorder, task, library_of(store).folder_records.get(str(task.path)))
    kernel = folder / "kernel.py"
    kernel.write_text(kernel.read_text() + "# edited\n")
    task = load_task(folder)
    assert record_task(recorder, task, library_of(store).folder_records.get(str(task.path)))
    assert [type(e).__name__ for e in lifecycle(store)] == ["KernelSourceChanged"] * 2


# --- workloads ----------------------------------------------------------------------------


def test_a_tasks_workloads_and_their_files_are_recorded_and_rebuilt_for_workers(
    root: Path, tmp_path: Path
) -> None:
    """workloads.jsonl and the safetensors files it names (in a subfolder) are part of the
    revision: recorded as blobs, rebuilt by materialize, and a change to a data file alone is a
    new revision."""
    folder = root / "gather"
    shutil.copytree(DATA / "format" / "gather_workloads", folder)
    store = MemoryEventStore()
    watcher = TaskWatcher(root, Recorder(store), dialects=("triton",), library=library_of(store))
    watcher.rescan(recheck=True)
    revision = lifecycle(store)[-1]
    assert isinstance(revision, KernelSourceChanged)
    assert set(revision.files) == {
        "kernel.py",
        "reference.py",
        "task.toml",
        "workloads.jsonl",
        "blobs/indices.safetensors",
    }
    rebuilt = materialize(store, revision, tmp_path / "revisions")
    assert [w.name for w in rebuilt.workloads] == ["w0", "w1"]
    assert rebuilt.content_hash == revision.content_hash
    blob = folder / "blobs" / "indices.safetensors"
    assert (rebuilt.path / "blobs" / "indices.safetensors").read_bytes() == blob.read_bytes()
    raw = bytearray(blob.read_bytes())
    raw[-1] ^= 1  # another index, same header
    blob.write_bytes(bytes(raw))
    watcher.rescan()
    changed = lifecycle(store)[-1]
    assert isinstance(changed, KernelSourceChanged)
    assert changed.content_hash != revision.content_hash


def test_a_recorded_file_name_that_climbs_out_is_not_rebuilt(tmp_path: Path) -> None:
    store = MemoryEventStore()
    blob = store.put_blob(b"x")
    forged = KernelSourceChanged(
        task="gather",
        task_dir="/kernels/gather",
        content_hash="0" * 64,
        files={"kernel.py": blob, "../../escape.safetensors": blob},
        dialect="triton",
    )
    with pytest.raises(TaskError, match=r"'\.\./\.\./escape\.safetensors' is not a task file"):
        materialize(store, forged, tmp_path / "revisions")
    assert not (tmp_path / "escape.safetensors").exists()
