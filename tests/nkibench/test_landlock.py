"""Landlock (nkibench.sandbox.landlock): what a confined process may still reach. Each test
confines a fresh interpreter (a confinement is for good)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nkibench.sandbox import landlock
from tests.support import REPOSITORY

pytestmark = pytest.mark.skipif(landlock.abi_version() == 0, reason="this kernel has no Landlock")

CONFINED = """
import json, os, subprocess, sys
from pathlib import Path
from nkibench.sandbox import landlock
spec = json.loads(sys.argv[1])
landlock.restrict(read_only=spec["read_only"], writable=spec["writable"], devices=["/dev/null"])
def attempt(action):
    try:
        return f"done: {action()!r}"[:100]
    except Exception as e:
        return f"refused: {type(e).__name__}"
own, other = Path(spec["writable"][0]), Path(spec["other"])
(own / "link").symlink_to(other / "secret")
cat = subprocess.run(["cat", str(other / "secret")], stdout=subprocess.DEVNULL)
print(json.dumps({
    "write_own": attempt(lambda: (own / "mine").write_text("x")),
    "read_other": attempt(lambda: (other / "secret").read_text()),
    "write_other": attempt(lambda: (other / "new").write_text("x")),
    "through_link": attempt(lambda: (own / "link").read_text()),
    "read_only_file": attempt(lambda: Path(spec["readable"]).read_text()),
    "write_read_only": attempt(lambda: Path(spec["readable"]).write_text("x")),
    "child_reads_other": cat.returncode,
    "signal": attempt(lambda: os.kill(spec["sleeper"], 15)),
}))
"""


def _python_paths() -> list[str]:
    return sorted(
        {sys.prefix, sys.base_prefix, str(REPOSITORY), *(p for p in sys.path if p)}
        | {"/usr", "/lib", "/lib64", "/bin", "/etc", "/proc"}
    )


def test_a_confined_process_reaches_only_what_it_was_given(tmp_path: Path) -> None:
    own, other, shelf = tmp_path / "own", tmp_path / "other", tmp_path / "shelf"
    for folder in (own, other, shelf):
        folder.mkdir()
    (other / "secret").write_text("secret")
    (shelf / "book").write_text("book")
    with subprocess.Popen(["sleep", "30"]) as sleeper:
        spec = {
            "read_only": [*_python_paths(), str(shelf)],
            "writable": [str(own)],
            "other": str(other),
            "readable": str(shelf / "book"),
            "sleeper": sleeper.pid,
        }
        done = subprocess.run(
            [sys.executable, "-c", CONFINED, json.dumps(spec)],
            capture_output=True,
            text=True,
            cwd=REPOSITORY,
            check=False,
        )
        alive = sleeper.poll() is None
        sleeper.kill()
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["write_own"].startswith("done")
    assert found["read_only_file"] == "done: 'book'"
    for refused in ("read_other", "write_other", "through_link", "write_read_only"):
        assert found[refused].startswith("refused"), (refused, found[refused])
    assert found["child_reads_other"] != 0  # what it starts is confined too
    assert (other / "secret").read_text() == "secret"
    assert not (other / "new").exists()
    if landlock.abi_version() >= 6:
        assert found["signal"].startswith("refused")
        assert alive


def test_an_abi_too_old_or_a_missing_folder_is_refused_before_anything_is_confined(
    tmp_path: Path,
) -> None:
    script = """
import sys
from nkibench.sandbox import landlock
try:
    landlock.restrict(read_only=[], writable=[], min_abi=999)
except landlock.LandlockUnavailable as e:
    print("abi:", e)
try:
    landlock.restrict(read_only=[], writable=[sys.argv[1]])
except FileNotFoundError as e:
    print("missing:", e)
print("still free:", len(open(sys.argv[2]).read()) > 0)
"""
    missing = tmp_path / "gone"
    (tmp_path / "free.txt").write_text("outside every rule")
    done = subprocess.run(
        [sys.executable, "-c", script, str(missing), str(tmp_path / "free.txt")],
        capture_output=True,
        text=True,
        cwd=REPOSITORY,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "abi:" in done.stdout
    assert "999 needed" in done.stdout
    assert f"missing: {missing}" in done.stdout
    assert "still free: True" in done.stdout
