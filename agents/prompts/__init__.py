"""The agents' prompts, one folder per kernel dialect, rendered from `{{name}}` placeholders.

Which folder a dialect reads is its record's `prompt_folder` (nkibench.dialects): `nki` holds
the prompts for current NKI (the `nki` package), `nki-legacy` those for `neuronxcc.nki`, and
`triton` those for Triton. A placeholder without a value, or a value without a placeholder,
is an error: a prompt never goes out half-filled.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from nkibench.dialects import DIALECTS as KERNEL_DIALECTS
from nkibench.dialects import Dialect

__all__ = ["DIALECTS", "FRAGMENTS", "PromptError", "Prompts", "folder_of"]

FOLDER = Path(__file__).parent
DIALECTS = tuple(KERNEL_DIALECTS)
"""The dialects there are prompts for: every kernel dialect."""
PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
"""Read only in the prompt files, never in what fills them (an LLM's plan or lesson, an error):
`sub` does not search the text it puts in. Linear even so: a try reads a word after `{{` and
the words after two `{{` never overlap."""
FRAGMENTS = {
    "facts": "facts",
    "api": "api",
    "legacy_api": "legacy",
    "error_guide": "errors",
    "counter_glossary": "counters",
}
"""Placeholders a template may use, filled from the dialect's own files (a dialect needs the
file only if one of its templates names the placeholder)."""


class PromptError(ValueError):
    pass


def folder_of(dialect: str) -> Path:
    """The prompt folder of a dialect, as its nkibench.dialects record names it."""
    record: Dialect | None = KERNEL_DIALECTS.get(dialect)
    if record is None:
        raise PromptError(f"no prompts for dialect {dialect!r}; there are {DIALECTS}")
    folder = FOLDER / record.prompt_folder
    if not folder.is_dir():
        raise PromptError(f"the {dialect} dialect's prompt folder {folder} is missing")
    return folder


@cache
def _read(folder: Path, name: str) -> str:
    path = folder / f"{name}.md"
    if not path.is_file():
        raise PromptError(f"no prompt {name!r} in {folder.name}/ ({path})")
    return path.read_text(encoding="utf-8").strip() + "\n"


class Prompts:
    """The prompts of one dialect (a name from nkibench.dialects: "nki", "nki-legacy",
    "triton")."""

    def __init__(self, dialect: str) -> None:
        self.folder = folder_of(dialect)
        self.dialect = dialect

    def render(self, name: str, **values: str) -> str:
        template = _read(self.folder, name)
        wanted = set(PLACEHOLDER.findall(template))
        for placeholder, fragment in FRAGMENTS.items():
            if placeholder in wanted and placeholder not in values:
                values[placeholder] = _read(self.folder, fragment).strip()
        missing = wanted - set(values)
        unused = set(values) - wanted - set(FRAGMENTS)
        if missing or unused:
            raise PromptError(
                f"prompt {self.folder.name}/{name}: missing values {sorted(missing)}, "
                f"values it has no place for {sorted(unused)}"
            )
        return PLACEHOLDER.sub(lambda m: values[m.group(1)], template)

    def messages(self, role: str, **values: str) -> list[dict[str, str]]:
        """System and user messages of a role, each rendered from its own values."""
        system_names = set(PLACEHOLDER.findall(_read(self.folder, f"{role}.system")))
        system = {k: v for k, v in values.items() if k in system_names}
        user = {k: v for k, v in values.items() if k not in system_names}
        return [
            {"role": "system", "content": self.render(f"{role}.system", **system)},
            {"role": "user", "content": self.render(f"{role}.user", **user)},
        ]
