"""The agents' pure parts: beam and lesson selection, the memory fold, reading answers,
rendering prompts, sweeping tunables, and the LLM settings."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agents.memory import MemoryProjection, MemoryState, shown_to_planner
from agents.prompts import PromptError, Prompts
from agents.roles import NoCode, extract_code, parse_lesson
from agents.search.selection import Measured, Pair, select_beam, select_lessons
from agents.search.steps import _planner_profile
from agents.search.tunables import variants
from daemon.settings import Settings, SettingsError
from events.catalog import ExperienceSummarized
from events.envelope import Envelope
from events.projection import fold
from nkibench.cost.caveats import ENGINE_SPLIT, REREADS, SPILLS
from nkibench.task.operators import operators, similarity
from tests.support import PARSE_ISOLATION
from tests.support.factories import profile

PARENT = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n\n\ndef kernel(x):\n"


def m(cid: str, ms: float) -> Measured:
    return Measured(cid, ms)


def test_the_beam_is_elitist_and_keeps_the_fastest() -> None:
    incumbent = m("best", 1.0)
    beam, best = select_beam(incumbent, [m("a", 2.0)], [m("b", 1.5), m("c", 3.0)], width=2)
    assert best == incumbent  # nothing beat it: it stays, first
    assert [x.candidate_id for x in beam] == ["best", "b"]
    beam, best = select_beam(incumbent, [], [m("d", 0.5), m("e", 0.7)], width=3)
    assert best.candidate_id == "d"
    assert [x.candidate_id for x in beam] == ["d", "e", "best"]
    beam, _ = select_beam(incumbent, [incumbent], [], width=6)
    assert [x.candidate_id for x in beam] == ["best"]  # no duplicates


def test_lessons_follow_accelopts_rules() -> None:
    parent = m("p", 1.0)

    def pair(child: str, ms: float, group: str) -> Pair:
        return Pair(parent, m(child, ms), group)

    pairs = [
        pair("fast1", 0.5, "g1"),  # 2.0x: positive
        pair("meh1", 0.99, "g1"),  # the group's fastest is kept, not this one
        pair("fast2", 0.9, "g2"),  # 1.11x: positive
        pair("tiny", 0.98, "g3"),  # 1.02x: below the 1.04 threshold
        pair("slow1", 2.0, "g4"),  # 0.5x: negative
        pair("slow2", 1.5, "g5"),  # 0.67x: negative
        pair("same", 1.0, "g6"),  # exactly 1: dropped
    ]
    chosen = select_lessons(pairs, limit=8, positive=1.04, negative=1.15)
    assert [p.child.candidate_id for p in chosen] == ["fast1", "fast2", "slow1", "slow2"]
    # positives take at most half the places, negatives (worst first) fill the rest
    chosen = select_lessons(pairs, limit=2, positive=1.04, negative=1.15)
    assert [p.child.candidate_id for p in chosen] == ["fast1", "slow1"]


def _lesson(
    item: str,
    task: str,
    speedup: float,
    *,
    target: str = "trn1",
    title: str = "Hoist loads",
    dialect: str = "nki-legacy",
) -> ExperienceSummarized:
    return ExperienceSummarized(
        task=task,
        search_id=f"{task}@1",
        operators=["matmul", "sum"] if task.startswith("mm") else ["exp"],
        item_id=item,
        polarity="positive" if speedup > 1 else "negative",
        slow_candidate_id="s",
        fast_candidate_id="f",
        speedup=speedup,
        title=title,
        summary_blob="0" * 64,
        llm_call_id="call",
        model="m",
        backend="nkisim",
        target=target,
        dialect=dialect,
    )


def _fold(projection: MemoryProjection, events: list[ExperienceSummarized]) -> MemoryState:
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


def test_the_memory_retires_the_weakest_evidence_deterministically() -> None:
    projection = MemoryProjection(capacity=2)
    state = _fold(
        projection,
        [
            _lesson("a", "mm1", 1.5),
            _lesson("b", "mm1", 3.0),
            _lesson("c", "mm1", 0.5),  # |ln 0.5| > |ln 1.5|: a retires
            _lesson("d", "other", 1.1),  # another task: its own capacity
            _lesson("a", "mm1", 9.9),  # the same item again: ignored
            _lesson("e", "mm1", 2.0, title="No optimization found"),
        ],
    )
    active = {i for i, item in state.items.items() if item.status == "active"}
    assert active == {"b", "c", "d"}
    assert state.items["a"].status == "retired"
    assert [(c["position"], c["change"], c["item_id"]) for c in state.log] == [
        (1, "added", "a"),
        (2, "added", "b"),
        (3, "added", "c"),
        (3, "retired", "a"),
        (4, "added", "d"),
        (6, "ignored", "e"),
    ]
    assert projection.load(projection.dump(state)) == state


def test_the_planner_sees_its_own_lessons_first_then_similar_tasks_same_hardware() -> None:
    state = _fold(
        MemoryProjection(),
        [
            _lesson("own-weak", "mm1", 1.1),
            _lesson("own-strong", "mm1", 2.0),
            _lesson("similar", "mm2", 4.0),
            _lesson("unrelated", "act", 8.0),
            _lesson("other-chip", "mm1", 9.0, target="trn2"),
        ],
    )

    def shown(operators: list[str], limit: int) -> list[str]:
        return [
            i.item_id
            for i in shown_to_planner(
                state,
                task="mm1",
                operators=operators,
                target="trn1",
                dialect="nki-legacy",
                limit=limit,
            )
        ]

    assert shown(["matmul", "sum"], 4) == ["own-strong", "own-weak", "similar", "unrelated"]
    assert "unrelated" not in shown(["matmul"], 3)
    assert "other-chip" not in shown([], 10)


def test_operators_are_read_from_forward() -> None:
    source = (
        "import numpy as np\n\ndef forward(x, w):\n"
        "    y = x / np.sqrt(np.mean(x * x))\n    return y @ w\n"
    )
    assert operators(source) == ["divide", "matmul", "mean", "multiply", "sqrt"]
    assert operators("def get_inputs(): pass") == []
    assert similarity(["a", "b"], ["b", "c"]) == pytest.approx(1 / 3)
    assert similarity([], []) == 0.0


def test_code_is_the_first_complete_fenced_block() -> None:
    text = (
        "Plan done.\n```python\n@nki.jit\ndef kernel(x):\n    return x\n```\n```python\nother\n```"
    )
    code = extract_code(text, "stop", PARENT)
    assert code.startswith("import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n")
    assert "def kernel(x):" in code
    assert "other" not in code
    own_imports = "```\nimport numpy as np\n\ndef kernel(x):\n    pass\n```"
    assert extract_code(own_imports, "stop", PARENT).startswith("import numpy as np")
    for text, finish, reason in [
        ("no code at all", "stop", "no_code"),
        ("cut before code", "length", "truncated"),
        ("```python\ndef kernel(x):\n    return", "length", "truncated"),
        ("```python\ndef helper():\n    pass\n```", "stop", "no_code"),
    ]:
        with pytest.raises(NoCode) as caught:
            extract_code(text, finish, PARENT)
        assert caught.value.reason == reason, text


def test_triton_code_must_define_run() -> None:
    module = "```python\nimport triton\n\n\ndef run(x):\n    return x\n```"
    assert "def run(x):" in extract_code(module, "stop", PARENT, ("run",))
    with pytest.raises(NoCode, match="no function named `run`"):
        extract_code("```python\ndef kernel(x):\n    pass\n```", "stop", PARENT, ("run",))


def test_lessons_are_titled() -> None:
    lesson = parse_lesson("Here:\n**Fuse the two loops**\n\nBecause.\n")
    assert (lesson.title, lesson.empty) == ("Fuse the two loops", False)
    assert parse_lesson("**No optimization found**").empty
    assert parse_lesson("# Plain heading\nbody").title == "Plain heading"


def test_prompts_refuse_to_go_out_half_filled() -> None:
    prompts = Prompts("nki-legacy")
    messages = prompts.messages("executor", reference="R", kernel="K", plan="P")
    assert "legacy `neuronxcc.nki`" in messages[0]["content"]
    assert "Plan:\nP" in messages[1]["content"]
    with pytest.raises(PromptError, match="missing values"):
        prompts.render("executor.user", reference="R", kernel="K")
    with pytest.raises(PromptError, match="no place for"):
        prompts.render("executor.user", reference="R", kernel="K", plan="P", extra="x")
    with pytest.raises(PromptError, match="no prompts for dialect"):
        Prompts("cuda")
    planner = prompts.render("planner.system", experiences="")
    assert "mm_arithmetic_intensity" in planner  # the glossary of the profile counters
    assert "PSUM" in planner  # the NKI facts


def test_tunables_change_one_constant_at_a_time() -> None:
    source = "TILE = 512\nDEPTH = 2\n\ndef kernel(x):\n    return x\n"
    found = variants(
        source, {"TILE": [256, 512, 1024], "DEPTH": [2], "ABSENT": [1]}, isolation=PARSE_ISOLATION
    )
    assert [(name, value) for name, value, _ in found] == [("TILE", 256), ("TILE", 1024)]
    assert found[0][2].startswith("TILE = 256\nDEPTH = 2\n")


def test_llm_settings_per_role(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(__import__("os").environ):
        if name.startswith("ACCELOPT_"):
            monkeypatch.delenv(name)
    assert not Settings().agents_enabled
    with pytest.raises(SettingsError, match="ACCELOPT_LLM_BASE_URL"):
        Settings().llm_config()
    monkeypatch.setenv("ACCELOPT_LLM_BASE_URL", "http://vllm:8000/v1")
    with pytest.raises(SettingsError, match="ACCELOPT_PLANNER_MODEL"):
        Settings().llm_config()
    monkeypatch.setenv("ACCELOPT_PLANNER_MODEL", "gpt-oss-120b")
    monkeypatch.setenv("ACCELOPT_EXECUTOR_MODEL", "qwen3-coder")
    monkeypatch.setenv(
        "ACCELOPT_LLM_ROLES",
        '{"executor": {"base_url": "http://coder:8000/v1", "temperature": 1.0}}',
    )
    config = Settings().llm_config()
    assert config.roles["planner"].model == config.roles["summarizer"].model == "gpt-oss-120b"
    assert config.roles["fixer"].model == "qwen3-coder"
    assert config.roles["executor"].base_url == "http://coder:8000/v1"
    assert config.roles["executor"].temperature == 1.0
    assert config.roles["planner"].base_url == "http://vllm:8000/v1"
    monkeypatch.setenv("ACCELOPT_LLM_ROLES", '{"coder": {}}')
    with pytest.raises(SettingsError, match="unknown roles"):
        Settings().llm_config()
    monkeypatch.setenv("ACCELOPT_LLM_ROLES", '{"planner": {"colour": "red"}}')
    with pytest.raises(SettingsError, match="unknown keys"):
        Settings().llm_config()


def test_the_planner_is_told_where_an_estimate_is_weak() -> None:
    """An estimated NKI profile carries the cost model's known weaknesses that apply to it; a
    measured one carries none."""

    def shown(peak: float, backend: str = "nkisim") -> dict[str, object]:  # the factory's default
        counters = {"sbuf_peak_bytes_per_partition": peak, "sbuf_bytes_per_partition": 196608.0}
        return _planner_profile(profile("silu", "h", counters=counters, backend=backend))

    assert shown(200704.0)["estimate_caveats"] == [ENGINE_SPLIT, SPILLS]
    assert shown(190000.0)["estimate_caveats"] == [ENGINE_SPLIT, REREADS]
    assert shown(16512.0)["estimate_caveats"] == [ENGINE_SPLIT]
    assert "estimate_caveats" not in shown(200704.0, backend="neuron")


def test_the_planner_sees_the_config_an_autotuned_kernel_was_timed_with() -> None:
    chosen = {"silu_kernel": ["BLOCK=1024, num_warps=8, num_ctas=1, num_stages=3"]}
    tuned = profile("silu", "h", backend="triton", target="H100", autotuned=chosen)
    assert _planner_profile(tuned)["autotuned"] == chosen
    assert "autotuned" not in _planner_profile(profile("silu", "h", backend="triton"))


def test_the_planner_sees_a_gpus_counters_per_kernel_or_why_there_are_none() -> None:
    kernels = [
        {"kernel": f"k{i}", "dram_read_bytes": 1e6 * i, "l2_hit_rate_pct": 50.0} for i in range(10)
    ]
    counters = {"gpu_dram_read_bytes": 4.5e7, "gpu_sm_throughput_pct": 12.0}
    measured = profile(
        "silu", "h", backend="triton", target="H100", gpu_kernels=kernels, counters=counters
    )
    shown = _planner_profile(measured)
    assert shown["gpu_kernels"] == kernels[:8]  # the first kernels of the run, in order
    assert shown["gpu_dram_read_bytes"] == 4.5e7
    assert shown["gpu_sm_throughput_pct"] == 12.0
    assert "gpu_counters_caveat" not in shown
    blind = profile("silu", "h", backend="triton", counters_unavailable="no ncu on this host")
    shown = _planner_profile(blind)
    assert "gpu_kernels" not in shown
    assert "no ncu on this host" in str(shown["gpu_counters_caveat"])


def test_the_planner_sees_each_workloads_latency_beside_their_geometric_mean() -> None:
    def outcome(name: str, latency: float) -> dict[str, object]:
        return {
            "name": name,
            "uuid": f"u-{name}",
            "correct": True,
            "latency_ms": latency,
            "latency_kind": "estimated",
            "error_kind": None,
            "max_rel_l2": 0.0,
            "pct_of_peak": None,
        }

    over = profile("silu", "h", latency_ms=2.0, workloads=[outcome("w0", 1.0), outcome("w1", 4.0)])
    assert _planner_profile(over)["workloads"] == [
        {"name": "w0", "uuid": "u-w0", "latency": 1.0},
        {"name": "w1", "uuid": "u-w1", "latency": 4.0},
    ]
    assert "workloads" not in _planner_profile(profile("silu", "h"))
