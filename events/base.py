"""The base class of every typed event."""

from typing import ClassVar

from pydantic import BaseModel, ConfigDict

__all__ = ["Event"]


class Event(BaseModel):
    """An immutable fact. Subclasses are the vocabulary; their class name is the stored type.

    `schema_version` is the version of the payload layout this class reads and writes. When a
    field changes meaning or shape, bump it and register an upcaster from the old version in
    `events.upcasting`, so that every event ever written stays readable.
    """

    # NaN and infinities have no JSON form; a failed measurement is None, never inf.
    model_config = ConfigDict(
        frozen=True, extra="forbid", allow_inf_nan=False, use_attribute_docstrings=True
    )

    schema_version: ClassVar[int] = 1

    @classmethod
    def type_name(cls) -> str:
        return cls.__name__
