"""The live pages of a running daemon (`--http`), in headless Chromium: a task folder dropped
into the watched directory appears on the open page within 5 s, without a reload; /metrics
parses as Prometheus text and agrees with `accelopt status --json`; an address other than
loopback is refused without a token, and with one every request must carry it; `serve` shows
its host's state disk under the floor."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from events.catalog import ProfileRecorded
from nkibench.suites import NKI_LEGACY_SUITE as SUITE
from tests.support.browser import browser, needs_chromium
from tests.support.daemon_process import DaemonProcess, wait_until


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def fetch(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except urllib.error.URLError:
        return 0, ""  # nothing listens there (yet)


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def status(daemon: DaemonProcess) -> dict[str, Any]:
    done = daemon.accelopt("status", "--json")
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


@needs_chromium
def test_a_dropped_task_appears_live_and_metrics_agree_with_status(tmp_path: Path) -> None:
    port = free_port()
    daemon = DaemonProcess(tmp_path, "--shapes", "small", "--http", f"127.0.0.1:{port}")
    daemon.drop(SUITE / "silu", "silu")
    daemon.start()
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_until(lambda: daemon.events(ProfileRecorded, task="silu"), 120, "silu's baseline")
        with browser() as page:
            page.open(url)
            assert page.count("section.task[data-task='silu']") == 1
            dropped = time.monotonic()
            daemon.drop(SUITE / "swiglu", "swiglu")
            wait_until(lambda: page.count("section.task[data-task='swiglu']") == 1, 5,
                       "swiglu on the open page")  # fmt: skip
            assert time.monotonic() - dropped < 5
            assert page.console() == []
            assert all(u.startswith(url) for u in page.requests())  # nothing from elsewhere
            wait_until(lambda: daemon.events(ProfileRecorded, task="swiglu"), 120, "a baseline")
            wait_until(lambda: page.count("section.task[data-task='swiglu'] tr.candidate") > 0,
                       5, "swiglu's baseline on the page")  # fmt: skip
            kept = os.environ.get("ACCELOPT_SCREENSHOTS")
            page.screenshot(Path(kept) / "live.png" if kept else tmp_path / "live.png")

        metrics, seen = consistent(daemon, f"{url}metrics")
        for task in seen["tasks"]:
            (platform,) = task["platforms"]
            where = (("platform", platform["platform"]), ("task", task["task"]))
            assert metrics[("accelopt_profiles_total", where)] == platform["profiles"]
            timed = (("latency_kind", platform["latency_kind"]), *where)
            assert metrics[("accelopt_baseline_ms", timed)] == platform["baseline_ms"]
            assert metrics[("accelopt_best_ms", timed)] == platform["best_ms"]
        disk = seen["state_disk"]
        assert metrics[("accelopt_state_disk_floor_bytes", ())] == disk["floor_bytes"]
        paused = metrics[("accelopt_state_disk_new_jobs_paused", ())]
        assert paused == (1 if disk["new_jobs_paused"] else 0)
        states = {t["state"] for t in seen["tasks"]}
        assert {k[1] for k in metrics if k[0] == "accelopt_tasks"} == {
            (("state", s),) for s in states
        }
    finally:
        assert daemon.stop() == 0


LAG = ("accelopt_projection_lag_events", (("projection", "live_pages"),))


def consistent(daemon: DaemonProcess, url: str) -> tuple[dict[Any, float], dict[str, Any]]:
    """/metrics and `accelopt status --json` of one log position: a scrape whose projection
    had caught up (no lag) at the event count of the status taken just before it or just
    after it. (The daemon may go on recording while it sweeps its tunables; waiting for the
    log to stand still across two looks, each a process start, failed on a loaded host.)"""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        before = status(daemon)
        code, text = fetch(url)
        assert code == 200
        metrics = samples(text)
        if metrics[LAG] != 0:
            continue
        for seen in (before, status(daemon)):
            if metrics[("accelopt_log_events", ())] == seen["log"]["events"]:
                return metrics, seen
    raise AssertionError("no scrape caught up with the log at a status's position")


def accelopt(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from daemon.cli import main; main()", *argv],
        env={**os.environ, **env}, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_an_open_address_needs_a_token_and_then_every_request_does(tmp_path: Path) -> None:
    db = {"ACCELOPT_DB": f"sqlite:///{tmp_path / 'a.db'}", "ACCELOPT_HOME": str(tmp_path)}
    no_token = {**db, "ACCELOPT_HTTP_TOKEN": ""}
    for argv in (["serve", "--bind", "0.0.0.0:8765"],
                 ["daemon", "--watch", str(tmp_path), "--http", "0.0.0.0:8765"]):  # fmt: skip
        refused = accelopt(*argv, env=no_token)
        assert refused.returncode == 2, refused.stderr
        assert "needs a token: set ACCELOPT_HTTP_TOKEN" in refused.stderr
    assert accelopt("db", "upgrade", env=db).returncode == 0
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-c", "from daemon.cli import main; main()", "serve", "--bind",
         f"0.0.0.0:{port}"],
        env={**os.environ, **db, "ACCELOPT_HTTP_TOKEN": "s3cret-token",
             "ACCELOPT_MIN_FREE_MB": str(2**40)},  # more than any disk has
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        wait_until(lambda: fetch(url)[0] in (200, 401), 30, "the server", every=0.2)
        assert fetch(url)[0] == 401
        assert fetch(url, {"Authorization": "Bearer wrong"})[0] == 401
        code, text = fetch(url, {"Authorization": "Bearer s3cret-token"})
        assert code == 200
        assert "accelopt_log_events" in text
        assert samples(text)[("accelopt_state_disk_new_jobs_paused", ())] == 1
    finally:
        server.terminate()
        server.wait(30)
