"""The dataset export's line format as docs/usage.md documents it: a line is checked against
the page's table, so the page and the export cannot drift apart."""

from __future__ import annotations

import re
from typing import Any

from tests.support import REPOSITORY

__all__ = ["FIELDS", "undocumented"]

SECTION = "## Training data: `accelopt export-dataset`"
ROW = re.compile(r"^\| `(\w+)` \| ([a-z ]+) \|", re.M)


def _documented_fields() -> dict[str, frozenset[str]]:
    page = (REPOSITORY / "docs" / "usage.md").read_text()
    section = page.split(SECTION, 1)[1].split("\n## ", 1)[0]
    return {name: frozenset(types.split(" or ")) for name, types in ROW.findall(section)}


FIELDS = _documented_fields()
"""Each documented field → the JSON types its value may have."""


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "object" if isinstance(value, dict) else "array"


def undocumented(line: dict[str, Any]) -> list[str]:
    """How `line` departs from the documented fields (nothing: it validates)."""
    wrong = [f"{name}: missing" for name in FIELDS if name not in line]
    wrong += [f"{name}: not documented" for name in line if name not in FIELDS]
    for name, value in line.items():
        allowed = FIELDS.get(name)
        kind = _json_type(value)
        if kind == "integer" and allowed and "number" in allowed:
            continue  # JSON has one number type: 3 is a number too
        if allowed and kind not in allowed:
            wrong.append(f"{name}: {kind}, documented as {' or '.join(sorted(allowed))}")
    return wrong
