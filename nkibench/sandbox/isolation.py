"""The operating system's boundary around untrusted code: every kernel and reference child runs
under bubblewrap.

An allow-list over Python source cannot be tight (every module reaches every other through
attributes), so the boundary is the kernel's: new PID, IPC, network, UTS and cgroup namespaces;
a mount namespace holding only read-only binds of the interpreter, its libraries and the Python
packages the child imports, the task's folder read-only, its work directory read-write, a
private /tmp and /dev/shm of bounded size (tmpfs are memory: their sizes come out of the job's
memory, nkibench.sandbox.resources), a fresh /proc that shows only the sandbox's own processes,
and a minimal /dev (plus the GPU's or the NeuronCores' device nodes, for the backends that use
them); the tmpfs that bubblewrap makes for / and /dev themselves are made read-only once the
mounts are in place (the daemon's user owns them in a user namespace). The child
dies with its parent (`--die-with-parent`), and all of the sandbox dies with the child, which
is PID 2 of its namespace. Where the daemon runs as root, the child runs as an unprivileged
user (nobody by default) with no capabilities; elsewhere as the daemon's own user, inside a
user namespace, with none.

Where bubblewrap cannot run, `Isolation.detect` refuses, unless the caller accepts the Python
sandbox alone (`--unsafe-sandbox`), which it must then say loudly. A bubblewrap older than
MIN_BWRAP (no `--size`) is refused the same way: its tmpfs would be as large as half the
host's memory, whatever the job's limit, and a sandbox that lets one job take the host is
not one to fall back to quietly.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from nkibench.errors import NkiBenchError
from nkibench.sandbox.resources import MemorySplit

__all__ = ["Isolation", "Mounts", "SandboxUnavailable", "Tmpfs"]

UNPRIVILEGED = (65534, 65534)
"""nobody:nogroup, the user a root daemon's children run as."""
PROBE_TIMEOUT_S = 10.0
MIN_BWRAP = (0, 8)
"""The first bubblewrap with `--size` (the size of a tmpfs it mounts)."""
SYSTEM_DIRECTORIES = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
SYSTEM_FILES = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/localtime",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
)
"""What a dynamically linked program needs of /etc (no secrets: not /etc/shadow)."""
INSTALL_HINT = (
    "install bubblewrap (Debian and Ubuntu: `apt install bubblewrap`; Fedora: `dnf install "
    "bubblewrap`) and allow unprivileged user namespaces, or pass --unsafe-sandbox to run "
    "kernels behind the Python-level checks alone (not a security boundary)"
)


class SandboxUnavailable(NkiBenchError):
    """The OS sandbox cannot run here; the message says why and what to do."""

    exit_code = 2


@dataclass(frozen=True)
class Mounts:
    """What a backend's children need beyond the sandbox's own view."""

    devices: tuple[str, ...] = ()
    """Device nodes bound in (a GPU's /dev/nvidia*, /dev/neuron*)."""
    read_only: tuple[str, ...] = ()
    """Directories bound read-only (a toolchain, CUDA's libraries)."""
    system: bool = False
    """/sys bound read-only (drivers read their devices' topology there)."""

    def __add__(self, other: Mounts) -> Mounts:
        return Mounts(
            self.devices + other.devices,
            self.read_only + other.read_only,
            self.system or other.system,
        )

    def within(self, other: Mounts) -> bool:
        """Whether `other` binds everything these do."""
        return (
            set(self.devices) <= set(other.devices)
            and set(self.read_only) <= set(other.read_only)
            and (other.system or not self.system)
        )


@dataclass(frozen=True)
class Tmpfs:
    """The sizes of the sandbox's tmpfs, in bytes."""

    tmp: int
    shm: int

    @classmethod
    def of(cls, split: MemorySplit) -> Tmpfs:
        return cls(split.tmp_mb * 1024 * 1024, split.shm_mb * 1024 * 1024)


PROBE_TMPFS = Tmpfs(1024 * 1024, 1024 * 1024)


@dataclass(frozen=True)
class Isolation:
    kind: Literal["bubblewrap", "unsafe"]
    bwrap: str | None = None
    reason: str = ""
    """unsafe: why bubblewrap could not run."""
    run_as: tuple[int, int] | None = field(
        default_factory=lambda: UNPRIVILEGED if os.geteuid() == 0 else None
    )
    """(uid, gid) the child switches to (a root daemon), or None: the daemon's own user."""

    @property
    def contained(self) -> bool:
        return self.kind == "bubblewrap"

    def describe(self) -> str:
        if self.kind == "bubblewrap":
            user = f"uid {self.run_as[0]}" if self.run_as else "the daemon's user"
            return f"bubblewrap ({user}, no network, private PID and mount namespaces)"
        return f"UNSAFE: Python-level checks only, no OS sandbox ({self.reason})"

    @classmethod
    def detect(cls, *, allow_unsafe: bool = False) -> Isolation:
        """bubblewrap if it runs here; otherwise the unsafe fallback when allowed, else
        SandboxUnavailable."""
        found = _program("bwrap")
        problem = "bubblewrap (bwrap) is not installed" if found is None else _too_old(found)
        if found is not None and problem is None:
            problem = _trial(found)
        if problem is None:
            return cls("bubblewrap", bwrap=found)
        if allow_unsafe:
            return cls("unsafe", reason=problem)
        raise SandboxUnavailable(f"no OS sandbox for kernels: {problem}; {INSTALL_HINT}")

    @classmethod
    def unsafe(cls, reason: str) -> Isolation:
        return cls("unsafe", reason=reason)

    @property
    def child_uid(self) -> int | None:
        """The user the children run as where it is not the daemon's own (a root daemon's
        children are nobody): the folders they write are handed to it
        (nkibench.sandbox.folders)."""
        return self.run_as[0] if self.kind == "bubblewrap" and self.run_as else None

    def visible(self, mounts: Mounts) -> list[str]:
        """What every child reads (the command's read-only binds, without a child's own
        folders), as the real paths a confinement inside the sandbox names
        (nkibench.sandbox.zygote: a warm child sees what a cold one does, no more)."""
        paths = [
            *SYSTEM_DIRECTORIES,
            *SYSTEM_FILES,
            "/proc",
            *(["/sys"] if mounts.system else []),
            *_python_paths(),
            *mounts.read_only,
        ]
        return sorted({os.path.realpath(p) for p in paths if _nameable(p)})

    def command(
        self,
        argv: Sequence[str],
        *,
        workdir: Path,
        writable: Sequence[Path],
        read_only: Sequence[Path],
        mounts: Mounts,
        tmpfs: Tmpfs,
    ) -> list[str]:
        """`argv` wrapped so that it runs inside the sandbox (unchanged when unsafe), its /tmp
        and /dev/shm of the sizes `tmpfs` gives."""
        if self.kind != "bubblewrap":
            return list(argv)
        assert self.bwrap is not None
        command = [
            self.bwrap,
            "--die-with-parent",
            "--new-session",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-net",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--hostname",
            "sandbox",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--perms",
            "1777",
            "--size",
            str(tmpfs.tmp),
            "--tmpfs",
            "/tmp",
            "--perms",
            "1777",
            "--size",
            str(tmpfs.shm),
            "--tmpfs",
            "/dev/shm",
        ]
        if self.run_as is None:
            command += ["--unshare-user", "--disable-userns"]
        else:
            # root keeps every capability inside bubblewrap: keep only what setpriv needs to
            # become the unprivileged user, which drops the rest for good
            command += ["--cap-drop", "ALL"]
            for capability in ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP"):
                command += ["--cap-add", capability]
        for directory in SYSTEM_DIRECTORIES:
            command += _bind_system(directory)
        for file in SYSTEM_FILES:
            command += ["--ro-bind-try", file, file]
        if mounts.system:
            command += ["--ro-bind", "/sys", "/sys"]
        read = _covering([*_python_paths(), *map(str, read_only), *mounts.read_only])
        written = _covering(str(folder) for folder in writable)
        command += _parents([*read, *written])
        for path in read:
            command += ["--ro-bind", path, path]
        for device in mounts.devices:
            command += ["--dev-bind-try", device, device]
        for path in written:
            command += ["--bind", path, path]
        # last, once nothing more is made in them: bubblewrap's own tmpfs, unbounded, read-only
        command += ["--remount-ro", "/dev", "--remount-ro", "/"]
        command += ["--chdir", str(workdir)]
        if self.run_as is not None:
            uid, gid = self.run_as
            command += [
                "--",
                _setpriv(),
                f"--reuid={uid}",
                f"--regid={gid}",
                "--clear-groups",
                "--inh-caps=-all",
                "--bounding-set=-all",
                "--no-new-privs",
            ]
        else:
            command.append("--")
        return [*command, *argv]


def _bind_system(directory: str) -> list[str]:
    """Merged-/usr systems have /bin, /lib... as symlinks into /usr: keep them symlinks."""
    path = Path(directory)
    if path.is_symlink():
        return ["--symlink", str(os.readlink(path)), directory]
    if path.is_dir():
        return ["--ro-bind", directory, directory]
    return []


def _parents(destinations: Sequence[str]) -> list[str]:
    """Directories that hold the binds, made 0755: bubblewrap makes missing ones 0700 as root,
    which an unprivileged child could not walk through (its Python under /root/.pyenv, say)."""
    taken = ("/proc", "/dev", "/sys", *SYSTEM_DIRECTORIES, *destinations)

    def inside(path: str) -> bool:
        return any(path == t or path.startswith(t.rstrip("/") + "/") for t in taken)

    parents = {
        str(parent)
        for destination in destinations
        for parent in Path(destination).parents
        if str(parent) not in ("/", "/tmp") and not inside(str(parent))
    }
    command: list[str] = []
    for parent in sorted(parents, key=lambda p: (p.count("/"), p)):
        command += ["--perms", "0755", "--dir", parent]
    return command


def _python_paths() -> list[str]:
    """The interpreter and every directory its imports come from: the standard library, the
    folders where packages are installed, and the packages this process imported from
    elsewhere (accelopt's own from a source checkout, nkibench, this package, among them)."""
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    # the interpreter's own installation, as named and as resolved (a venv's python is a
    # symlink into the base one, and its site-packages sit beside it)
    paths = {
        *prefixes,
        str(Path(sys.executable).parent.parent),
        str(Path(sys.executable).resolve().parent.parent),
    }
    inside_prefixes = _roots(prefixes)
    paths.update(p for p in sys.path if p and _import_root(p, inside_prefixes))
    inside_paths = _roots(paths)
    paths.update(p for p in _imported_packages() if not _inside(p, inside_paths))
    return sorted(paths)


def _roots(paths: Iterable[str]) -> tuple[str, ...]:
    """`paths` as prefixes of what lies inside them, under their names and their real paths."""
    return tuple({os.path.join(r, "") for p in paths for r in (p, os.path.realpath(p))})


def _inside(path: str, roots: tuple[str, ...]) -> bool:
    """Whether `path` lies inside one of `roots` (from _roots), as named or as resolved."""
    return path.startswith(roots) or os.path.realpath(path).startswith(roots)


def _imported_packages() -> list[str]:
    """The folder of each top-level package this process imported (a single module's file):
    what a child may import from a plain folder on sys.path, without the rest of that folder.
    Not the running script (`__main__`)."""
    found = []
    for name, module in list(sys.modules.items()):
        origin = getattr(module, "__file__", None)
        if "." in name or name == "__main__" or not isinstance(origin, str):
            continue
        path = Path(origin)
        found.append(str(path.parent if path.stem == "__init__" else path))
    return found


def _import_root(entry: str, prefixes: tuple[str, ...]) -> bool:
    """Whether the sys.path entry `entry` is where packages are installed: inside the
    interpreter's `prefixes` (from _roots), or a folder holding installed distributions (a
    user site, a `pip install --target` folder). Not the running script's own folder or a
    working directory put first on sys.path, and not a plain PYTHONPATH folder: `python
    job.py` from /tmp, or from a home folder, would otherwise show a child all of it. Nor a
    source checkout that an `*.egg-info` marks (a development install's root, its .git and
    any .env beside the packages): what was imported from it is bound, package by package."""
    if not os.path.isdir(entry):
        return False
    if _inside(os.path.join(entry, ""), prefixes):
        return True
    try:
        with os.scandir(entry) as entries:
            return any(e.name.endswith(".dist-info") for e in entries)
    except OSError:
        return False


def _nameable(path: str) -> bool:
    """Whether `path` may be bound: absolute and there. A relative entry (`.` in a PATH or
    LD_LIBRARY_PATH a backend binds, an empty one) names the daemon's working directory."""
    return bool(path) and os.path.isabs(path) and os.path.exists(path)


def _covering(paths: Iterable[str]) -> list[str]:
    """The paths that exist, under the names they are used by and the names they resolve to
    (a venv's python is a symlink into the base interpreter), without those already inside
    another one (one bind each)."""
    existing = sorted(
        {
            name
            for p in paths
            if _nameable(p)
            for name in (os.path.normpath(os.path.abspath(p)), os.path.realpath(p))
        }
    )
    kept: list[str] = []
    for path in existing:
        if not any(path == k or path.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(path)
    return kept


def _program(name: str) -> str | None:
    """A system program on PATH, else where the system keeps it (a service's PATH may be
    bare)."""
    return shutil.which(name) or shutil.which(name, path=os.defpath)


def _setpriv() -> str:
    found = _program("setpriv")
    if found is None:
        raise SandboxUnavailable(
            "the daemon runs as root and setpriv (util-linux) is missing, so its children "
            "cannot drop to an unprivileged user; install util-linux or run as a dedicated user"
        )
    return found


def _too_old(bwrap: str) -> str | None:
    """Why this bubblewrap cannot bound its tmpfs, or None when it can."""
    try:
        done = subprocess.run(
            [bwrap, "--version"],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"bubblewrap does not start: {e}"
    found = re.search(r"(\d+)\.(\d+)", done.stdout)
    version = (int(found[1]), int(found[2])) if found else (0, 0)
    if version >= MIN_BWRAP:
        return None
    return (
        f"bubblewrap {done.stdout.strip() or '(unknown version)'} is older than "
        f"{'.'.join(map(str, MIN_BWRAP))}, which cannot bound the size of the sandbox's /tmp "
        "(its --size option): a kernel could fill half of the host's memory there; upgrade "
        "bubblewrap"
    )


def _trial(bwrap: str) -> str | None:
    """Why bubblewrap cannot make the sandbox here, or None when it can."""
    isolation = Isolation("bubblewrap", bwrap=bwrap)
    try:
        argv = isolation.command(
            ["/bin/true"],
            workdir=Path("/"),
            writable=[],
            read_only=[],
            mounts=Mounts(),
            tmpfs=PROBE_TMPFS,
        )
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired, SandboxUnavailable) as e:
        return f"bubblewrap does not start: {e}"
    if done.returncode != 0:
        detail = done.stderr.strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
        return f"bubblewrap cannot create the sandbox here: {detail[0]}"
    return None
