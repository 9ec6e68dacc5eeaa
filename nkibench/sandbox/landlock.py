"""Landlock: a process confines itself to the files it was given, for good, without privileges.

A warm child (nkibench.sandbox.zygote) shares its sandbox's mount namespace with every other
child of its zygote, so the mounts cannot keep it from their folders; Landlock can. Trusted
code in the forked child, before any task or kernel code runs, names what it may read, write
and open, and the kernel denies everything else to it and to everything it starts, whatever
its user may do: no rule can be removed, and a nested ruleset can only take more away.

What restrict() denies: every file-system right of the running ABI not granted by a rule
(reading, writing, making or removing files and folders, executing, linking across folders,
truncating, device ioctls); where the ABI has them, binding and connecting TCP sockets (ABI 4),
and reaching abstract Unix sockets or signalling processes outside the caller's domain (ABI 6).
Landlock always keeps a confined process from tracing one outside its domain, which also closes
/proc/PID/mem and /proc/PID/environ of those processes to it.

ABIs: 1 (Linux 5.13) files; 2 cross-folder links and renames (REFER); 3 truncation; 4 TCP;
5 device ioctls; 6 signal and abstract-socket scopes.
"""

from __future__ import annotations

import ctypes
import os
import stat
import struct
from collections.abc import Sequence

__all__ = ["LandlockUnavailable", "abi_version", "restrict"]

CREATE_RULESET, ADD_RULE, RESTRICT_SELF = 444, 445, 446
"""The syscall numbers, the same on x86-64 and arm64."""
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
TRUNCATE, IOCTL_DEV = 1 << 14, 1 << 15
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
"""The only rights a rule on something other than a folder may carry."""
FS_RIGHTS = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1}
"""Every file-system right each ABI knows (5 and later: 1 << 16 - 1)."""
NET_RIGHTS = (1 << 0) | (1 << 1)
"""Binding and connecting TCP sockets (ABI 4)."""
SCOPES = (1 << 0) | (1 << 1)
"""Abstract Unix sockets and signals outside the domain (ABI 6)."""


class LandlockUnavailable(OSError):
    """The kernel cannot confine this process as asked; the message says why."""


def _syscall() -> ctypes._NamedFuncPointer:
    call = ctypes.CDLL(None, use_errno=True).syscall
    call.restype = ctypes.c_long
    return call


def abi_version() -> int:
    """The kernel's Landlock ABI; 0 where Landlock is absent or disabled."""
    try:
        found = _syscall()(CREATE_RULESET, None, ctypes.c_size_t(0), CREATE_RULESET_VERSION)
    except (OSError, AttributeError):
        return 0
    return max(0, int(found))


def _fail(call: str) -> LandlockUnavailable:
    number = ctypes.get_errno()
    return LandlockUnavailable(number, f"landlock {call}: {os.strerror(number)}")


def restrict(
    *,
    read_only: Sequence[str],
    writable: Sequence[str],
    devices: Sequence[str] = (),
    min_abi: int = 1,
) -> int:
    """Confine the calling thread, and every thread and process it starts afterwards, for
    good: it may read and execute `read_only` (folders or files; a missing one is skipped),
    do anything inside the `writable` folders, read and write the `devices` (character device
    files), and nothing else. Call it single-threaded (a forked child is). Returns the ABI."""
    abi = abi_version()
    if abi < min_abi:
        raise LandlockUnavailable(f"Landlock ABI {abi} found, {min_abi} needed")
    handled = FS_RIGHTS.get(abi, (1 << 16) - 1)
    attributes = struct.pack(
        "QQQ", handled, NET_RIGHTS if abi >= 4 else 0, SCOPES if abi >= 6 else 0
    )
    size = 8 if abi < 4 else (16 if abi < 6 else 24)
    call = _syscall()
    buffer = ctypes.create_string_buffer(attributes, len(attributes))
    ruleset = int(call(CREATE_RULESET, buffer, ctypes.c_size_t(size), 0))
    if ruleset < 0:
        raise _fail("create_ruleset")
    try:
        reading = EXECUTE | READ_FILE | READ_DIR
        device = (READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV) & handled
        for paths, rights, required in (
            (read_only, reading, False),
            (writable, handled, True),
            (devices, device, True),
        ):
            for path in paths:
                _add(call, ruleset, path, rights & handled, required=required)
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise _fail("prctl(PR_SET_NO_NEW_PRIVS)")
        if call(RESTRICT_SELF, ruleset, 0) != 0:
            raise _fail("restrict_self")
    finally:
        os.close(ruleset)
    return abi


def _add(
    call: ctypes._NamedFuncPointer, ruleset: int, path: str, rights: int, *, required: bool
) -> None:
    try:
        # O_NOFOLLOW: a rule names the path given, never where a link there points
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC | os.O_NOFOLLOW)
    except (FileNotFoundError, PermissionError) as e:
        # a read-only path the sandbox lacks or hides (bubblewrap's /etc as another user)
        # grants nothing; a folder the child must write, or a device it must open, is missing
        if required:
            raise FileNotFoundError(f"{path}: {e.strerror}, so it cannot be granted") from None
        return
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            rights &= FILE_RIGHTS
        if stat.S_ISLNK(os.fstat(fd).st_mode):
            return  # a link itself grants nothing; its target must be named
        rule = ctypes.create_string_buffer(struct.pack("=Qi", rights, fd), 12)
        if call(ADD_RULE, ruleset, RULE_PATH_BENEATH, rule, 0) != 0:
            raise _fail(f"add_rule({path})")
    finally:
        os.close(fd)
