"""A pytest plugin for runs on the lent GPU machine, whose command may be cut off at its time
limit before pytest prints its summary: each test's outcome and duration, and a failure's
traceback, are appended to $OUT/live.log as the test ends (`-p bench.live_report`)."""

import os
from pathlib import Path

import pytest


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when != "call" and report.outcome == "passed":
        return
    line = f"{report.outcome:8} {report.duration:7.1f}s {report.when:8} {report.nodeid}\n"
    if report.failed:
        line += f"{report.longreprtext}\n\n"
    with (Path(os.environ.get("OUT", "/tmp")) / "live.log").open("a") as log:
        log.write(line)
