"""The root of accelopt's error hierarchy and the errors of decoding stored events.

Every error a user can meet carries a message they (or an LLM) can act on, and the exit
status the CLI uses for it; the CLI renders these and never shows a traceback for them.
"""

from typing import ClassVar

__all__ = [
    "AccelOptError",
    "EventDecodeError",
    "SchemaVersionTooNew",
    "UnknownEventType",
]


class AccelOptError(Exception):
    """Base of every error accelopt raises on purpose."""

    exit_code: ClassVar[int] = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class EventDecodeError(AccelOptError):
    """A stored event could not be turned into a typed event.

    Names the position and type so that an operator can find the event with
    `accelopt events --since <position-1>`.
    """

    exit_code: ClassVar[int] = 5

    def __init__(self, position: int | None, type_name: str, reason: str) -> None:
        where = f"event at position {position}" if position is not None else "event"
        super().__init__(f"{where} of type {type_name!r} does not decode: {reason}")
        self.position = position
        self.type_name = type_name
        self.reason = reason


class UnknownEventType(EventDecodeError):
    """The log holds a type this version of accelopt does not know (e.g. written by a newer one)."""

    def __init__(self, position: int | None, type_name: str) -> None:
        super().__init__(
            position,
            type_name,
            "unknown event type (written by a newer accelopt?); "
            "`accelopt replay --skip-unknown` reports such events and continues",
        )


class SchemaVersionTooNew(EventDecodeError):
    """The event's schema version is newer than this code's; only upgrading accelopt helps."""

    def __init__(self, position: int | None, type_name: str, stored: int, known: int) -> None:
        super().__init__(
            position,
            type_name,
            f"schema version {stored} is newer than the newest this accelopt knows ({known}); "
            "upgrade accelopt",
        )
