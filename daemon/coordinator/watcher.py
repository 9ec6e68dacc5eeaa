"""Watching the kernel directory: every task folder's revision, recorded once.

watchdog's events are hints only. A hint names the task folder it happened in (the first
path component under the watched directory); after a quiet period the folder's task files are
read (bounded, and only from inside the watched directory: nkibench.task.files.read_task_files)
and hashed, and a revision is recorded only when it differs from the folder's last record:
`KernelSourceChanged` if the folder loads, `TaskInvalid` with the loader's message if not,
`KernelRemoved` when it is gone. In-place saves and editors' atomic saves (write a temporary
file, rename it over the target) both change the hash; a save that changes nothing records
nothing. A periodic full rescan heals lost events (inotify drops them silently when its queue
overflows). Where inotify is unavailable or out of watches, polling observes.

The watched directory is untrusted: one folder's problem is that folder's record (or, where
nothing can be recorded, a log line) and never stops the others. A task's name belongs to the
folder that claimed it first (in name order within one scan) until that folder is removed or
takes another name; a newcomer claiming it is recorded invalid, and tried again when the name
is freed. A folder is also invalid for this daemon if the daemon cannot run it (another kernel
language, or no shape set named by `--shapes`); as that depends on the daemon's options, every
folder is evaluated again when the watcher starts, and a folder's record changes only when the
evaluation does.

What was recorded before the watcher started is the library projection (each folder's last
record and which folder holds which name; the daemon passes it in), so a restart records only
what changed while it was down, or what its options change.
"""

from __future__ import annotations

import errno
import hashlib
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import structlog
from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

from daemon.revisions import after, record_invalid, record_removed, record_revision
from nkibench.backends import BACKENDS
from nkibench.dialects import check_target, needs_port
from nkibench.errors import TaskError
from nkibench.task.files import KERNEL_FILE, TOML_FILE, folder_hash, read_task_files
from nkibench.task.spec import TaskSpec, load_task
from nkibench.task.toml import FULL
from store.projections.library import FolderRecord, LibraryState
from store.recorder import Recorder

__all__ = ["ObserverKind", "TaskWatcher", "printable"]

ObserverKind = Literal["auto", "inotify", "polling"]
RETRY_S = 2.0
"""A folder that could not be recorded (the database's trouble) is tried again this much
later than its quiet period."""
IGNORED_PREFIXES = (".", "#")
IGNORED_SUFFIXES = ("~", ".swp", ".swx", ".tmp", ".part")
log = structlog.get_logger("accelopt.watcher")


def printable(text: str) -> str:
    """A file name as a log or an event can hold it: bytes that are not UTF-8 (which Python
    keeps as lone surrogates) written as `\\xff`."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def problem_hash(message: str) -> str:
    """The revision of a folder whose files cannot be taken (too large, unreadable, a symlink
    out): the problem itself, so that the same problem is recorded once and a new one again."""
    return hashlib.sha256(b"unreadable\0" + message.encode("utf-8")).hexdigest()


class _Hints(FileSystemEventHandler):
    def __init__(self, hint: Callable[[str], None], root: Path) -> None:
        self.hint = hint
        self.root = root

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        for raw in (getattr(event, "dest_path", ""), event.src_path):
            if not raw:
                continue
            path = Path(os.fsdecode(raw))
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
        dialects: tuple[str, ...] = BACKENDS["nkisim"].dialects,
        library: LibraryState | None = None,
        shapes: str = FULL,
        target: str | None = None,
        ports: bool = False,
    ) -> None:
        self.root = root.resolve()
        self.dialects = dialects
        """The kernel languages this daemon's backend runs (by default nkisim's); other tasks
        are not its to use."""
        self.target = target
        """The generation it runs them on; a task whose dialect does not run there is not its
        to use either (None: the backend has no generations, a GPU)."""
        self.ports = ports
        """Whether legacy-NKI tasks that cannot run here are ported (the agents are on)."""
        self.shapes = shapes
        """The shape set this daemon profiles (`--shapes`): a task without it is not its to
        use either."""
        self.recorder = recorder
        self.observer_kind = observer
        self.debounce_s = debounce_s
        self.on_change = on_change or (lambda _task: None)
        self.on_failure = on_failure or (lambda _error, _where: None)
        """Told of a folder that could not be recorded (the database's trouble, say)."""
        state = library or LibraryState()
        self.records: dict[str, FolderRecord] = dict(state.folder_records)
        """Folder path → its last record; starts from the library projection's and follows
        what this watcher records."""
        self.owners: dict[str, str] = state.owners()
        """Task name → the folder path that holds it."""
        self._refused: dict[str, set[str]] = {}
        """Task name → folders refused because another folder holds it: tried again when it
        is freed."""
        self._warned: dict[str, str] = {}
        """Folder path → the problem last logged for a folder nothing can be recorded for."""
        self._pending: dict[str, float] = {}
        self._lock = threading.Lock()
        self._considering = threading.RLock()
        """One folder at a time: the debounce thread and the clock's rescan both consider."""
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

    def consider(self, name: str, *, recheck: bool = False) -> None:
        """Record the folder's revision if it changed (or its removal); `recheck`: evaluate
        it even if its files did not change (the daemon's options may have)."""
        with self._considering:
            self._consider(name, recheck)

    def _consider(self, name: str, recheck: bool) -> None:
        folder = self.root / name
        key = str(folder)
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            self._unrecordable(key, "", "the folder's name is not UTF-8: rename it")
            return
        last = self.records.get(key)
        held = last is not None and last.kind != "removed"
        try:
            files = read_task_files(folder, root=self.root)
        except (FileNotFoundError, NotADirectoryError):
            if last is not None and held:
                self._remove(last.task, key)
            return
        except TaskError as e:
            message = printable(e.message)  # a symlink's target may be any bytes
            self._invalid(name, key, problem_hash(message), message)
            return
        content_hash = folder_hash(files)
        same = held and last is not None and last.content_hash == content_hash
        if same and not recheck:
            return
        try:
            task = load_task(folder, root=self.root, files=files)
        except TaskError as e:
            self._invalid(name, key, content_hash, printable(e.message))
            return
        owner = self.owners.get(task.name)
        if owner is not None and owner != key:
            self._refused.setdefault(task.name, set()).add(name)
            message = (
                f"{folder / TOML_FILE}: name: {task.name!r} is the task of the folder {owner}, "
                "which claimed it first; give this folder's task another name"
            )
            self._invalid(name, key, content_hash, message)
            return
        if held and last is not None and last.task != task.name:
            self._remove(last.task, key)  # renamed: the old name is free again
        try:
            self._check_runnable(task)
        except TaskError as e:
            self._invalid(name, key, content_hash, e.message, task=task.name)
            return
        last = self.records.get(key)
        if last is not None and last.kind == "source" and last.content_hash == content_hash:
            return
        position = record_revision(self.recorder, task, files, previous=after(last))
        self._remember(key, FolderRecord(task.name, "source", content_hash, position))
        log.info("task revision", task=task.name, folder=key, hash=content_hash[:12])
        self.on_change(task.name)

    def _check_runnable(self, task: TaskSpec) -> None:
        """Raise TaskError if this daemon cannot run the task (its options, not the folder)."""
        target = self.target
        if self.ports and target is not None and needs_port(task.dialect, target, self.dialects):
            log.info("a legacy NKI task: ported to current NKI before its search", task=task.name)
            self._check_shapes(task)
            return
        if task.dialect not in self.dialects:
            raise TaskError(
                f"{task.path / TOML_FILE}: backend: a {task.dialect} task, and this daemon "
                f"runs {', '.join(self.dialects)} kernels (start one with --backend "
                f"{task.default_backend} for it)"
            )
        if target is not None:
            check_target(task.dialect, target, str(task.path / KERNEL_FILE))
        self._check_shapes(task)

    def _check_shapes(self, task: TaskSpec) -> None:
        if self.shapes != FULL and self.shapes not in task.shape_sets:
            raise TaskError(
                f"{task.path / TOML_FILE}: shapes: no shape set {self.shapes!r}, which this "
                f"daemon profiles (--shapes {self.shapes}); the task has "
                f"{', '.join(task.shape_names)}: add [shapes.{self.shapes}] to it, or restart "
                "the daemon with one of those"
            )

    def _record_name(self, name: str, key: str, task: str | None) -> str | None:
        """The name a folder's invalid record goes under: the name it holds (or loaded
        with), else the folder's own name if no other folder holds it; None if neither."""
        last = self.records.get(key)
        for candidate in (task, last.task if last and last.kind != "removed" else None, name):
            if candidate is not None and self.owners.get(candidate, key) == key:
                return candidate
        return None

    def _invalid(
        self, name: str, key: str, content_hash: str, message: str, *, task: str | None = None
    ) -> None:
        last = self.records.get(key)
        if (
            last is not None
            and last.kind == "invalid"
            and (last.content_hash, last.problem) == (content_hash, message)
        ):
            return
        record_name = self._record_name(name, key, task)
        if record_name is None:
            self._unrecordable(key, content_hash, message)
            return
        if last is not None and last.kind != "removed" and last.task != record_name:
            self._remove(last.task, key)
            last = self.records.get(key)
        position = record_invalid(
            self.recorder, record_name, key, content_hash, message, previous=after(last)
        )
        self._remember(key, FolderRecord(record_name, "invalid", content_hash, position, message))
        log.warning("task invalid", task=record_name, folder=key, problem=message)
        self.on_change(record_name)

    def _remove(self, task: str, key: str) -> None:
        frees = self.owners.get(task) == key
        position = record_removed(self.recorder, task, key, previous=after(self.records.get(key)))
        self._remember(key, FolderRecord(task, "removed", None, position))
        log.info("task removed", task=task, folder=key)
        self.on_change(task)
        if frees:  # the folders refused for the name, in name order: the first takes it
            for waiting in sorted(self._refused.pop(task, ())):
                self._consider(waiting, recheck=True)

    def _remember(self, key: str, record: FolderRecord) -> None:
        """Follow the library projection's rule: a record under a free name claims it, a
        removal by its holder frees it."""
        if record.kind != "removed":
            self.owners.setdefault(record.task, key)
        elif self.owners.get(record.task) == key:
            del self.owners[record.task]
        self.records[key] = record

    def _unrecordable(self, key: str, content_hash: str, message: str) -> None:
        """A folder nothing can be recorded for (a name that is not UTF-8, or no name to
        record it under): one log line per problem, then silence."""
        if self._warned.get(key) == content_hash + message:
            return
        self._warned[key] = content_hash + message
        log.warning("task folder left alone", folder=printable(key), problem=printable(message))

    def rescan(self, *, recheck: bool = False) -> None:
        """Compare every folder with what was recorded (heals lost or overflowed events);
        `recheck`: evaluate every folder again (at start: the options may have changed)."""
        try:
            entries = list(os.scandir(self.root))
        except OSError as e:
            log.error("the watched directory cannot be read", folder=str(self.root), error=str(e))
            return
        present = set()
        for entry in entries:
            if self._ignored(entry.name):
                continue
            try:
                if entry.is_symlink() or entry.is_dir(follow_symlinks=False):
                    present.add(entry.name)
            except OSError:
                continue
        gone = {
            Path(k).name
            for k, r in self.records.items()
            if r.kind != "removed" and Path(k).parent == self.root
        } - present
        for name in sorted(present | gone):
            try:
                self.consider(name, recheck=recheck)
            except Exception:  # one folder's failure is logged; the others are still seen
                log.exception("recording a task folder failed", folder=printable(name))

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
                    log.exception("recording a task folder failed", folder=printable(name))
                    self.on_failure(e, f"the watcher, recording {printable(name)}")
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
        self.rescan(recheck=True)
        self._thread = threading.Thread(target=self._debounce_guarded, name="watcher", daemon=True)
        self._thread.start()

    # --- as a supervised part of the daemon (coordinator.supervisor) ------------------------------

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
