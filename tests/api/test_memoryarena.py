"""MemoryArena's memory-server endpoints (/memory/initialize, /memory/add, /memory/wrap_user_prompt)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from litestar.testing import TestClient

from api.app import create_app
from api.memoryarena import MemoryArenaSettings, memory_line, wrap_prompt
from codemem.config import Settings
from codemem.encoders import ShippedEmbedder
from codemem.memory import Memory
from codemem.memoryarena import Recalled
from tests.conftest import make_client

SYSTEM = "codemem"


def init(client: TestClient, user_id: str) -> dict:
    r = client.post("/memory/initialize", json={"user_id": user_id, "memory_system_name": SYSTEM})
    assert r.status_code == 200, r.text
    return r.json()


def add(client: TestClient, user_id: str, chunk: str) -> dict:
    r = client.post("/memory/add", json={"user_id": user_id, "chunk": chunk, "memory_system_name": SYSTEM})
    assert r.status_code == 200, r.text
    return r.json()


def wrap(client: TestClient, user_id: str, question: str) -> str:
    r = client.post("/memory/wrap_user_prompt",
                    json={"user_id": user_id, "question": question, "memory_system_name": SYSTEM})
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"status", "user_id", "prompt"} and body["status"] == "ok" and body["user_id"] == user_id
    return body["prompt"]


def memory_lines(prompt: str) -> list[str]:
    lines = prompt.split("\n")
    assert lines[0] == "<memory_context>"
    end = lines.index("</memory_context>")
    inner = lines[1:end]
    if inner == ["None"]:
        return []
    assert all(ln.startswith("<memory>") and ln.endswith("</memory>") for ln in inner), inner
    return [ln[len("<memory>"):-len("</memory>")] for ln in inner]


def entry(task: str, solution: str) -> str:
    return f"## Task: {task}\n## solution: {solution}\n"


def test_three_endpoints_round_trip_with_the_exact_shapes(client: TestClient) -> None:
    uid = "task-7f3a ü"
    assert init(client, uid) == {"status": "ok", "user_id": uid, "memory_system_name": SYSTEM}
    assert add(client, uid, entry("Find a walnut standing desk", "B0SYNDESK41")) == {
        "status": "ok", "user_id": uid, "response": None}
    prompt = wrap(client, uid, "Pick a monitor arm for the desk")
    assert prompt == (
        "<memory_context>\n"
        "<memory>## Task: Find a walnut standing desk\\n## solution: B0SYNDESK41</memory>\n"
        "</memory_context>\n"
        "User: Pick a monitor arm for the desk"
    )


def test_empty_memory_says_none(client: TestClient) -> None:
    init(client, "u1")
    assert wrap(client, "u1", "anything?") == "<memory_context>\nNone\n</memory_context>\nUser: anything?"


def test_not_initialized_user_is_404_for_add_and_wrap(client: TestClient, memory: Memory) -> None:
    init(client, "someone-else")
    for path, extra in (("/memory/add", {"chunk": "x"}), ("/memory/wrap_user_prompt", {"question": "q"})):
        r = client.post(path, json={"user_id": "never-initialized", "memory_system_name": SYSTEM, **extra})
        assert r.status_code == 404
        assert r.json() == {"detail": {"reason": "user_id is not initialized; initialize it first"}}
    assert memory.store.count("kind = 'message'") == 0


def test_reinitialize_empties_that_users_memory_only(client: TestClient) -> None:
    init(client, "a")
    init(client, "b")
    add(client, "a", entry("alpha task", "ANSWER-ALPHA-1"))
    add(client, "b", entry("beta task", "ANSWER-BETA-1"))
    init(client, "a")
    assert memory_lines(wrap(client, "a", "alpha task")) == []
    assert client.post("/search", json={"user_id": "a", "query": "alpha task", "top_k": 5}).json() == {"data": []}
    assert "ANSWER-BETA-1" in wrap(client, "b", "beta task")
    add(client, "a", entry("alpha again", "ANSWER-ALPHA-2"))  # still initialized after the reset
    assert [ln for ln in memory_lines(wrap(client, "a", "alpha")) if "ANSWER-ALPHA" in ln] == [
        "## Task: alpha again\\n## solution: ANSWER-ALPHA-2"]


def test_users_are_isolated(client: TestClient) -> None:
    users = ["run:1:task-a", "run:1:task-b", "x' OR '1'='1"]
    for i, uid in enumerate(users):
        init(client, uid)
        add(client, uid, entry("Which harbour hosted the regatta?", f"SECRET-HARBOUR-{i}"))
    for i, uid in enumerate(users):
        lines = memory_lines(wrap(client, uid, "Which harbour hosted the regatta?"))
        assert len(lines) == 1 and f"SECRET-HARBOUR-{i}" in lines[0]


def test_earlier_answers_are_in_the_prompt_in_the_order_added(client: TestClient) -> None:
    init(client, "t")
    answers = ["Port Vellamore", "Ines Calloway-Brandt", "1897", "the Saltmarsh Maritime Collection"]
    questions = ["Which town hosted the 1911 regatta?", "Who founded the town's shipyard?",
                 "When did the founder publish the hull treatise?", "Which museum holds the treatise?"]
    for q, a in zip(questions, answers, strict=True):
        add(client, "t", entry(q, a))
    lines = memory_lines(wrap(client, "t", "Given all the above, who curates that museum today?"))
    assert lines == [f"## Task: {q}\\n## solution: {a}" for q, a in zip(questions, answers, strict=True)]


def test_question_is_verbatim_at_the_end(client: TestClient) -> None:
    init(client, "q")
    add(client, "q", entry("warm-up", "done"))
    question = "### BACKGROUND:\nLet $\\nabla\\cdot F$ ...\n</memory_context>\n### PROBLEM:\n  Compute it.  \n"
    prompt = wrap(client, "q", question)
    assert prompt.endswith("\nUser: " + question)
    assert prompt.count("</memory_context>") == 2  # the second one is the question's own


def test_a_retried_chunk_is_stored_once(client: TestClient, memory: Memory) -> None:
    init(client, "r")
    chunk = entry("retry me", "ONCE-ONLY")
    add(client, "r", chunk)
    add(client, "r", chunk)
    assert memory.store.count("kind = 'message'") == 1
    assert [ln for ln in memory_lines(wrap(client, "r", "retry me")) if "ONCE-ONLY" in ln] == [
        "## Task: retry me\\n## solution: ONCE-ONLY"]


def test_multiline_chunks_stay_one_line_and_cannot_close_the_tags(client: TestClient) -> None:
    init(client, "m")
    chunk = "line one\r\nline two </memory> </memory_context>\n\n{\"json\": [1, 2]}\n"
    add(client, "m", chunk)
    lines = memory_lines(wrap(client, "m", "line one"))
    assert lines == ["line one\\nline two <\\/memory> <\\/memory_context>\\n\\n{\"json\": [1, 2]}"]


def test_sessions_added_through_add_come_back_as_their_cards(client: TestClient) -> None:
    init(client, "mixed")
    body = {"request_id": "r1", "user_id": "mixed", "session_id": "s-aml",
            "messages": [{"role": "user", "content": "QuerySet.filter(None) raises TypeError"},
                         {"role": "assistant", "content": "Guarded None in django/db/models/query.py"}]}
    assert client.post("/add", json=body).status_code == 200
    add(client, "mixed", entry("unrelated chunk", "CHUNK-1"))
    lines = memory_lines(wrap(client, "mixed", "TypeError in QuerySet.filter"))
    assert len(lines) == 2
    card = next(ln for ln in lines if "CHUNK-1" not in ln)
    assert card.startswith("## Task\\nQuerySet.filter(None) raises TypeError")


def test_initialization_survives_a_restart(settings: Settings, embedder: ShippedEmbedder) -> None:
    with Memory(settings, embedder=embedder) as first, make_client(settings, first) as c:
        init(c, "durable")
        add(c, "durable", entry("before the restart", "KEPT-1"))
    with Memory(settings, embedder=embedder) as second, make_client(settings, second) as c:
        add(c, "durable", entry("after the restart", "KEPT-2"))
        prompt = wrap(c, "durable", "restart")
        assert "KEPT-1" in prompt and "KEPT-2" in prompt


def test_delete_user_also_forgets_the_initialization(client: TestClient) -> None:
    init(client, "gone")
    add(client, "gone", entry("t", "a"))
    assert client.delete("/users/gone").json() == {"user_id": "gone", "deleted": 3}  # chunk, its card, registration
    r = client.post("/memory/wrap_user_prompt", json={"user_id": "gone", "question": "t", "memory_system_name": SYSTEM})
    assert r.status_code == 404


@pytest.fixture
def tight_client(settings: Settings, memory: Memory) -> Iterator[TestClient]:
    with TestClient(create_app(settings, memory, MemoryArenaSettings(top_k=3, token_budget=30))) as c:
        yield c


def test_token_budget_and_top_k_bound_the_memories(tight_client: TestClient) -> None:
    init(tight_client, "b")
    for i in range(5):
        add(tight_client, "b", entry(f"subtask {i} about gadget {i}", f"GADGET-{i}-" + "x" * 60))
    lines = memory_lines(wrap(tight_client, "b", "subtask 3 about gadget 3"))
    assert len(lines) == 1 and "GADGET-3-" in lines[0]  # the best one always, nothing past 30 tokens


def test_three_memories_at_most_with_top_k_3(tight_client: TestClient) -> None:
    tight_client.app.state.memoryarena = MemoryArenaSettings(top_k=3, token_budget=0)
    init(tight_client, "k")
    for i in range(5):
        add(tight_client, "k", entry(f"step {i}", f"RESULT-{i}"))
    assert len(memory_lines(wrap(tight_client, "k", "step"))) == 3


@pytest.mark.parametrize(
    "path, body, field",
    [
        ("/memory/initialize", {"memory_system_name": SYSTEM}, "user_id"),
        ("/memory/initialize", {"user_id": "u"}, "memory_system_name"),
        ("/memory/initialize", {"user_id": 5, "memory_system_name": SYSTEM}, "user_id"),
        ("/memory/initialize", {"user_id": "  ", "memory_system_name": SYSTEM}, "user_id"),
        ("/memory/add", {"user_id": "u", "memory_system_name": SYSTEM}, "chunk"),
        ("/memory/add", {"user_id": "u", "chunk": ["a"], "memory_system_name": SYSTEM}, "chunk"),
        ("/memory/add", {"user_id": "u", "chunk": " \n ", "memory_system_name": SYSTEM}, "chunk"),
        ("/memory/wrap_user_prompt", {"user_id": "u", "memory_system_name": SYSTEM}, "question"),
        ("/memory/wrap_user_prompt", {"user_id": "u", "question": "", "memory_system_name": SYSTEM}, "question"),
    ],
)
def test_malformed_bodies_are_422_naming_the_field(client: TestClient, path: str, body: dict, field: str) -> None:
    init(client, "u")
    r = client.post(path, json=body)
    assert r.status_code == 422, r.text
    assert field in r.json()["detail"]["reason"]


def test_body_that_is_not_json_is_400(client: TestClient) -> None:
    r = client.post("/memory/add", content=b"{nope", headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["detail"]["reason"]


def test_api_key_is_required_when_configured(keyed_client: TestClient) -> None:
    body = {"user_id": "u", "memory_system_name": SYSTEM}
    assert keyed_client.post("/memory/initialize", json=body).status_code == 401
    assert keyed_client.post("/memory/initialize", json=body, headers={"X-Api-Key": "s3cret-key"}).status_code == 200
    for path, extra in (("/memory/add", {"chunk": "c"}), ("/memory/wrap_user_prompt", {"question": "q"})):
        assert keyed_client.post(path, json={**body, **extra}).status_code == 401
        assert keyed_client.post(path, json={**body, **extra}, headers={"Authorization": "Bearer s3cret-key"}).status_code == 200


# -- the prompt layout, without a server -------------------------------------------------------

def _recalled(text: str, created_at: int) -> Recalled:
    return Recalled(session_id=f"chunk:{created_at}", text=text, created_at=created_at, score=1.0)


def test_wrap_prompt_lists_memories_oldest_first_whatever_their_rank() -> None:
    ranked = [_recalled("third", 30), _recalled("first", 10), _recalled("second", 20)]
    assert wrap_prompt("Q?", ranked) == (
        "<memory_context>\n<memory>first</memory>\n<memory>second</memory>\n<memory>third</memory>\n"
        "</memory_context>\nUser: Q?"
    )


@pytest.mark.parametrize(
    "text, line",
    [
        ("a\nb", "<memory>a\\nb</memory>"),
        ("a\r\nb\rc\u2028d", "<memory>a\\nb\\nc\\nd</memory>"),
        ("$\\nabla\\cdot F$", "<memory>$\\nabla\\cdot F$</memory>"),  # LaTeX left as written
        ("x </memory> y", "<memory>x <\\/memory> y</memory>"),
    ],
)
def test_memory_line_is_one_line(text: str, line: str) -> None:
    assert memory_line(text) == line


def test_memoryarena_settings_read_their_own_variables() -> None:
    assert MemoryArenaSettings.from_env({"CODEMEM_MEMORYARENA_TOP_K": "5", "CODEMEM_TOP_K": "9"}) == \
        MemoryArenaSettings(top_k=5, token_budget=8_000)
    with pytest.raises(ValueError, match="CODEMEM_MEMORYARENA_TOKEN_BUDGET='lots': must be a whole number"):
        MemoryArenaSettings.from_env({"CODEMEM_MEMORYARENA_TOKEN_BUDGET": "lots"})
