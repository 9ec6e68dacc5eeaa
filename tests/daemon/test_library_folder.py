"""The library folder and the watcher, fed by the library projection instead of their own
scans of the log."""

from __future__ import annotations

import shutil
from pathlib import Path

from daemon.coordinator.library import export_text, sync_library
from daemon.coordinator.watcher import TaskWatcher
from events.base import Event
from events.catalog import KernelPromoted, KernelRemoved, KernelSourceChanged
from events.codec import decode, encode
from events.projection import fold
from nkibench.suites import NKI_LEGACY_SUITE
from store.memory import MemoryEventStore
from store.projections.library import LibraryProjection, LibraryState
from store.recorder import Recorder
from tests.support import factories

KERNEL = "def kernel(x):\n    return x\n"


def library_of(store: MemoryEventStore) -> LibraryState:
    projection = LibraryProjection()
    return fold(projection, map(decode, store.read_all()), projection.initial())


def append(store: MemoryEventStore, *events: Event) -> None:
    for event in events:
        store.append("task:rms", [encode(event)])


def promotion(store: MemoryEventStore, candidate: str) -> KernelPromoted:
    event = factories.promoted("rms", "h1", candidate, 0.5, 2.0)
    return event.model_copy(update={"kernel_hash": store.put_blob(KERNEL + f"# {candidate}\n")})


def test_the_folder_follows_promotions_and_demotions(tmp_path: Path) -> None:
    store = MemoryEventStore()
    folder = tmp_path / "library"
    append(store, factories.source_changed("rms", "h1"), promotion(store, "c1"))
    (folder / "stale").mkdir(parents=True)
    current = sync_library(library_of(store), folder, store.get_text)
    assert list(current) == ["rms"]
    text = (folder / "rms" / "kernel.py").read_text(encoding="utf-8")
    assert text.startswith("# accelopt: the promoted kernel of task rms\n")
    assert "# candidate c1, promoted at event position 2 (" in text
    assert "4.000x faster than the task's own kernel: 0.5 ms against 2 ms, estimated on " in text
    assert "nkisim (trn1)" in text
    assert text.endswith(KERNEL + "# c1\n")
    assert not (folder / "stale").exists()
    assert text == export_text(current["rms"], store.get_text(current["rms"].kernel_hash))
    append(store, factories.demoted("rms", "c1"))
    assert sync_library(library_of(store), folder, store.get_text) == {}
    assert list(folder.iterdir()) == []


def test_the_watcher_starts_from_the_folder_records_the_library_keeps(tmp_path: Path) -> None:
    root = tmp_path / "kernels"
    shutil.copytree(NKI_LEGACY_SUITE / "silu", root / "silu")
    shutil.copytree(NKI_LEGACY_SUITE / "silu", root / "silu2")
    store = MemoryEventStore()
    TaskWatcher(root, Recorder(store)).rescan()
    assert len(list(store.read_all(types=["KernelSourceChanged"]))) == 2
    head = store.head()

    # a restart with nothing changed records nothing
    TaskWatcher(root, Recorder(store), library=library_of(store)).rescan(recheck=True)
    assert store.head() == head

    # a folder removed while the daemon was down is recorded as removed, once
    shutil.rmtree(root / "silu2")
    TaskWatcher(root, Recorder(store), library=library_of(store)).rescan(recheck=True)
    removed = [decode(s).event for s in store.read_all(after=head)]
    assert [type(e) for e in removed] == [KernelRemoved]
    assert library_of(store).folders[str((root / "silu2").resolve())] is None
    TaskWatcher(root, Recorder(store), library=library_of(store)).rescan(recheck=True)
    assert store.head() == head + 1

    # an edit while down is a new revision
    kernel = root / "silu" / "kernel.py"
    kernel.write_text(kernel.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    TaskWatcher(root, Recorder(store), library=library_of(store)).rescan(recheck=True)
    changed = [decode(s).event for s in store.read_all(after=head + 1)]
    assert [type(e) for e in changed] == [KernelSourceChanged]
