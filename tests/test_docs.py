"""The README and docs/ say what is true: the README is short and starts with the two set-up
commands, every `accelopt` command they show exists, every link inside the repository resolves
(to a file, and to a heading where it names one), and the event catalogue is the code's."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from daemon.cli import cli
from events.document import catalogue_markdown
from tests.support import REPOSITORY

README = REPOSITORY / "README.md"
DOCS = sorted((REPOSITORY / "docs").glob("*.md"))
PAGES = [README, *DOCS]
README_LINES = 300
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
COMMAND = re.compile(r"(?:^|[`\s(])accelopt((?: [a-z][a-z0-9-]*)+)")
OUTSIDE = ("http://", "https://", "mailto:", "../shared/")
"""Links that leave the repository: the web, and the shared folder checked out beside it."""


def _slug(heading: str) -> str:
    """The anchor a Markdown renderer gives a heading (GitHub's rule)."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    anchors, fenced = set(), False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            anchors.add(_slug(line.lstrip("#")))
    return anchors


def _broken_links(page: Path) -> list[str]:
    broken = []
    for target in LINK.findall(page.read_text()):
        if target.startswith(OUTSIDE):
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(f"{target}: no such heading")
    return broken


def _commands(page: Path) -> set[tuple[str, ...]]:
    """`accelopt NAME [SUBNAME]` as the page writes it, in code: the words that name commands."""
    found = set()
    for code in re.findall(r"```.*?```|`[^`\n]+`", page.read_text(), re.S):
        without_comments = re.sub(r"(?m)\s#.*$", "", code)  # a shell comment is prose
        for words in COMMAND.findall(without_comments):
            found.add(tuple(words.split()[:2]))
    return found


def _missing(words: tuple[str, ...]) -> str | None:
    context = click.Context(cli)
    command = cli.get_command(context, words[0])
    if command is None:
        return f"accelopt {words[0]}: no such command"
    # a group's second word names one of its commands (a plain command's is an argument)
    if (
        isinstance(command, click.Group)
        and len(words) > 1
        and command.get_command(context, words[1]) is None
    ):
        return f"accelopt {words[0]} {words[1]}: no such command"
    return None


def test_the_readme_is_short_and_starts_with_the_two_set_up_commands() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= README_LINES, f"README.md has {len(lines)} lines"
    first_block = README.read_text().split("```")[1]
    commands = [line.split("#")[0].strip() for line in first_block.splitlines()[1:]]
    assert [c for c in commands if c] == ["make run", "make test"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_link_inside_the_repository_resolves(page: Path) -> None:
    assert _broken_links(page) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_command_shown_exists(page: Path) -> None:
    shown = _commands(page)
    assert shown or page.name == "events.md"
    problems = [p for p in map(_missing, sorted(shown)) if p]
    assert problems == []


def test_the_checker_sees_a_broken_link_and_an_unknown_command(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n[here](missing.md) [there](#nowhere) [ok](#title)\n\n"
        "```sh\naccelopt frobnicate --now\naccelopt memory log\n```\n"
    )
    assert _broken_links(page) == ["missing.md: no such file", "#nowhere: no such heading"]
    shown = _commands(page)
    assert ("frobnicate",) in {s[:1] for s in shown}
    assert _missing(("frobnicate",)) == "accelopt frobnicate: no such command"
    assert _missing(("memory", "log")) is None


def test_the_event_catalogue_page_is_written_from_the_code() -> None:
    page = REPOSITORY / "docs" / "events.md"
    assert page.read_text() == catalogue_markdown(), (
        "docs/events.md is stale: python -m events.document > docs/events.md"
    )
