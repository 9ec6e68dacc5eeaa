"""The folders of one evaluation, made by the parent where no child can reach them.

A child may write whatever it likes inside the folders it is given, links included. So the
parent never follows a path inside a child's tree: every folder a child is given (its own
working folder, the folders it writes or reads) is created here, fresh, directly under a root
that only the parent can see (mode 0700, never bound into any sandbox), with `mkdir` relative to
the root's descriptor (an existing name, a link included, is an error, not a folder to reuse),
and handed to the child's user with `fchown`/`fchmod` on a descriptor opened without following
links. Binds name only these folders (`owns`), so bubblewrap never resolves a path that a child
made. What children leave behind is removed with the tree, or a folder at a time once no
later child reads it (shutil.rmtree, which works on descriptors and never follows links; the
folder's own name, in a root no child sees, cannot have been replaced). A child's disk quota is
measured over the folders it writes (nkibench.sandbox.disk).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from nkibench.sandbox.disk import DiskQuota
from nkibench.sandbox.isolation import Isolation

__all__ = ["SessionFolders"]

FOLDER_MODE = 0o770
"""Owner and group (root's, so that bubblewrap, root without capabilities until it drops to the
child's user, can enter it); nobody else."""


class SessionFolders:
    """A private root and the fresh folders made in it, one per use."""

    def __init__(
        self,
        parent: Path | None,
        owner: int | None,
        prefix: str = "nkibench-",
        *,
        passable: bool = False,
    ) -> None:
        self.root = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        if passable and owner is not None:
            # a warm process, as the children's user, reaches the folders through the root
            # (nkibench.sandbox.warm); it may pass through, never list it
            self.root.chmod(0o711)
        self.owner = owner
        """The uid children run as where it is not the parent's (a root daemon's: nobody)."""
        self._fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        self._made: set[Path] = set()
        self._counts: dict[str, int] = {}
        # a child started ahead (nkibench.harness.Session.start_ahead) makes and releases its
        # own folder from a thread of its own
        self._lock = threading.Lock()

    def fresh(self, name: str, *, child_writes: bool = True) -> Path:
        """A new, empty folder `name` (or `name.2`, `name.3`... when used before), owned by the
        children's user when they write it."""
        if "/" in name or name in ("", ".", ".."):
            raise ValueError(f"not a folder name: {name!r}")
        with self._lock:
            count = self._counts.get(name, 0) + 1
            self._counts[name] = count
        unique = name if count == 1 else f"{name}.{count}"
        os.mkdir(unique, 0o700, dir_fd=self._fd)  # FileExistsError: never reuse a name
        fd = os.open(unique, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=self._fd)
        try:
            if child_writes and self.owner is not None:
                os.fchown(fd, self.owner, 0)
            os.fchmod(fd, FOLDER_MODE if child_writes else 0o755)
        finally:
            os.close(fd)
        path = self.root / unique
        with self._lock:
            self._made.add(path)
        return path

    def quota(self, folders: Sequence[Path], limit_mb: int, isolation: Isolation) -> DiskQuota:
        """The disk quota of `folders` (made here) together, measured in a sandbox of its own
        (nkibench.sandbox.disk): the parent opens nothing inside them."""
        for folder in folders:
            self.require(folder)
        return DiskQuota(tuple(folders), isolation, limit_mb)

    def release(self, folder: Path) -> None:
        """Remove `folder`, made here, with what children left in it: nothing reads it any more,
        and its disk goes back to the job before the next child's rather than at the job's end."""
        self.require(folder)
        with self._lock:
            self._made.discard(folder)
        shutil.rmtree(folder, ignore_errors=True)

    def require(self, folder: Path) -> None:
        """Raises ValueError unless `folder` is one of the folders made here."""
        if not self.owns(folder):
            raise ValueError(f"{folder}: not a folder of this session (a child may have made it)")

    def owns(self, path: Path) -> bool:
        """Whether `path` is one of the folders made here (the only paths a child is given)."""
        with self._lock:
            return Path(path) in self._made

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> SessionFolders:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()
