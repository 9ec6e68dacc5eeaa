"""Linux Landlock: a trusted forked child confines itself to the folders it was given before it
runs untrusted code.

A warm child (nkibench.sandbox.zygote) shares its sandbox's mount namespace with every other
child of its zygote, so mounts cannot keep it from their folders; Landlock can, with no
namespaces, setuid helper or privileges: the process drops rights over the file system, TCP
and other processes for good, for itself and everything it starts afterwards, and a later
ruleset can only take more away. Standard library and ctypes only, so the child can import it
before anything else.

Denied after `restrict`: every file-system right the running ABI knows outside the rules
(read-only paths: execute, read, list; writable folders: everything; device files: read,
write, truncate, ioctl); every TCP bind and connect; signals to, and abstract unix sockets of,
processes outside the domain. Landlock also always keeps a confined process from tracing one
outside its domain, which closes their /proc/PID/mem and environ. Not denied: UDP and other
socket families, pathname unix sockets it can already reach, file descriptors already open.
Threads that exist when `restrict` runs stay free: call it single-threaded (a forked child is).

What each ABI adds: 1 (Linux 5.13) file-system rights, with renames and links across folders
always denied; 2 (5.19) REFER, which allows those under rules; 3 (6.2) TRUNCATE; 4 (6.7) TCP
bind and connect; 5 (6.10) IOCTL_DEV, ioctls on device files; 6 (6.12) the signal and abstract
unix socket scopes; 7 (6.15) audit logging only, nothing more to deny.
"""

from __future__ import annotations

import ctypes
import os
import stat
import struct
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["LandlockUnavailable", "abi_version", "restrict"]

# The same numbers on x86_64 and aarch64: both use the generic syscall table for these.
_SYS_CREATE_RULESET = 444
_SYS_ADD_RULE = 445
_SYS_RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

_EXECUTE = 1 << 0
_WRITE_FILE = 1 << 1
_READ_FILE = 1 << 2
_READ_DIR = 1 << 3
_REFER = 1 << 13
_TRUNCATE = 1 << 14
_IOCTL_DEV = 1 << 15
_ABI1_FS = (1 << 13) - 1  # EXECUTE .. MAKE_SYM
# The kernel refuses (EINVAL) a rule on a non-directory that carries a folder right.
_FILE_RIGHTS = _EXECUTE | _WRITE_FILE | _READ_FILE | _TRUNCATE | _IOCTL_DEV
_NET_TCP = (1 << 0) | (1 << 1)  # BIND_TCP | CONNECT_TCP
_SCOPES = (1 << 0) | (1 << 1)  # ABSTRACT_UNIX_SOCKET | SIGNAL


class LandlockUnavailable(OSError):
    """Landlock cannot confine this process: absent, disabled, too old, or a call failed."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _call(name: str, fn: Any, *args: int | ctypes.Array[ctypes.c_char]) -> int:
    fn.restype = ctypes.c_long
    # syscall(2) and prctl(2) are variadic: a bare Python int would go out as a 32-bit int.
    result = int(fn(*(ctypes.c_long(a) if isinstance(a, int) else a for a in args)))
    if result < 0:
        err = ctypes.get_errno()
        raise LandlockUnavailable(err, f"{name}: {os.strerror(err)}")
    return result


def abi_version() -> int:
    """The kernel's Landlock ABI; 0 where Landlock is absent or disabled (never raises)."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        return _call(
            "landlock_create_ruleset",
            _libc().syscall,
            _SYS_CREATE_RULESET,
            0,
            0,
            _CREATE_RULESET_VERSION,
        )
    except OSError:  # ENOSYS: built without it; EOPNOTSUPP: not in the lsm= list
        return 0


def _fs_rights(abi: int) -> int:
    rights = _ABI1_FS
    if abi >= 2:
        rights |= _REFER
    if abi >= 3:
        rights |= _TRUNCATE
    if abi >= 5:
        rights |= _IOCTL_DEV
    return rights


def _add_rule(libc: ctypes.CDLL, ruleset: int, path: str, rights: int, *, required: bool) -> None:
    # O_NOFOLLOW: a link planted where a granted path should be must not grant its target.
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC | os.O_NOFOLLOW)
    except (FileNotFoundError, PermissionError) as e:
        # A read-only path the sandbox lacks or hides (bubblewrap's /etc seen as another user)
        # grants nothing; a folder the child must write, or a device it must open, cannot be
        # left out quietly.
        if required:
            raise FileNotFoundError(
                e.errno, f"{e.strerror}, so it cannot be granted", path
            ) from None
        return
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISLNK(mode):
            return  # a rule on a link grants nothing; its target must be named itself
        if not stat.S_ISDIR(mode):
            rights &= _FILE_RIGHTS
        attr = ctypes.create_string_buffer(struct.pack("=Qi", rights, fd), 12)
        _call(
            "landlock_add_rule", libc.syscall, _SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, attr, 0
        )
    finally:
        os.close(fd)


def restrict(
    *,
    read_only: Sequence[str],
    writable: Sequence[str],
    devices: Sequence[str] = (),
    min_abi: int = 1,
) -> int:
    """Confine the calling thread (and every thread and process it starts afterwards) for good:
    `read_only` files and folders may be executed, read and listed (one missing or hidden is
    skipped; a symbolic link is never followed, and grants nothing),
    `writable` folders get every right, `devices` (character device files) may be read,
    written, truncated and ioctl'd; nothing else on the file system, no TCP, no signals or
    abstract unix sockets outside the domain (as far as the running ABI knows these). Returns
    that ABI. Raises LandlockUnavailable where it is below `min_abi` or a call fails, and
    FileNotFoundError for a missing writable folder or device.
    """
    abi = abi_version()
    if abi < min_abi:
        raise LandlockUnavailable(
            f"Landlock ABI {abi} found (0: absent or disabled), {min_abi} needed"
        )
    fs = _fs_rights(abi)
    net = _NET_TCP if abi >= 4 else 0
    scoped = _SCOPES if abi >= 6 else 0
    # An older kernel refuses (E2BIG) a struct longer than its own unless the tail is zero;
    # pass only the fields this ABI reads.
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    attr = ctypes.create_string_buffer(struct.pack("=QQQ", fs, net, scoped)[:size], size)
    libc = _libc()
    ruleset = _call("landlock_create_ruleset", libc.syscall, _SYS_CREATE_RULESET, attr, size, 0)
    try:
        for path in read_only:
            _add_rule(libc, ruleset, path, _EXECUTE | _READ_FILE | _READ_DIR, required=False)
        for path in writable:
            _add_rule(libc, ruleset, path, fs, required=True)
        device_rights = (_READ_FILE | _WRITE_FILE | _TRUNCATE | _IOCTL_DEV) & fs
        for path in devices:
            _add_rule(libc, ruleset, path, device_rights, required=True)
        # Required unless the caller has CAP_SYS_ADMIN; it also stops a setuid program from
        # gaining rights the domain would not see.
        _call("prctl(PR_SET_NO_NEW_PRIVS)", libc.prctl, _PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        _call("landlock_restrict_self", libc.syscall, _SYS_RESTRICT_SELF, ruleset, 0)
    finally:
        os.close(ruleset)
    return abi
