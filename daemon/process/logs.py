"""structlog for the daemon: JSON lines on stdout with the journald priority prefix (`<6>`),
so `journalctl -p warning` works while each line stays pure JSON; readable lines on a
terminal. Standard-library loggers (APScheduler, watchdog, httpx) go the same way."""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog

from store.scrub import Scrubber

__all__ = ["configure_logging"]

PRIORITY = {"critical": 2, "error": 3, "warning": 4, "info": 6, "debug": 7}
SECRET_KEYS = ("api_key", "authorization", "password")


def _journald_prefix(_logger: Any, method: str, line: str) -> str:
    return f"<{PRIORITY.get(method, 6)}>{line}"


def _redact(_logger: Any, _method: str, event: dict[str, Any]) -> dict[str, Any]:
    for key in list(event):
        if any(secret in key.lower() for secret in SECRET_KEYS):
            event[key] = "***"
    return event


class _Scrub:
    """Secrets' values out of every field and of the rendered line (store.scrub)."""

    __slots__ = ("scrubber",)

    def __init__(self, scrubber: Scrubber) -> None:
        self.scrubber = scrubber

    def __call__(self, _logger: Any, _method: str, event: Any) -> Any:
        if isinstance(event, str):
            return self.scrubber.text(event)
        return self.scrubber.value(event)


def configure_logging(
    *, json_lines: bool | None = None, level: str = "info", scrubber: Scrubber | None = None
) -> None:
    """JSON lines unless stdout is a terminal (then a readable console), at `level`, with the
    values of `scrubber`'s secrets taken out of every line."""
    if json_lines is None:
        json_lines = not sys.stdout.isatty()
    scrub = _Scrub(scrubber or Scrubber())
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
        structlog.processors.dict_tracebacks,
        _redact,
        scrub,
    ]
    final: list[Any] = (
        [structlog.processors.JSONRenderer(), scrub, _journald_prefix]
        if json_lines
        else [structlog.dev.ConsoleRenderer(colors=False), scrub]
    )
    structlog.configure(
        processors=[*shared, *final],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stdout),
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[*shared[1:], structlog.stdlib.add_logger_name],
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *final],
        )
    )
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(logging.WARNING)  # third-party chatter: warnings and up
