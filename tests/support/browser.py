"""Debian's headless Chromium, driven through its chromedriver (WebDriver): pages are opened
as a user's browser opens them, and what the page logged and fetched is read back."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

__all__ = ["Browser", "browser", "needs_chromium"]

CHROMIUM = shutil.which("chromium")
DRIVER = shutil.which("chromedriver")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None or DRIVER is None,
    reason="needs Debian's chromium and chromium-driver (.ci/run installs them)",
)


class Browser:
    def __init__(self, driver: Any) -> None:
        self.driver = driver

    def open(self, url: str) -> None:
        self.driver.get(url)

    def console(self) -> list[dict[str, Any]]:
        """What the page wrote to its console (errors included) since the last look."""
        entries: list[dict[str, Any]] = self.driver.get_log("browser")
        return entries

    def requests(self) -> list[str]:
        """Every URL the page asked for since the last look."""
        urls = []
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message["method"] == "Network.requestWillBeSent":
                urls.append(message["params"]["request"]["url"])
        return urls

    def screenshot(self, path: Path, *, height: int = 1400) -> None:
        """The top of the page, `height` pixels of it, as a PNG."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self.driver.set_window_size(1300, height)
        assert self.driver.save_screenshot(str(path))

    def count(self, css: str) -> int:
        return len(self.driver.find_elements("css selector", css))

    def attribute(self, css: str, name: str) -> list[str]:
        return [e.get_attribute(name) for e in self.driver.find_elements("css selector", css)]


@contextmanager
def browser() -> Iterator[Browser]:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    assert CHROMIUM is not None
    assert DRIVER is not None
    options = Options()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1300,900",
                     "--disable-dev-shm-usage"):  # fmt: skip
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    try:
        yield Browser(driver)
    finally:
        driver.quit()
