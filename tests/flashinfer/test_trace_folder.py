"""`accelopt daemon --flashinfer-trace DIR`: DIR holds, in Trace Apply's layout, the promoted
kernels of the tasks imported from FlashInfer-Bench, follows promotions and demotions, and
changes by one swap of its link (daemon.flashinfer.trace_folder)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from flashinfer_bench.data import TraceSet

from daemon.coordinator.library import sync_library
from daemon.coordinator.watcher import TaskWatcher
from daemon.flashinfer.package import FlashInferError
from daemon.flashinfer.trace_folder import TraceFolder
from events.base import Event
from events.codec import decode, encode
from events.projection import fold
from store.memory import MemoryEventStore
from store.projections.library import LibraryProjection, LibraryState, Promotion
from store.recorder import Recorder
from tests.flashinfer.dataset import RMSNORM, write_dataset
from tests.support import factories
from tests.support.cli import run_cli

GPU = "NVIDIA H100 80GB HBM3"


def library_of(store: MemoryEventStore) -> LibraryState:
    projection = LibraryProjection()
    return fold(projection, map(decode, store.read_all()), projection.initial())


def promotions(
    store: MemoryEventStore, tmp_path: Path
) -> tuple[dict[str, Promotion], LibraryState]:
    """The library's promotions, as sync_library hands them on, and the library."""
    state = library_of(store)
    return sync_library(state, tmp_path / "library", store.get_text), state


def append(store: MemoryEventStore, *events: Event) -> None:
    for event in events:
        store.append(f"task:{RMSNORM}", [encode(event)])


def watched(tmp_path: Path) -> tuple[MemoryEventStore, str]:
    """The made-up dataset imported into a watched folder, recorded by the real watcher; the
    store and the task's revision hash."""
    run = run_cli("import-flashinfer", str(write_dataset(tmp_path / "ds")), str(tmp_path / "k"))
    assert run.code == 0, run.err
    store = MemoryEventStore()
    TaskWatcher(tmp_path / "k", Recorder(store), dialects=("triton",)).rescan()
    return store, library_of(store).revisions[RMSNORM].content_hash


def promote(store: MemoryEventStore, revision: str, candidate: str, latency_ms: float) -> str:
    """A candidate's kernel (the task's own, marked) timed on every workload and promoted; the
    kernel's hash."""
    kernel = (Path(library_of(store).revisions[RMSNORM].task_dir) / "kernel.py").read_text()
    kernel += f"\n# candidate {candidate}\n"
    kernel_hash = store.put_blob(kernel)
    assert kernel_hash == hashlib.sha256(kernel.encode()).hexdigest()
    profile = factories.profile(
        RMSNORM,
        revision,
        latency_ms=latency_ms,
        backend="triton",
        target="h100",
        kernel_hash=kernel_hash,
        candidate_id=candidate,
        dialect="triton",
        fingerprint={"gpu": GPU, "torch": "2.13.0", "triton": "3.4.0"},
    )
    promoted = factories.promoted(RMSNORM, revision, candidate, latency_ms, 2.0)
    append(store, profile, promoted.model_copy(update={"kernel_hash": kernel_hash}))
    return kernel_hash


def solutions(folder: Path) -> dict[str, str]:
    """Trace Apply's view: the solutions flashinfer_bench's loader finds, by name -> the
    hardware of their traces."""
    loaded = TraceSet.from_path(str(folder))
    return {
        s.name: ",".join(s.spec.target_hardware)
        for found in loaded.solutions.values()
        for s in found
    }


def test_the_folder_follows_a_promotion_then_a_demotion_by_swapping_its_link(
    tmp_path: Path,
) -> None:
    store, revision = watched(tmp_path)
    folder = TraceFolder(tmp_path / "trace")
    # nothing promoted: an empty dataset
    assert folder.sync(*promotions(store, tmp_path), store) == []
    empty = (tmp_path / "trace").resolve()
    assert solutions(tmp_path / "trace") == {}

    first = promote(store, revision, "c1", 0.5)
    assert folder.sync(*promotions(store, tmp_path), store) == [RMSNORM]
    link = tmp_path / "trace"
    assert link.is_symlink()
    assert link.resolve() != empty
    assert not empty.exists()  # the version replaced is gone
    assert solutions(link) == {f"accelopt_{RMSNORM}_{first[:12]}": GPU}
    traces = TraceSet.from_path(str(link)).traces[RMSNORM]
    assert {t.evaluation.performance.latency_ms for t in traces} == {0.5}

    held = link.resolve()
    assert folder.sync(*promotions(store, tmp_path), store) == [RMSNORM]
    assert link.resolve() == held  # nothing changed: nothing written

    append(store, factories.demoted(RMSNORM, "c1"))  # a re-verification failed
    assert folder.sync(*promotions(store, tmp_path), store) == []
    assert solutions(link) == {}

    second = promote(store, revision, "c2", 0.25)
    folder.sync(*promotions(store, tmp_path), store)
    assert solutions(link) == {f"accelopt_{RMSNORM}_{second[:12]}": GPU}
    assert [p.name for p in (tmp_path / ".trace.versions").iterdir()] == [link.resolve().name]


def test_a_task_not_from_flashinfer_bench_stays_out(tmp_path: Path) -> None:
    store, revision = watched(tmp_path)
    (Path(library_of(store).revisions[RMSNORM].task_dir) / "definition.json").unlink()
    promote(store, revision, "c1", 0.5)
    assert TraceFolder(tmp_path / "trace").sync(*promotions(store, tmp_path), store) == []


def test_a_path_that_is_no_link_of_ours_is_refused(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    with pytest.raises(FlashInferError, match="is no link accelopt made"):
        TraceFolder(tmp_path / "mine")


def test_the_daemon_refuses_such_a_path_at_start_and_leaves_it_alone(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "kernels").mkdir()
    run = run_cli(
        "daemon", "--watch", str(tmp_path / "kernels"), "--backend", "triton",
        "--flashinfer-trace", str(tmp_path / "mine"),
    )  # fmt: skip
    assert run.code == 2, run.err
    assert "is no link accelopt made" in run.err
    assert list((tmp_path / "mine").iterdir()) == []
