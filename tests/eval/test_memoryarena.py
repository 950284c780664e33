"""eval/quality/memoryarena.py: the replay of the synthetic sample through the real app, and its scoring."""

from __future__ import annotations

from pathlib import Path

import pytest
from litestar.testing import TestClient

from api.memoryarena import MemoryArenaSettings
from eval.quality.memoryarena import (
    Task,
    fold,
    load_tasks,
    memories,
    replay_all,
    score,
    summarise,
    table,
)
from tests.conftest import make_client

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "memoryarena"
DOMAINS = {"formal_reasoning_math": (2, 7), "formal_reasoning_phys": (1, 3),
           "bundled_shopping": (2, 7), "progressive_search": (2, 9)}


def test_sample_loads_with_its_domains_and_schemas() -> None:
    tasks = load_tasks([SAMPLE])
    assert {t.domain for t in tasks} == set(DOMAINS)
    for name, (rows, subtasks) in DOMAINS.items():
        mine = [t for t in tasks if t.domain == name]
        assert len(mine) == rows and sum(len(t.questions) for t in mine) == subtasks
        assert all((t.backgrounds is not None) == name.startswith("formal_reasoning") for t in mine)
    shop = next(t for t in tasks if t.domain == "bundled_shopping")
    assert shop.answers[0].startswith('{"target_asin": "B0SYNDESK41"')  # dict answers as JSON text
    math = next(t for t in tasks if t.domain == "formal_reasoning_math")
    assert math.prompt_question(1).startswith("### BACKGROUND:\nSynthetic background")
    assert math.prompt_question(1).endswith("### PROBLEM:\n" + math.questions[1])
    assert math.memory_entry(0) == f"## Task: {math.questions[0]}\n## solution: {math.answers[0]}\n"


def test_replay_of_the_sample_finds_every_earlier_answer(client: TestClient) -> None:
    tasks = load_tasks([SAMPLE])
    replay = replay_all(client, tasks)
    assert replay.errors == []
    summary = summarise(replay)
    assert set(summary) == set(DOMAINS)
    for name, (rows, subtasks) in DOMAINS.items():
        s = summary[name]
        assert (s["rows"], s["subtasks"]) == (rows, subtasks)
        assert s["dependencies"] == sum(len(t.questions) * (len(t.questions) - 1) // 2 for t in tasks if t.domain == name)
        assert s["dependency_recall"] == 1.0 and s["all_dependencies_present"] == 1.0, s["misses"]
        assert s["question_last_verbatim"] == 1.0
        assert s["prompt_tokens"]["p50"] > 0 and s["latency_ms"]["wrap_user_prompt"]["n"] == subtasks
        assert s["latency_ms"]["initialize"]["n"] == rows and s["latency_ms"]["add"]["n"] == subtasks
    assert "| progressive_search | 2 | 9 | 1.00 | 1.00 | 1.00 |" in table(summary)


def test_a_tight_budget_loses_dependencies_and_the_score_shows_it(client: TestClient) -> None:
    client.app.state.memoryarena = MemoryArenaSettings(token_budget=40)
    tasks = [t for t in load_tasks([SAMPLE]) if t.domain == "progressive_search"]
    s = summarise(replay_all(client, tasks))["progressive_search"]
    assert s["dependency_recall"] < 0.6 and s["all_dependencies_present"] < 0.5
    assert s["misses"] and all(m["missing"] for m in s["misses"])


def test_only_memory_lines_count_and_the_question_must_end_the_prompt() -> None:
    task = Task("progressive_search", "r", ["q0", "q1"], ["Port Vellamore", "Ines"], None)
    prompt = "<memory_context>\n<memory>## Task: q0\\n## solution: Port Vellamoreish</memory>\n</memory_context>\nUser: q1"
    assert score(task, 1, prompt).present == [0]  # a substring match counts (answers are distinctive)
    outside = "<memory_context>\nNone\n</memory_context>\nUser: q1 Port Vellamore"
    assert score(task, 1, outside).present == []  # text after the memory context is not memory
    assert not score(task, 1, outside).question_last  # and the question is not verbatim at the end
    assert score(task, 1, prompt).question_last


@pytest.mark.parametrize(
    "answer, line",
    [
        ("$\\det A = 4$.\nHence $p$", "## solution: $\\det A = 4$.\\nHence $p$"),
        ("$\\nabla\\cdot F = 2x$", "## solution: $\\nabla\\cdot F = 2x$"),
        ("a  b\tc", "a b\\n c"),
    ],
)
def test_fold_matches_answers_across_the_prompt_escapes(answer: str, line: str) -> None:
    assert fold(answer) in fold(line)


def test_memories_reads_only_the_memory_lines() -> None:
    prompt = "<memory_context>\n<memory>one</memory>\nstray\n<memory>two</memory>\n</memory_context>\nUser: <memory>q</memory>"
    assert memories(prompt) == ["one", "two"]
    assert memories("User: no context") == []


def test_the_replay_works_against_an_app_with_an_api_key(settings, memory) -> None:  # type: ignore[no-untyped-def]
    with make_client(settings.replace({"server.api_key": "k"}), memory) as c:
        c.headers["X-Api-Key"] = "k"
        tasks = load_tasks([SAMPLE / "formal_reasoning_phys.jsonl"])
        replay = replay_all(c, tasks)
    assert replay.errors == [] and summarise(replay)["formal_reasoning_phys"]["dependency_recall"] == 1.0
    with make_client(settings.replace({"server.api_key": "k"}), memory) as c:
        failed = replay_all(c, tasks)
    assert failed.subtasks == [] and "401" in failed.errors[0]
