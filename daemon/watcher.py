"""Watching the kernel directory: every task folder's revision, recorded once.

watchdog's events are hints only. A hint names the task folder it happened in (the first
path component under the watched directory); after a quiet period the folder's task files are
hashed, and a revision is recorded only when the hash differs from the last one recorded for
that folder: `KernelSourceChanged` if the folder loads, `TaskInvalid` with the loader's
message if not, `KernelRemoved` when it is gone. In-place saves and editors' atomic saves
(write a temporary file, rename it over the target) both change the hash; a save that changes
nothing records nothing. A periodic full rescan heals lost events (inotify drops them silently
when its queue overflows). Where inotify is unavailable or out of watches, polling observes.

What was recorded before the watcher started is the library projection's `folders` (the
daemon passes it in), so a restart records only what changed while it was down.
"""

from __future__ import annotations

import errno
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal

import structlog
from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

from daemon.revisions import record_invalid, record_removed, record_revision
from nkibench.errors import TaskError
from nkibench.task.spec import TASK_FILES, folder_hash, load_task
from store.recorder import Recorder

__all__ = ["ObserverKind", "TaskWatcher"]

ObserverKind = Literal["auto", "inotify", "polling"]
RETRY_S = 2.0
"""A folder that could not be recorded (the database's trouble) is tried again this much
later than its quiet period."""
IGNORED_PREFIXES = (".", "#")
IGNORED_SUFFIXES = ("~", ".swp", ".swx", ".tmp", ".part")
log = structlog.get_logger("accelopt.watcher")


def folder_files(folder: Path) -> dict[str, bytes]:
    """The task files of a folder as they are now (missing ones absent)."""
    files = {}
    for name in TASK_FILES:
        try:
            files[name] = (folder / name).read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            continue
    return files


class _Hints(FileSystemEventHandler):
    def __init__(self, hint: Callable[[str], None], root: Path) -> None:
        self.hint = hint
        self.root = root

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        for raw in (getattr(event, "dest_path", ""), event.src_path):
            path = Path(raw if isinstance(raw, str) else raw.decode())
            if not raw:
                continue
            try:
                relative = path.relative_to(self.root)
            except ValueError:
                continue
            if relative.parts:
                self.hint(relative.parts[0])


class TaskWatcher:
    def __init__(
        self,
        root: Path,
        recorder: Recorder,
        *,
        observer: ObserverKind = "auto",
        debounce_s: float = 0.4,
        on_change: Callable[[str], None] | None = None,
        on_failure: Callable[[Exception, str], None] | None = None,
        dialects: tuple[str, ...] = ("nki",),
        known: Mapping[str, str | None] | None = None,
    ) -> None:
        self.root = root.resolve()
        self.dialects = dialects
        """The kernel languages this daemon's backend runs; other tasks are not its to use."""
        self.recorder = recorder
        self.observer_kind = observer
        self.debounce_s = debounce_s
        self.on_change = on_change or (lambda _task: None)
        self.on_failure = on_failure or (lambda _error, _where: None)
        """Told of a folder that could not be recorded (the database's trouble, say)."""
        self.known: dict[str, str | None] = dict(known or {})
        """Folder path → the hash last recorded for it (None: recorded as removed); starts
        from `known`, the library projection's `folders`, and follows what this records."""
        self._pending: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._hinted = threading.Event()
        self._observer: BaseObserver | None = None
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        self.observer_name = "none"

    # --- one folder ---------------------------------------------------------------------

    @staticmethod
    def _ignored(name: str) -> bool:
        return name.startswith(IGNORED_PREFIXES) or name.endswith(IGNORED_SUFFIXES)

    def consider(self, name: str) -> None:
        """Record the folder's revision if it changed (or its removal)."""
        folder = self.root / name
        key = str(folder)
        if not folder.is_dir():
            if self.known.get(key) is not None:
                record_removed(self.recorder, name, key, self.known[key] or "")
                self.known[key] = None
                log.info("task removed", task=name, folder=key)
                self.on_change(name)
            return
        files = folder_files(folder)
        content_hash = folder_hash(files)
        if self.known.get(key) == content_hash:
            return
        try:
            task = load_task(folder)
            if task.dialect not in self.dialects:
                raise TaskError(
                    f"{folder / 'task.toml'}: backend: a {task.dialect} task, and this daemon "
                    f"runs {', '.join(self.dialects)} kernels (start one with --backend "
                    f"{task.default_backend} for it)"
                )
        except TaskError as e:
            record_invalid(self.recorder, name, key, content_hash, e.message)
            log.warning("task invalid", task=name, folder=key, problem=e.message)
        else:
            if task.content_hash != content_hash:
                return  # changed while read: the next hint or rescan records it
            record_revision(self.recorder, task)
            log.info("task revision", task=task.name, folder=key, hash=content_hash[:12])
        self.known[key] = content_hash
        self.on_change(name)

    def rescan(self) -> None:
        """Compare every folder with what was recorded (heals lost or overflowed events)."""
        present = {p.name for p in self.root.iterdir() if p.is_dir() and not self._ignored(p.name)}
        gone = {
            Path(k).name
            for k, h in self.known.items()
            if h is not None and Path(k).parent == self.root
        } - present
        for name in sorted(present | gone):
            self.consider(name)

    # --- hints and the debounce thread --------------------------------------------------

    def hint(self, name: str) -> None:
        if self._ignored(name):
            return
        with self._lock:
            self._pending[name] = time.monotonic()
        self._hinted.set()

    def _debounce(self) -> None:
        """Sleeps until a hint comes, then until the quietest folder has been quiet enough."""
        while not self._stop.is_set():
            with self._lock:
                oldest = min(self._pending.values(), default=None)
            if oldest is None:
                self._hinted.wait()
                self._hinted.clear()
                continue
            wait = oldest + self.debounce_s - time.monotonic()
            if wait > 0:
                self._stop.wait(wait)
                continue
            now = time.monotonic()
            with self._lock:
                due = [n for n, t in self._pending.items() if now - t >= self.debounce_s]
                for name in due:
                    del self._pending[name]
            for name in sorted(due):
                try:
                    self.consider(name)
                except Exception as e:
                    log.exception("recording a task folder failed", task=name)
                    self.on_failure(e, f"the watcher, recording {name}")
                    with self._lock:  # again soon, not only at the next rescan
                        self._pending.setdefault(name, time.monotonic() + RETRY_S)

    def _start_observer(self) -> BaseObserver:
        handler = _Hints(self.hint, self.root)
        if self.observer_kind != "polling":
            try:
                from watchdog.observers.inotify import InotifyObserver  # noqa: PLC0415

                inotify = InotifyObserver()
                inotify.schedule(handler, str(self.root), recursive=True)
                inotify.start()
                self.observer_name = "inotify"
                return inotify
            except (ImportError, OSError) as e:
                if self.observer_kind == "inotify":
                    raise
                limit = getattr(e, "errno", None) in (errno.ENOSPC, errno.EMFILE)
                log.warning(
                    "inotify unavailable: polling instead",
                    error=str(e),
                    hint="raise fs.inotify.max_user_watches / max_user_instances" if limit else "",
                )
        polling = PollingObserver(timeout=1.0)
        polling.schedule(handler, str(self.root), recursive=True)
        polling.start()
        self.observer_name = "polling"
        return polling

    def _debounce_guarded(self) -> None:
        try:
            self._debounce()
        except BaseException as e:
            self._failure = e
            log.exception("the watcher's thread died")

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self._observer = self._start_observer()
        log.info("watching", folder=str(self.root), observer=self.observer_name)
        self.rescan()
        self._thread = threading.Thread(target=self._debounce_guarded, name="watcher", daemon=True)
        self._thread.start()

    # --- as a supervised part of the daemon (daemon.supervisor) -------------------------

    name = "watcher"

    def alive(self) -> bool:
        """Its debounce thread and the observer's both run."""
        threads = (self._thread, self._observer)
        return all(t is not None and t.is_alive() for t in threads)

    def failure(self) -> BaseException | None:
        return self._failure

    def restart(self) -> None:
        """Stop what is left of it and start afresh (a rescan heals what it missed)."""
        self.stop()
        self._stop = threading.Event()
        self._failure = None
        self.start()

    def stop(self) -> None:
        self._stop.set()
        self._hinted.set()
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
        if self._thread is not None:
            self._thread.join(timeout=5)
