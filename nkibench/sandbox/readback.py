"""Reading what another child wrote: regular files beneath a folder, never through a link.

A kernel's child may leave links in its output folder (`seed_1` → the expected outputs'
folder, `output_0.npy` → an input). A reader in another child, which may see more than the
writer did, must not follow them: each component of the path is opened relative to the one
before with O_NOFOLLOW, the last must be a regular file, and its size is bounded before a byte
of it is read. Inside the sandbox this is how the comparison and the estimate read a kernel's
outputs and trace; the parent reads nothing of a child's tree at all.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
from collections.abc import Iterator
from pathlib import Path

__all__ = ["MissingFile", "UnsafeFile", "open_beneath", "read_beneath"]


class UnsafeFile(Exception):
    """A file that is missing, a link, not a regular file, or too large; the message says
    which, with the path as the writer named it."""


class MissingFile(UnsafeFile):
    """The file (or a folder on its way) does not exist."""


def _directory(name: str, parent: int) -> int:
    try:
        return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
    except FileNotFoundError:
        raise MissingFile(f"{name}: no such folder") from None
    except OSError as e:  # ELOOP (a link), ENOTDIR (not a folder)
        raise UnsafeFile(f"{name}: not a folder ({os.strerror(e.errno or 0)})") from None


@contextlib.contextmanager
def open_beneath(
    folder: Path, relative: str, limit: int
) -> Iterator[tuple[io.BufferedReader, int]]:
    """`folder/relative` opened for reading as (file, size): every component a real folder,
    the last a regular file of at most `limit` bytes. `folder` itself is trusted (the reader's
    own bind of a folder the parent made)."""
    parts = Path(relative).parts
    if not parts or Path(relative).is_absolute() or any(p in ("..", ".") for p in parts):
        raise UnsafeFile(f"{relative}: not a plain relative path")
    descriptors = [os.open(folder, os.O_RDONLY | os.O_DIRECTORY)]
    try:
        for part in parts[:-1]:
            descriptors.append(_directory(part, descriptors[-1]))
        try:
            fd = os.open(
                parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=descriptors[-1]
            )
        except FileNotFoundError:
            raise MissingFile(f"{relative}: no such file") from None
        except OSError as e:
            problem = os.strerror(e.errno or 0)
            raise UnsafeFile(f"{relative}: cannot be opened ({problem})") from None
    finally:
        for d in descriptors:
            os.close(d)
    handle = os.fdopen(fd, "rb")
    with handle:
        status = os.fstat(handle.fileno())
        if not stat.S_ISREG(status.st_mode):
            raise UnsafeFile(f"{relative}: not a regular file")
        if status.st_size > limit:
            raise UnsafeFile(f"{relative}: {status.st_size} bytes, more than the {limit} allowed")
        yield handle, status.st_size


def read_beneath(folder: Path, relative: str, limit: int) -> bytes:
    """The whole content of a regular file beneath `folder` (see open_beneath)."""
    with open_beneath(folder, relative, limit) as (handle, _):
        return handle.read(limit + 1)[:limit]
