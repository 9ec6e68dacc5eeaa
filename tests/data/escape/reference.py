"""An escaping task: its reference (the user's own code, unrestricted Python, but run only in
the sandboxed reference child) tries everything a kernel that got past the Python-level checks
could try, and puts what it found in its error message, which is recorded. OUTSIDE, PORT and TAG
are replaced by the test. (A kernel cannot get this far: the static check refuses
`typing.sys.modules["os"]` and the like, tests/data/adversarial.)"""

import importlib
import os

import numpy as np

M = 128
N = 512
OUTSIDE = "/nonexistent/escaped.txt"
PORT = 1
TAG = "987654321"


def _read(path):
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            return os.read(fd, 1 << 20).decode("utf-8", "replace")
        finally:
            os.close(fd)
    except Exception as e:
        return "unreadable " + str(e)


def _attempts():
    found = ["ppid " + str(os.getppid()), _read("/proc/" + str(os.getppid()) + "/environ")]
    found.append(_read("/proc/" + str(os.getppid()) + "/cmdline"))
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            found.append(pid + ": " + _read("/proc/" + pid + "/environ"))
    try:
        fd = os.open(OUTSIDE, os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, b"escaped")
        os.close(fd)
        found.append("wrote outside")
    except Exception as e:
        found.append("no write " + str(e))
    try:
        socket = importlib.import_module("socket")
        connection = socket.create_connection(("127.0.0.1", PORT), timeout=2)
        connection.sendall(b"escaped")
        found.append("connected")
    except Exception as e:
        found.append("no connection " + str(e))
    child = os.fork()
    if child == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv("/bin/sleep", ["sleep", TAG])
        os.kill(os.getpid(), 9)
    os.waitpid(child, 0)
    return found


def get_inputs():
    raise RuntimeError("escaped: " + " | ".join(_attempts()))


def forward(x):
    return x / (1.0 + np.exp(-x))
