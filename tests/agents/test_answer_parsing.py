"""Every reader of an LLM's answer takes linear time (issue 23: a summarizer's 300,000 newlines
held the interpreter's lock for two minutes inside one regex, and were read again on every
restart). Each is timed on degenerate answers of up to a megabyte, in CPU time, and compared,
on answers short enough for them, with the regexes it replaced: the answers are read as
before."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.memory import MemoryItem, lesson_as_shown, without_code
from agents.prompts import Prompts
from agents.roles import (
    NoCode,
    executor_messages,
    extract_code,
    parse_lesson,
    planner_messages,
)
from agents.search.tunables import variants
from events.catalog import LLMRole
from nkibench.task.spec import defined_function, with_imports_of
from tests.support import PARSE_ISOLATION

MB = 1 << 20
CPU_S_PER_MB = 1.0
"""The bound on a reader, in CPU seconds a megabyte of answer (time.process_time: the cost of
the reading itself, however busy the machine). The readers take under 0.25 s a megabyte on the
worst answers found; the regexes they replaced took 30 s over 100,000 newlines."""
TIMER_SLACK_S = 0.02
"""Added to every bound, for the timer's and the allocator's noise on small answers."""
PARENT = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n\n\ndef kernel(x):\n"
PROMPTS = Prompts("nki-legacy")
OTHER_DIALECT = MemoryItem(
    item_id="i",
    task="t",
    title="t",
    summary_blob="b",
    speedup=1.5,
    polarity="positive",
    operators=[],
    target="trn1",
    backend="nkisim",
    dialect="triton",
    provenance={},
    added_position=1,
)


def _code(text: str, functions: tuple[str, ...] = ("kernel", "optimized_kernel")) -> object:
    try:
        return extract_code(text, "length", PARENT, functions)
    except NoCode as e:
        return e.reason


READERS: dict[str, Callable[[str], object]] = {
    "parse_lesson": parse_lesson,
    "extract_code": _code,
    "extract_code (triton)": lambda text: _code(text, ("run",)),
    "without_code": without_code,
    "lesson_as_shown": lambda text: lesson_as_shown(OTHER_DIALECT, text, dialect="nki-legacy"),
    "executor_messages": lambda text: executor_messages(
        PROMPTS, kernel=PARENT, reference="R", plan=text
    ),
    "planner_messages": lambda text: planner_messages(
        PROMPTS, kernel=PARENT, reference="R", profile={}, experiences=[("t", text)]
    ),
}
"""Every function that reads an answer's text: the roles' parsers, the memory's removal of
code blocks, and the prompts a plan or a lesson goes into. (The tunables' sweep reads a kernel
with `ast.parse`, linear but about 2 s a megabyte; it reads only kernels that compiled and
passed, and no answer past the client's cap of 256 KiB.)"""
ROLE_READS: dict[LLMRole, Callable[[str], object]] = {
    "planner": READERS["executor_messages"],  # a plan is read into the executor's prompt
    "executor": READERS["extract_code"],
    "fixer": lambda text: _code(text, ("run",)),
    "summarizer": lambda text: lesson_as_shown(
        OTHER_DIALECT, parse_lesson(text).summary, dialect="nki-legacy"
    ),
}
"""What each role's answer goes through: the summarizer's lesson is parsed, then shown to
planners (of another dialect, the longest road: its code blocks are taken out)."""


def _cpu_seconds(read: Callable[[str], object], text: str) -> float:
    started = time.process_time()
    read(text)
    return time.process_time() - started


def _bound(text: str) -> float:
    return CPU_S_PER_MB * len(text) / MB + TIMER_SLACK_S


@pytest.mark.parametrize("role", list(ROLE_READS))
@pytest.mark.parametrize("filler", ["\n", " ", "**"])
def test_a_megabyte_of_newlines_spaces_or_stars_is_read_within_a_second(
    role: LLMRole, filler: str
) -> None:
    answer = filler * (MB // len(filler))
    spent = _cpu_seconds(ROLE_READS[role], answer)
    assert spent < 1.0, f"{role}: {spent:.2f} s of CPU for a megabyte of {filler!r}"


PIECES = [
    "\n",
    " ",
    "\t",
    "\r",
    "*",
    "**",
    "`",
    "```",
    "~~~",
    "#",
    "x",
    "```python\n",
    "\n```",
    "def kernel",
    "(",
    "{{plan}}",
]
"""What degenerate answers repeat: whitespace, emphasis, fences of both kinds, the start and
end of a code block, an entry point's name, a placeholder."""


def _answer(segments: list[tuple[str, int]], size: int) -> str:
    """Each repeated piece takes its weight's share of about `size` characters."""
    total = sum(weight for _, weight in segments)
    return "".join(
        piece * max(1, size * weight // total // len(piece)) for piece, weight in segments
    )


answers = st.builds(
    _answer,
    st.lists(
        st.tuples(
            st.lists(st.sampled_from(PIECES), min_size=1, max_size=4).map("".join),
            st.integers(1, 8),
        ),
        min_size=1,
        max_size=4,
    ),
    st.sampled_from([MB // 8, MB]),
)


@settings(max_examples=12, deadline=None)
@given(answers)
def test_every_reader_is_linear_over_degenerate_answers(answer: str) -> None:
    for name, read in READERS.items():
        spent = _cpu_seconds(read, answer)
        assert spent < _bound(answer), (
            f"{name}: {spent:.2f} s of CPU for {len(answer)} characters "
            f"(bound {_bound(answer):.2f} s): {answer[:80]!r}..."
        )


# --- the regexes replaced, as the specification of what an answer says -----------------

OLD_TITLE = re.compile(r"^\s*\*\*(.+?)\*\*\s*$", re.M)
OLD_FENCE = re.compile(r"```[ \t]*([\w+-]*)[ \t]*\n(.*?)(?:\n```|\Z)", re.S)
OLD_FENCED = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n.*?(?:^[ \t]*\1[ \t]*$|\Z)", re.S | re.M)


def _old_title(text: str) -> str:
    match = OLD_TITLE.search(text)
    if match:
        title = match.group(1).strip()
    else:
        title = next((line.strip("# *") for line in text.splitlines() if line.strip()), "")
    return title[:200]


def _old_code(text: str, finish: str) -> str:
    match = OLD_FENCE.search(text)
    if match is None:
        return "truncated" if finish == "length" else "no_code"
    if text.find("```", match.end(2)) == -1:
        return "truncated"
    code = match.group(2).strip("\n") + "\n"
    if defined_function(code, ("kernel",)) is None:
        return "no_code"
    return with_imports_of(code, PARENT)


def _new_code(text: str, finish: str) -> str:
    try:
        return extract_code(text, finish, PARENT, ("kernel",))
    except NoCode as e:
        return e.reason


SHORT_PIECES = [
    *("\n", " ", "\t", "\r", "\x0b", "\u2028", "*", "**", "`", "```", "~", "~~~", "#", "-"),
    *("x", "py", "def kernel(x):", "import y", "\n```", "```python\n"),
]
"""Every character the old regexes treated apart (line ends of re and of str.splitlines, \\s,
fences, emphasis, a language name), and the pieces of a code block."""
short_answers = st.lists(st.sampled_from(SHORT_PIECES), max_size=30).map("".join)


@settings(max_examples=200, deadline=None)
@given(short_answers)
def test_a_lessons_title_is_the_one_the_old_regex_found(answer: str) -> None:
    assert parse_lesson(answer).title == (_old_title(answer) or "No optimization found")


@settings(max_examples=200, deadline=None)
@given(short_answers, st.sampled_from(["stop", "length"]))
def test_the_code_block_is_the_one_the_old_regex_found(answer: str, finish: str) -> None:
    assert _new_code(answer, finish) == _old_code(answer, finish)


@settings(max_examples=200, deadline=None)
@given(short_answers)
def test_the_memory_leaves_out_what_the_old_regex_left_out(answer: str) -> None:
    assert without_code(answer) == OLD_FENCED.sub("", answer)


@pytest.mark.parametrize(
    "source",
    [
        "A = " + "-" * 200_000 + "1\n",  # CPython 3.11: MemoryError
        "A = " + "+".join(["1"] * 200_000) + "\n",  # RecursionError
        "A = " + "(" * 1000 + "1" + ")" * 1000 + "\n",  # SyntaxError
    ],
)
def test_a_kernel_nested_past_the_parsers_limits_has_no_tunables(source: str) -> None:
    assert variants("TILE = 128\n" + source, {"TILE": [128, 256]}, isolation=PARSE_ISOLATION) == []
