"""The event catalogue as Markdown, written from the classes themselves (`docs/events.md` is this
module's output: `python -m events.document > docs/events.md`, and a test holds the two equal),
so that the documented vocabulary is the stored one."""

from __future__ import annotations

import inspect
import re
import sys
from typing import Any

from events.base import Event
from events.catalog import EVENT_TYPES

__all__ = ["catalogue_markdown"]

INTRO = """# The event catalogue

Every fact accelopt knows is one of these events, in one append-only log (`accelopt events`
shows them as stored). A payload's layout has a schema version; an older one is lifted by an
upcaster on read (`events/upcasting.py`), so every event ever written stays readable. Large
texts (sources, prompts, answers, logs) are blobs, named by their SHA-256 in the fields that end
in `_sha256` or `_hash`.

This page is written from `events/catalog.py` (`python -m events.document > docs/events.md`);
a test fails when the two differ.
"""


def _type_text(annotation: Any) -> str:
    text = inspect.formatannotation(annotation)
    text = re.sub(r"\b(?:typing|events\.catalog|datetime)\.", "", text)
    text = re.sub(r"Literal\[([^\]]*)\]", lambda m: m.group(1).replace("'", "`"), text)
    return text.replace("|", "\\|")


def _paragraphs(doc: str | None) -> str:
    return " ".join(inspect.cleandoc(doc or "").split()) or "(no description)"


def _event(name: str, kind: type[Event]) -> list[str]:
    lines = [f"## {name}", "", f"{_paragraphs(kind.__doc__)}", ""]
    lines.append(f"Schema version {kind.schema_version}.")
    lines.append("")
    fields = kind.model_fields
    if fields:
        lines += ["| field | type | meaning |", "|---|---|---|"]
        for field_name, info in fields.items():
            meaning = " ".join((info.description or "").split())
            lines.append(f"| `{field_name}` | {_type_text(info.annotation)} | {meaning} |")
        lines.append("")
    return lines


def catalogue_markdown() -> str:
    lines = [INTRO]
    lines += [f"- [{name}](#{name.lower()})" for name in EVENT_TYPES]
    lines.append("")
    for name, kind in EVENT_TYPES.items():
        lines += _event(name, kind)
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":
    sys.stdout.write(catalogue_markdown())
