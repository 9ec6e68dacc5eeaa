"""Golden ids: every id and key format of the search and the daemon, pinned to literal strings.

The expected strings were produced once by the code of commit 88fee2d (where the formats were
f-strings spread over the search loop and the daemon) and are never regenerated: a log written
before must still be found by a search resumed after. If one of these fails, a format changed,
and every recorded search would redo its LLM calls and profiles under new ids.
"""

from __future__ import annotations

import pytest

from agents.search import ids
from events.catalog import ProfilePurpose

TASK = "silu"
SOURCE_HASH = "0123456789abcdef" * 4
SEARCH = "silu@0123456789ab#3"


def test_the_search_id_names_the_task_its_revision_and_its_number() -> None:
    assert ids.search_id(TASK, SOURCE_HASH, 3) == SEARCH


def test_digest() -> None:
    assert ids.digest("a", 1, None) == "4d4c921084b03999"
    assert ids.digest("a", 1, None, length=8) == "4d4c9210"


def test_plan_and_candidate_ids() -> None:
    assert ids.plan_id(SEARCH, 2, "cparent", 5) == "p6fa92afd1c1c4ceb"
    assert ids.baseline_id(SEARCH) == "cbdce0fa88b1f40bc"
    assert ids.candidate_id(SEARCH, "baseline") == "cbdce0fa88b1f40bc"
    assert ids.executor_candidate_id(SEARCH, "pplan", 1) == "cb34401a6566cf82c"
    assert ids.tunable_candidate_id(SEARCH, "cparent", "TILE", 512) == "c423736963af13d9e"
    assert ids.fixer_candidate_id(SEARCH, "cparent", 2) == "c30e9430904a66932"


def test_llm_call_ids() -> None:
    assert ids.planner_call_id(SEARCH, 2, "cparent", 5) == "silu@0123456789ab#3|planner|2|cparent|5"
    assert ids.executor_call_id(SEARCH, "pplan", 1) == "silu@0123456789ab#3|executor|pplan|1"
    assert ids.fixer_call_id(SEARCH, "cparent", 2) == "silu@0123456789ab#3|fixer|cparent|2"
    summarizer = ids.summarizer_call_id(SEARCH, "cslow", "cfast")
    assert summarizer == "silu@0123456789ab#3|summarizer|cslow|cfast"
    assert ids.memory_item_id(summarizer) == "x6517b50c35fcb956"


def test_a_search_owns_its_calls_and_no_other_searchs() -> None:
    assert ids.is_call_of("silu@0123456789ab#3|planner|2|cparent|5", SEARCH)
    assert not ids.is_call_of("silu@0123456789ab#31|planner|2|cparent|5", SEARCH)
    assert not ids.is_call_of("silu@0123456789ab#3", SEARCH)


@pytest.mark.parametrize(
    ("purpose", "expected"),
    [
        ("baseline", "silu@0123456789ab#3|cparent|baseline"),
        ("candidate", "silu@0123456789ab#3|cparent|candidate"),
        ("reverify", "silu@0123456789ab#3|cparent|reverify"),
    ],
)
def test_profile_job_ids(purpose: ProfilePurpose, expected: str) -> None:
    assert ids.profile_job_id(SEARCH, "cparent", purpose) == expected
    assert ids.search_of_job(expected) == SEARCH  # a baseline's profile is found by its search


def test_the_keys_of_the_search_stream() -> None:
    def key(step: str) -> str:
        return ids.search_key(SEARCH, step)

    assert key(ids.candidate_key("cparent")) == "silu@0123456789ab#3|candidate|cparent"
    assert key(ids.rejected_key("cparent")) == "silu@0123456789ab#3|rejected|cparent"
    assert key(ids.plan_key("pplan")) == "silu@0123456789ab#3|plan|pplan"
    lesson = key(ids.lesson_key("x6517b50c35fcb956"))
    assert lesson == "silu@0123456789ab#3|lesson|x6517b50c35fcb956"
    assert key(ids.beam_key(2)) == "silu@0123456789ab#3|beam|2"
    assert key(ids.STARTED_KEY) == "silu@0123456789ab#3|started"
    assert key(ids.FINISHED_KEY) == "silu@0123456789ab#3|finished"


def test_promotion_reverification_and_demotion() -> None:
    assert ids.promotion_key(SEARCH, "cparent") == "promote|silu@0123456789ab#3|cparent"
    job = ids.reverify_job_id(TASK, "cparent", 123456)
    assert job == "reverify|silu|cparent|123456"
    assert ids.search_of_job(job) == "reverify"  # no search's
    assert ids.demotion_key(job) == "demote|reverify|silu|cparent|123456"


def test_an_agents_session_candidate_and_lesson_ids() -> None:
    session = ids.agent_session_id("claude-code", TASK, SOURCE_HASH)
    assert session == "agent~claude-code~silu@0123456789ab"
    assert ids.agent_candidate_id(session, "kh") == "c5a13bf0e456cb620"
    assert ids.agent_lesson_id(session, "cfast") == "x840b122f3a23975f"
