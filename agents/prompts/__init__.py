"""The agents' prompts, one folder per kernel dialect (`nki`, `triton`), rendered
from `{{name}}` placeholders. A placeholder without a value, or a value without a
placeholder, is an error: a prompt never goes out half-filled."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

__all__ = ["DIALECTS", "PromptError", "Prompts"]

FOLDER = Path(__file__).parent
DIALECTS = tuple(sorted(p.name for p in FOLDER.iterdir() if p.is_dir() and p.name != "__pycache__"))
PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
FRAGMENTS = {"facts": "facts", "counter_glossary": "counters"}
"""Placeholders every template may use, filled from the dialect's own files."""


class PromptError(ValueError):
    pass


@cache
def _read(dialect: str, name: str) -> str:
    path = FOLDER / dialect / f"{name}.md"
    if not path.is_file():
        raise PromptError(f"no prompt {name!r} for the {dialect} dialect ({path})")
    return path.read_text(encoding="utf-8").strip() + "\n"


class Prompts:
    def __init__(self, dialect: str = "nki") -> None:
        if dialect not in DIALECTS:
            raise PromptError(f"no prompts for dialect {dialect!r}; there are {DIALECTS}")
        self.dialect = dialect

    def render(self, name: str, **values: str) -> str:
        template = _read(self.dialect, name)
        wanted = set(PLACEHOLDER.findall(template))
        for placeholder, fragment in FRAGMENTS.items():
            if placeholder in wanted and placeholder not in values:
                values[placeholder] = _read(self.dialect, fragment).strip()
        missing = wanted - set(values)
        unused = set(values) - wanted - set(FRAGMENTS)
        if missing or unused:
            raise PromptError(
                f"prompt {self.dialect}/{name}: missing values {sorted(missing)}, "
                f"values it has no place for {sorted(unused)}"
            )
        return PLACEHOLDER.sub(lambda m: values[m.group(1)], template)

    def messages(self, role: str, **values: str) -> list[dict[str, str]]:
        """System and user messages of a role, each rendered from its own values."""
        system_names = set(PLACEHOLDER.findall(_read(self.dialect, f"{role}.system")))
        system = {k: v for k, v in values.items() if k in system_names}
        user = {k: v for k, v in values.items() if k not in system_names}
        return [
            {"role": "system", "content": self.render(f"{role}.system", **system)},
            {"role": "user", "content": self.render(f"{role}.user", **user)},
        ]
