"""The agents per kernel dialect: each dialect's prompts (current NKI, legacy NKI, Triton), the
memory's rule that lessons cross dialects but their code does not, and the upcasting of
lessons recorded before they carried a dialect."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agents.config import SearchConfig
from agents.memory import MemoryProjection, MemoryState, lesson_as_shown, shown_to_planner
from agents.prompts import FOLDER, FRAGMENTS, PLACEHOLDER, PromptError, Prompts
from agents.roles import (
    executor_messages,
    fixer_messages,
    planner_messages,
    summarizer_messages,
)
from agents.search.loop import Search
from events.catalog import ExperienceSummarized
from events.codec import decode
from events.envelope import Envelope, StoredEvent
from events.projection import fold
from nkibench.dialects import DIALECTS, get_dialect
from nkibench.result import KernelResult
from nkibench.sandbox.static_check import check_source
from nkibench.task.spec import TaskSpec
from store.memory import MemoryEventStore
from store.recorder import Recorder
from tests.support import DATA, PARSE_ISOLATION

ROOT = Path(__file__).resolve().parents[2]

# --- prompts ------------------------------------------------------------------------------


def _all_messages(prompts: Prompts) -> dict[str, list[dict[str, str]]]:
    return {
        "planner": planner_messages(
            prompts,
            kernel="KERNEL-TEXT",
            reference="REFERENCE-TEXT",
            profile={"latency": 1.0},
            experiences=[("A lesson", "**A lesson**\n\nLESSON-TEXT")],
        ),
        "executor": executor_messages(
            prompts, kernel="KERNEL-TEXT", reference="REFERENCE-TEXT", plan="PLAN-TEXT"
        ),
        "summarizer": summarizer_messages(
            prompts,
            reference="REFERENCE-TEXT",
            slow_kernel="SLOW-TEXT",
            fast_kernel="FAST-TEXT",
            speedup=2.0,
            latency_kind="estimated",
        ),
        "fixer": fixer_messages(
            prompts,
            kernel="KERNEL-TEXT",
            reference="REFERENCE-TEXT",
            error_kind="constraint",
            error="ERROR-TEXT",
        ),
    }


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_every_dialect_renders_every_role_with_nothing_left_unfilled(dialect: str) -> None:
    prompts = Prompts(dialect)
    assert prompts.folder == FOLDER / get_dialect(dialect).prompt_folder
    for role, messages in _all_messages(prompts).items():
        assert [m["role"] for m in messages] == ["system", "user"]
        text = "\n".join(m["content"] for m in messages)
        assert not PLACEHOLDER.search(text), f"{dialect}/{role}: a placeholder is left"
        assert "{{" not in text, f"{dialect}/{role}"
        assert "}}" not in text, f"{dialect}/{role}"
        for value in ("KERNEL-TEXT", "REFERENCE-TEXT"):
            if role != "summarizer":
                assert value in text, f"{dialect}/{role} lost {value}"
    rendered = _all_messages(prompts)
    assert "LESSON-TEXT" in rendered["planner"][0]["content"]
    assert "PLAN-TEXT" in rendered["executor"][1]["content"]
    assert "ERROR-TEXT" in rendered["fixer"][1]["content"]
    assert "SLOW-TEXT" in rendered["summarizer"][1]["content"]


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_every_placeholder_of_a_folder_is_a_fragment_it_has_or_a_role_value(dialect: str) -> None:
    folder = FOLDER / get_dialect(dialect).prompt_folder
    role_values = {
        "experiences",
        "reference",
        "kernel",
        "profile",
        "plan",
        "slow_kernel",
        "fast_kernel",
        "speedup",
        "latency_kind",
        "error_kind",
        "error",
    }
    for path in sorted(folder.glob("*.md")):
        for name in PLACEHOLDER.findall(path.read_text(encoding="utf-8")):
            if name in FRAGMENTS:
                assert (folder / f"{FRAGMENTS[name]}.md").is_file(), f"{path}: {name}"
            else:
                assert name in role_values, f"{path}: unknown placeholder {name}"


def test_the_prompt_folder_comes_from_the_dialect_record() -> None:
    assert Prompts("nki").folder.name == "nki"
    assert Prompts("nki-legacy").folder.name == "nki-legacy"
    assert Prompts("triton").folder.name == "triton"
    with pytest.raises(PromptError, match="no prompts for dialect 'cuda'"):
        Prompts("cuda")


LEGACY_ONLY = ("nl.arange", "nl.mgrid", "mask=", "par_dim", "neuronxcc")
"""Legacy NKI's API, which current NKI removed."""


def test_current_nki_api_is_dst_first_and_free_of_legacy_api() -> None:
    folder = FOLDER / "nki"
    api = (folder / "api.md").read_text(encoding="utf-8")
    facts = (folder / "facts.md").read_text(encoding="utf-8")
    for token in LEGACY_ONLY:
        assert token not in api, f"current NKI's API text names {token}"
        assert token not in facts, f"current NKI's facts name {token}"
    calls = re.findall(r"nisa\.(\w+)\(([^)]*)\)", api)
    assert len(calls) >= 10
    for name, arguments in calls:
        assert arguments.startswith("dst="), f"nisa.{name}({arguments}) is not dst-first"
    for needle in (
        "nisa.nc_matmul(dst=",
        "accumulate=(k > 0)",
        "nisa.tensor_copy(dst=",
        "nisa.dma_copy(dst=, src=)",
        "It cannot read or write PSUM",
        "buffer=nl.shared_hbm",
        "nl.ds(start, size)",
        "min(128, n - i * 128)",
    ):
        assert needle in api, needle
    # trn2 and trn3 numbers, no trn1
    assert all(n in facts for n in ("trn2", "trn3", "224 KiB", "256 KiB"))
    assert "trn1" not in facts


def test_legacy_api_is_named_only_as_removed_in_current_nki_and_kept_in_legacy_prompts() -> None:
    removed = (FOLDER / "nki" / "legacy.md").read_text(encoding="utf-8")
    for token in ("nl.arange", "nl.mgrid", "mask=", "nl.par_dim", "neuronxcc.nki"):
        assert token in removed, token
    assert "never write the left column" in " ".join(removed.split())
    legacy_facts = (FOLDER / "nki-legacy" / "facts.md").read_text(encoding="utf-8")
    for token in ("nl.arange", "mask=", "nl.par_dim", "neuronxcc.nki"):
        assert token in legacy_facts, token
    legacy = "\n".join(m["content"] for m in _all_messages(Prompts("nki-legacy"))["executor"])
    assert "legacy `neuronxcc.nki`" in legacy
    assert "dst=" not in legacy  # legacy instructions return their results
    current = "\n".join(m["content"] for m in _all_messages(Prompts("nki"))["executor"])
    assert all(n in current for n in ("current NKI", "passes its `dst`"))


NKISIM_MESSAGES = (
    "mask= was removed in NKI 0.2+",
    "dtype= was removed in NKI 0.2+",
    "current NKI writes into a destination passed first",
    "DMA moves data between HBM and SBUF only",
    "TensorE reads its operands from SBUF",
    "TensorE writes PSUM",
    "accumulate=True onto",
    "initialised by a non-matmul instruction (memset, copy)",
    "tensor_tensor does not broadcast",
    "axis 0 is the partition dimension",
    "a float32 operand needs a float32 partner",
    "is legacy NKI, not part of current NKI",
    "the GpSimd engine cannot access PSUM",
)
"""Phrases of current-NKI errors that nkisim raises, which the fixer is told how to fix."""


def test_the_current_nki_fixer_knows_the_interpreters_errors() -> None:
    fixer = " ".join(_all_messages(Prompts("nki"))["fixer"][0]["content"].split())
    sources = "\n".join(
        p.read_text(encoding="utf-8")
        for p in sorted((ROOT / "nkibench" / "nkisim" / "current").rglob("*.py"))
    )
    sources = re.sub(r'"\s*\n\s*[fr]?"', "", sources)  # join implicitly concatenated strings
    for phrase in NKISIM_MESSAGES:
        assert phrase in fixer, f"the fixer's guide does not cover {phrase!r}"
        assert phrase in sources, (
            f"nkisim no longer says {phrase!r}: update agents/prompts/nki/errors.md"
        )
    # the static check's refusal of a legacy import in a current kernel
    legacy = "import neuronxcc.nki.language as nl\n\ndef kernel(x):\n    return x\n"
    [violation] = check_source(legacy, "kernel.py", "nki")
    refusal = violation.problem.partition("' ")[2].partition(" (nki)")[0]
    assert refusal.startswith("mixes legacy NKI")
    assert refusal in fixer


# --- the search picks its dialect's prompts ---------------------------------------------------


class _Profiler:
    backend_name, target, shapes = "nkisim", "trn2", "small"

    def profile(
        self,
        task: TaskSpec,
        source: str,
        *,
        job_id: str,
        baseline_kernel_s: float | None = None,
    ) -> KernelResult:
        raise AssertionError("not profiled in this test")


def _task(dialect: str) -> TaskSpec:
    imports = {
        "nki": "import nki\nimport nki.language as nl\n",
        "nki-legacy": "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n",
        "triton": "import triton\n",
    }[dialect]
    entry = get_dialect(dialect).entry_points[0]
    return TaskSpec(
        name="silu",
        path=Path("/kernels/silu"),
        kernel_source=f"{imports}\n\ndef {entry}(x):\n    return x\n",
        reference_source="import numpy as np\n\ndef forward(x):\n    return x\n",
        kernel_function=entry,
        constants={},
        dialect=dialect,
    )


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_the_search_reads_its_tasks_dialect_prompts_and_entry_points(dialect: str) -> None:
    search = Search(
        task=_task(dialect),
        recorder=Recorder(MemoryEventStore()),
        llm=None,
        profiler=_Profiler(),
        config=SearchConfig(),
        isolation=PARSE_ISOLATION,
    )
    context = search._steps
    assert context.prompts.dialect == dialect
    assert context.prompts.folder.name == get_dialect(dialect).prompt_folder
    assert context.entry_points == get_dialect(dialect).entry_points
    other = "nki-legacy" if dialect == "nki" else "nki"
    with pytest.raises(ValueError, match="the prompts given are for"):
        Search(
            task=_task(dialect),
            recorder=Recorder(MemoryEventStore()),
            llm=None,
            profiler=_Profiler(),
            config=SearchConfig(),
            isolation=PARSE_ISOLATION,
            prompts=Prompts(other),
        )


# --- the memory across dialects ---------------------------------------------------------------

LEGACY_SUMMARY = (
    "**Load whole rows in one transfer**\n\n"
    "Each DMA transfer pays a fixed cost; loading 2048 columns at once instead of 128 cuts the "
    "transfers sixteenfold.\n\n"
    "```python\nfor j in nl.affine_range(16):\n    t = nl.load(x[i_p, j * 128 + i_f], "
    "mask=(i_p < n))\n```\n\n"
    "```python\nt = nl.load(x[i_p, i_f2])\n```\n"
)


def _lesson(item: str, task: str, dialect: str, *, speedup: float = 2.0) -> ExperienceSummarized:
    return ExperienceSummarized(
        task=task,
        search_id=f"{task}@1",
        operators=["exp"],
        item_id=item,
        polarity="positive",
        slow_candidate_id="s",
        fast_candidate_id="f",
        speedup=speedup,
        title="Load whole rows in one transfer",
        summary_blob="0" * 64,
        llm_call_id="call",
        model="m",
        backend="nkisim",
        target="trn2",
        dialect=dialect,
    )


def _fold(events: list[ExperienceSummarized]) -> MemoryState:
    projection = MemoryProjection()
    envelopes = [
        Envelope(
            position=i + 1,
            stream_id="search:x",
            stream_version=i + 1,
            recorded_at=datetime(2026, 1, 1, tzinfo=UTC),
            metadata={},
            event=e,
        )
        for i, e in enumerate(events)
    ]
    return fold(projection, envelopes, projection.initial())


def test_a_legacy_lesson_shows_code_to_legacy_tasks_and_its_idea_to_current_ones() -> None:
    state = _fold([_lesson("legacy-item", "silu-old", "nki-legacy")])
    item = state.items["legacy-item"]
    assert item.dialect == "nki-legacy"

    def shown_to(dialect: str) -> str:
        [chosen] = shown_to_planner(
            state, task="silu", operators=["exp"], target="trn2", dialect=dialect, limit=4
        )
        return lesson_as_shown(chosen, LEGACY_SUMMARY, dialect=dialect)

    assert shown_to("nki-legacy") == LEGACY_SUMMARY
    idea = shown_to("nki")
    assert "```" not in idea
    assert not any(api in idea for api in ("nl.load", "mask=", "nl.affine_range"))
    assert idea.startswith("**Load whole rows in one transfer**")
    assert "cuts the transfers sixteenfold" in idea
    assert "legacy NKI (neuronxcc.nki)" in idea  # where it was learnt
    # and so in the planner's prompt of a current-NKI task
    planner = planner_messages(
        Prompts("nki"),
        kernel="K",
        reference="R",
        profile={},
        experiences=[(item.title, idea)],
    )[0]["content"]
    assert "sixteenfold" in planner
    assert "j * 128 + i_f" not in planner
    # an unclosed code block is left out to its end
    assert "```" not in lesson_as_shown(item, "**T**\n\nidea\n\n```python\nx = 1\n", dialect="nki")


def test_other_tasks_lessons_in_the_same_dialect_come_first_among_equals() -> None:
    state = _fold(
        [
            _lesson("own-triton", "silu", "triton", speedup=1.5),
            _lesson("legacy", "gelu", "nki-legacy", speedup=8.0),
            _lesson("current", "gelu2", "nki", speedup=1.2),
        ]
    )
    chosen = shown_to_planner(
        state, task="silu", operators=["exp"], target="trn2", dialect="nki", limit=3
    )
    assert [i.item_id for i in chosen] == ["own-triton", "current", "legacy"]
    assert MemoryProjection().present(state, lambda _blob: "text")["items"][0]["dialect"] in (
        "nki",
        "nki-legacy",
        "triton",
    )


# --- upcasting lessons from before they carried a dialect ---------------------------------------


def _stored(data: dict[str, Any], version: int) -> StoredEvent:
    return StoredEvent(
        position=1,
        event_id="01936e00-0000-7000-8000-0000000000ff",
        stream_id="search:x",
        stream_version=1,
        type="ExperienceSummarized",
        schema_version=version,
        data=data,
        metadata={},
        idempotency_key=None,
        recorded_at=datetime(2026, 11, 26, tzinfo=UTC),
    )


def _golden(name: str) -> dict[str, Any]:
    for line in (DATA / "golden" / name).read_text(encoding="utf-8").splitlines():
        raw: dict[str, Any] = json.loads(line)
        if raw["type"] == "ExperienceSummarized":
            return raw
    raise AssertionError(f"no ExperienceSummarized in {name}")


def test_lessons_before_version_3_get_their_dialect_from_their_backend() -> None:
    v2 = _golden("events-v2.jsonl")
    assert (v2["schema_version"], v2["data"]["backend"]) == (2, "nkisim")
    lesson = decode(_stored(v2["data"], 2)).event
    assert isinstance(lesson, ExperienceSummarized)
    assert lesson.dialect == "nki-legacy"
    v1 = {k: v for k, v in v2["data"].items() if k not in ("search_id", "operators")}
    for backend, dialect in (
        ("triton", "triton"),
        ("neuron", "nki-legacy"),
        ("nkisim", "nki-legacy"),
    ):
        event = decode(_stored({**v1, "backend": backend}, 1)).event
        assert isinstance(event, ExperienceSummarized)
        assert event.dialect == dialect, backend
    v3 = _golden("events-v5.jsonl")
    assert v3["schema_version"] == 3
    current = decode(_stored(v3["data"], 3)).event
    assert isinstance(current, ExperienceSummarized)
    assert current.dialect == "nki"
