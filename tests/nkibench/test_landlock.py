"""Landlock (nkibench.sandbox.landlock): what a confined process may still reach. A confinement
is for good, so each test confines a fresh interpreter, which reports what it tried as JSON."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nkibench.sandbox import landlock
from tests.support import REPOSITORY

ABI = landlock.abi_version()
pytestmark = pytest.mark.skipif(ABI == 0, reason="this kernel has no Landlock (or it is disabled)")

PRELUDE = """
import json, os, signal, socket, subprocess, sys
from pathlib import Path
from nkibench.sandbox import landlock
spec = json.loads(sys.argv[1])
if spec["confine"]:
    landlock.restrict(
        read_only=spec["read_only"], writable=spec["writable"], devices=spec["devices"]
    )
def attempt(action):
    try:
        return f"done: {action()!r}"[:100]
    except Exception as e:
        return f"refused: {type(e).__name__}"
"""


def _python_paths(tmp_path: Path) -> list[str]:
    """What an interpreter reads to start and import: never a folder above the test's own."""
    paths = {sys.prefix, sys.base_prefix, str(REPOSITORY), *(p for p in sys.path if p)}
    paths |= {"/usr", "/lib", "/lib64", "/bin", "/etc", "/proc"}
    return sorted(p for p in paths if os.path.isdir(p) and not tmp_path.is_relative_to(p))


def _run(tmp_path: Path, body: str, *, confine: bool = True, **spec: Any) -> dict[str, Any]:
    spec = {
        "read_only": _python_paths(tmp_path),
        "writable": [],
        "devices": [d for d in ("/dev/null", "/dev/zero", "/dev/urandom") if os.path.exists(d)],
        "confine": confine,
        **spec,
    }
    environment = {**os.environ, "PYTHONPATH": str(REPOSITORY), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", PRELUDE + body, json.dumps(spec)],
        capture_output=True,
        text=True,
        cwd=REPOSITORY,
        env=environment,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return found


@pytest.fixture
def folders(tmp_path: Path) -> dict[str, Path]:
    own, other, shelf = tmp_path / "own", tmp_path / "other", tmp_path / "shelf"
    for folder in (own, other, shelf):
        folder.mkdir()
    (other / "secret").write_text("secret")
    (shelf / "book").write_text("book")
    (tmp_path / "loose.txt").write_text("loose")
    (tmp_path / "beside.txt").write_text("beside")
    return {"own": own, "other": other, "shelf": shelf}


def test_a_confined_process_reaches_only_what_it_was_given(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    own, other, shelf = folders["own"], folders["other"], folders["shelf"]
    body = """
own, other, shelf, tmp = (Path(spec[k]) for k in ("own", "other", "shelf", "tmp"))
print(json.dumps({
    "write_own": attempt(lambda: (own / "mine").write_text("mine")),
    "folder_in_own": attempt(lambda: ((own / "sub").mkdir(), os.rmdir(own / "sub"))),
    "truncate_own": attempt(lambda: os.truncate(own / "mine", 2)),
    "read_other": attempt(lambda: (other / "secret").read_text()),
    "list_other": attempt(lambda: os.listdir(other)),
    "create_other": attempt(lambda: (other / "new").write_text("x")),
    "read_shelf": attempt(lambda: (shelf / "book").read_text()),
    "list_shelf": attempt(lambda: os.listdir(shelf)),
    "write_shelf": attempt(lambda: (shelf / "book").open("a").write("x")),
    "create_in_shelf": attempt(lambda: (shelf / "new").write_text("x")),
    "read_loose_file": attempt(lambda: (tmp / "loose.txt").read_text()),
    "write_loose_file": attempt(lambda: (tmp / "loose.txt").write_text("x")),
    "read_beside": attempt(lambda: (tmp / "beside.txt").read_text()),
    "dev_null": attempt(lambda: open("/dev/null", "w").write("x")),
    "late_import": attempt(lambda: __import__("decimal").Decimal(1)),
}))
"""
    found = _run(
        tmp_path,
        body,
        writable=[str(own)],
        read_only=[*_python_paths(tmp_path), str(shelf), str(tmp_path / "loose.txt")],
        own=str(own),
        other=str(other),
        shelf=str(shelf),
        tmp=str(tmp_path),
    )
    for allowed in ("write_own", "folder_in_own", "read_shelf", "dev_null", "late_import"):
        assert found[allowed].startswith("done"), (allowed, found[allowed])
    assert found["list_shelf"] == "done: ['book']"
    assert found["read_loose_file"] == "done: 'loose'"
    assert found["truncate_own"] == "done: None"
    for refused in (
        "read_other",
        "list_other",
        "create_other",
        "write_shelf",
        "create_in_shelf",
        "write_loose_file",
        "read_beside",
    ):
        assert found[refused] == "refused: PermissionError", (refused, found[refused])
    assert (own / "mine").read_text() == "mi"
    assert not (other / "new").exists()
    assert not (shelf / "new").exists()
    assert (shelf / "book").read_text() == "book"
    assert (tmp_path / "loose.txt").read_text() == "loose"


def test_a_symbolic_link_grants_nothing_beyond_itself(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    own, other = folders["own"], folders["other"]
    (own / "planted").symlink_to(other / "secret")  # there before the child confined itself
    (tmp_path / "door").symlink_to(other)  # a writable path that is a link
    (tmp_path / "window").symlink_to(other)  # a read-only path that is a link
    body = """
own, door, window = (Path(spec[k]) for k in ("own", "door", "window"))
(own / "made").symlink_to(Path(spec["secret"]))
print(json.dumps({
    "planted": attempt(lambda: (own / "planted").read_text()),
    "made": attempt(lambda: (own / "made").read_text()),
    "through_door": attempt(lambda: (door / "new").write_text("x")),
    "through_window": attempt(lambda: (window / "secret").read_text()),
}))
"""
    found = _run(
        tmp_path,
        body,
        writable=[str(own), str(tmp_path / "door")],
        read_only=[*_python_paths(tmp_path), str(tmp_path / "window")],
        own=str(own),
        secret=str(other / "secret"),
        door=str(tmp_path / "door"),
        window=str(tmp_path / "window"),
    )
    assert found == dict.fromkeys(found, "refused: PermissionError"), found
    assert len(found) == 4
    assert not (other / "new").exists()


def test_a_confined_process_cannot_signal_outside_its_domain(tmp_path: Path) -> None:
    if ABI < 6:
        pytest.skip(f"signal scoping needs Landlock ABI 6, this kernel has {ABI}")
    body = """
sleeper = spec["sleeper"]
mine = subprocess.Popen(["sleep", "30"])  # started after restrict: inside the domain
print(json.dumps({
    "probe_sibling": attempt(lambda: os.kill(sleeper, 0)),
    "term_sibling": attempt(lambda: os.kill(sleeper, signal.SIGTERM)),
    "probe_parent": attempt(lambda: os.kill(os.getppid(), 0)),
    "probe_self": attempt(lambda: os.kill(os.getpid(), 0)),
    "term_own_child": attempt(lambda: (mine.terminate(), mine.wait())[1]),
}))
"""
    with subprocess.Popen(["sleep", "30"]) as sleeper:
        try:
            found = _run(tmp_path, body, sleeper=sleeper.pid)
            alive = sleeper.poll() is None
        finally:
            sleeper.kill()
    for refused in ("probe_sibling", "term_sibling", "probe_parent"):
        assert found[refused] == "refused: PermissionError", (refused, found[refused])
    assert found["probe_self"] == "done: None"
    assert found["term_own_child"] == "done: -15"
    assert alive


def test_a_confined_process_cannot_use_tcp(tmp_path: Path) -> None:
    if ABI < 4:
        pytest.skip(f"TCP rules need Landlock ABI 4, this kernel has {ABI}")
    body = """
address = ("127.0.0.1", spec["port"])
def bind():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
print(json.dumps({
    "connect": attempt(lambda: socket.create_connection(address, timeout=10).close()),
    "bind": attempt(bind),
}))
"""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        confined = _run(tmp_path, body, port=port)
        free = _run(tmp_path, body, confine=False, port=port)
    assert confined == {"connect": "refused: PermissionError", "bind": "refused: PermissionError"}
    assert free == {"connect": "done: None", "bind": "done: None"}


def test_an_abi_too_old_or_a_missing_path_is_refused_before_anything_is_confined(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    body = """
def expect(**arguments):
    try:
        landlock.restrict(**{"read_only": [], "writable": [], **arguments})
    except Exception as e:
        return [type(e).__name__, str(e)]
    return None
status = Path("/proc/self/status").read_text()
print(json.dumps({
    "abi": expect(min_abi=999),
    "writable": expect(writable=[spec["missing"]]),
    "device": expect(devices=[spec["missing"]]),
    "read_only": expect(read_only=[spec["missing"]], min_abi=999),
    "still_free": attempt(lambda: Path(spec["secret"]).read_text()),
    "no_new_privs": [line for line in status.splitlines() if line.startswith("NoNewPrivs")],
}))
"""
    missing = str(tmp_path / "gone")
    secret = str(folders["other"] / "secret")
    found = _run(tmp_path, body, confine=False, missing=missing, secret=secret)
    name, message = found["abi"]
    assert name == "LandlockUnavailable"
    assert "999" in message
    assert f"ABI {ABI}" in message
    for argument in ("writable", "device"):
        name, message = found[argument]
        assert name == "FileNotFoundError"
        assert missing in message
    assert found["read_only"][0] == "LandlockUnavailable"  # a missing read-only path is no error
    assert found["still_free"] == "done: 'secret'"
    assert found["no_new_privs"] == ["NoNewPrivs:\t0"]


def test_what_a_confined_process_starts_is_confined_too(
    tmp_path: Path, folders: dict[str, Path]
) -> None:
    own, other = folders["own"], folders["other"]
    body = """
def python(code):
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return [done.returncode, done.stderr.strip().splitlines()[-1:]]
secret, own = spec["secret"], spec["own"]
print(json.dumps({
    "python_reads": python(f"print(open({secret!r}).read())"),
    "python_writes": python(f"open({own!r} + '/child.txt', 'w').write('child')"),
    "cat": subprocess.run(["cat", secret], capture_output=True).returncode,
}))
"""
    found = _run(tmp_path, body, writable=[str(own)], own=str(own), secret=str(other / "secret"))
    returncode, last_line = found["python_reads"]
    assert returncode == 1
    assert last_line[0].startswith("PermissionError"), last_line
    assert found["python_writes"] == [0, []]  # it started, and writes where its parent may
    assert (own / "child.txt").read_text() == "child"
    assert found["cat"] != 0
