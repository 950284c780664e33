"""The Add/Search contract (../shared/AML_CONTRACT.md), rule by rule, over HTTP: each rule in
process (Litestar's test client) and over HTTPS, as `codemem serve --tls-cert --tls-key`
answers it (tests/https.py)."""

from __future__ import annotations

import base64
import re
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from litestar.testing import TestClient

from codemem.config import Settings
from codemem.memory import Memory
from tests.answers import message_texts
from tests.conftest import add_body, make_client
from tests.https import https_client

CODE_TEXTS = (
    "The QuerySet.filter call raises TypeError when given None for a related field.",
    "I changed django/db/models/query.py so QuerySet.filter checks for None before the lookup.",
    "Tests of QuerySet.filter in tests/queries/test_filter.py pass now.",
)


@pytest.fixture(params=["in-process", "https"])
def client(request: pytest.FixtureRequest, settings: Settings, memory: Memory, tmp_path: Path) -> Iterator[TestClient]:
    with make_client(settings, memory) if request.param == "in-process" else https_client(settings, memory, tmp_path) as c:
        yield c


@pytest.fixture(params=["in-process", "https"])
def keyed_client(request: pytest.FixtureRequest, settings: Settings, memory: Memory,
                 tmp_path: Path) -> Iterator[TestClient]:
    keyed = settings.replace({"server.api_key": "s3cret-key"})
    with make_client(keyed, memory) if request.param == "in-process" else https_client(keyed, memory, tmp_path) as c:
        yield c


def messages(hits: list[dict]) -> list[str]:
    return message_texts(hits)


def stored_messages(memory: Memory) -> int:
    return memory.store.count("kind = 'message'")


def search(client: TestClient, user_id: str, query: str, top_k: int = 10) -> list[dict]:
    r = client.post("/search", json={"query": query, "user_id": user_id, "top_k": top_k})
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"data"}
    return body["data"]


def test_add_echoes_ids_byte_for_byte_and_is_searchable_at_once(client: TestClient) -> None:
    ids = {
        "request_id": "eval:run_abc123:cambench:task-7:chunk-0",
        "user_id": "eval:run_abc123:cambench:task-7 ü 🙂",
        "session_id": "eval:run_abc123:sample:7\t",
    }
    body = add_body(ids["request_id"], ids["user_id"], ids["session_id"], CODE_TEXTS)
    r = client.post("/add", json=body)
    assert r.status_code == 200
    assert r.json() == {"success": True, **ids}
    hits = search(client, ids["user_id"], "TypeError in QuerySet.filter with None")
    assert hits, "an acknowledged Add must be searchable immediately"
    assert hits[0]["metadata"]["kind"] == "card"
    assert CODE_TEXTS[0] in hits[0]["content"]
    assert messages(hits)[0] == CODE_TEXTS[0]
    assert all(h["session_id"] == ids["session_id"] for h in hits)


def test_search_items_have_contract_fields_and_decreasing_scores(client: TestClient) -> None:
    client.post("/add", json=add_body("r1", texts=CODE_TEXTS))
    client.post("/add", json=add_body("r2", session_id="s2", texts=("Unrelated note about sympy matrices.",)))
    hits = search(client, "u1", "QuerySet.filter None TypeError", top_k=10)
    assert sorted(m for m in messages(hits) if m in CODE_TEXTS) == sorted(CODE_TEXTS)
    assert hits[0]["metadata"]["kind"] == "card" and hits[0]["session_id"] == "s1"
    sessions = [h["session_id"] for h in hits]
    assert sessions == sorted(sessions)  # the related experience whole, then the unrelated one, if at all
    cards = {h["session_id"]: h["metadata"]["relevance"] for h in hits if h["metadata"]["kind"] == "card"}
    assert cards.get("s2", 0.0) < cards["s1"]
    for h in hits:
        assert isinstance(h["id"], str) and h["id"]
        assert isinstance(h["content"], str) and h["content"]
        assert h["created_at"].endswith("Z")
        assert h["metadata"]["kind"] in {"card", "step", "message"}
        assert h["session_id"] in {"s1", "s2"}
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert len({h["id"] for h in hits}) == len(hits)


def test_top_k_bounds_the_result_and_empty_memory_gives_empty_data(client: TestClient) -> None:
    assert search(client, "nobody", "anything at all") == []
    client.post("/add", json=add_body("r1", texts=CODE_TEXTS))
    for i in range(3):  # more experiences than top_k
        client.post("/add", json=add_body(f"x{i}", session_id=f"other-{i}", texts=(f"QuerySet note {i}",)))
    assert len(search(client, "u1", "QuerySet", top_k=2)) == 2
    assert len(search(client, "u1", "QuerySet", top_k=1)) == 1
    everything = search(client, "u1", "QuerySet", top_k=1_000_000_000)
    # One item per experience: the best one's card with its messages inlined, the others' cards.
    assert [h["metadata"]["kind"] for h in everything] == ["card"] * 4
    assert {h["session_id"] for h in everything} == {"s1", "other-0", "other-1", "other-2"}
    first = everything[0]["session_id"]
    own = CODE_TEXTS if first == "s1" else (f"QuerySet note {first[-1]}",)
    assert sorted(messages(everything)) == sorted(own)  # only the best experience carries its messages


def test_retry_with_same_request_id_stores_nothing_twice(client: TestClient, memory: Memory) -> None:
    body = add_body("retry-1", texts=CODE_TEXTS)
    first = client.post("/add", json=body)
    second = client.post("/add", json=body)
    assert first.status_code == second.status_code == 200
    assert first.json() == second.json()
    assert stored_messages(memory) == len(CODE_TEXTS)
    assert memory.store.count("kind = 'card'") == 1
    assert sorted(messages(search(client, "u1", "QuerySet filter", top_k=100))) == sorted(CODE_TEXTS)


def test_concurrent_retries_of_one_request_store_it_once(client: TestClient, memory: Memory) -> None:
    body = add_body("storm-1", texts=CODE_TEXTS)
    with ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(lambda _: client.post("/add", json=body), range(8)))
    assert [r.status_code for r in responses] == [200] * 8  # each a retry, answered as the first copy
    assert all(r.json() == responses[0].json() for r in responses)
    assert stored_messages(memory) == len(CODE_TEXTS)
    assert memory.store.count("kind = 'card'") == 1


def test_a_request_id_reused_with_another_body_is_a_conflict_and_the_first_content_stays(
        client: TestClient, memory: Memory) -> None:
    first = client.post("/add", json=add_body("reused-1", texts=CODE_TEXTS))
    assert first.status_code == 200
    for other in (add_body("reused-1", texts=("Rewrote the cache layer in cache/lru.py",)),  # other messages
                  add_body("reused-1", texts=CODE_TEXTS[:1]),  # fewer of them
                  {**add_body("reused-1", texts=CODE_TEXTS),  # the same words from another role
                   "messages": [{**m, "role": "assistant"} for m in add_body("reused-1", texts=CODE_TEXTS)["messages"]]}):
        refused = client.post("/add", json=other)
        assert refused.status_code == 409
        reason = refused.json()["detail"]["reason"]
        assert set(refused.json()) == {"detail"} and "'reused-1'" in reason and "first content is kept" in reason
    assert stored_messages(memory) == len(CODE_TEXTS)
    assert sorted(messages(search(client, "u1", "QuerySet filter", top_k=100))) == sorted(CODE_TEXTS)
    again = client.post("/add", json=add_body("reused-1", texts=CODE_TEXTS))  # a true retry still succeeds
    assert again.status_code == 200 and again.json() == first.json()


def test_concurrent_copies_of_one_request_id_with_other_bodies_store_one_and_refuse_the_rest(
        client: TestClient, memory: Memory) -> None:
    bodies = [add_body("race-1", texts=(f"Fixed the flaky upload test number {i} in tests/test_upload.py",))
              for i in range(6)]
    with ThreadPoolExecutor(6) as pool:
        responses = list(pool.map(lambda b: client.post("/add", json=b), bodies))
    assert sorted(r.status_code for r in responses) == [200] + [409] * 5
    kept = bodies[[r.status_code for r in responses].index(200)]["messages"][0]["content"]
    assert messages(search(client, "u1", "flaky upload test", top_k=100)) == [kept]


def test_same_request_id_under_another_user_is_another_memory(client: TestClient, memory: Memory) -> None:
    client.post("/add", json=add_body("shared-id", user_id="a", texts=("alpha fact",)))
    client.post("/add", json=add_body("shared-id", user_id="b", texts=("beta fact",)))
    assert messages(search(client, "a", "fact")) == ["alpha fact"]
    assert messages(search(client, "b", "fact")) == ["beta fact"]


HOSTILE_USER_IDS = [
    "plain",
    "o'brien",
    "x' OR '1'='1",
    "u\" OR 1=1 --",
    "'; DROP TABLE items; --",
    "user_id = 'plain'",
    "%",
    "_",
    "ünïcødé-用户-🙂",
    "back\\slash",
    " leading-space",
]


def test_isolation_holds_for_hostile_user_ids(client: TestClient) -> None:
    for i, uid in enumerate(HOSTILE_USER_IDS):
        r = client.post("/add", json=add_body(f"req-{i}", user_id=uid, texts=(f"secret number {i} of the memory",)))
        assert r.status_code == 200
    for i, uid in enumerate(HOSTILE_USER_IDS):
        hits = search(client, uid, "secret number of the memory", top_k=100)
        assert messages(hits) == [f"secret number {i} of the memory"], uid
        assert {h["session_id"] for h in hits} == {"s1"}
        assert all(f"secret number {i} " in h["content"] for h in hits), uid
    assert search(client, "x", "secret number", top_k=100) == []


@pytest.mark.parametrize(
    "headers, status",
    [
        ({"Authorization": "Token s3cret-key"}, 200),
        ({"Authorization": "Bearer s3cret-key"}, 200),
        ({"Authorization": "bearer s3cret-key"}, 200),
        ({"X-Api-Key": "s3cret-key"}, 200),
        ({}, 401),
        ({"Authorization": "Token wrong"}, 401),
        ({"Authorization": "Basic s3cret-key"}, 401),
        ({"X-Api-Key": "s3cret-key-but-longer"}, 401),
        ({"Authorization": "Token"}, 401),  # a scheme without a key (a trailing space is illegal on the wire)
    ],
)
def test_auth_schemes(keyed_client: TestClient, headers: dict[str, str], status: int) -> None:
    r = keyed_client.post("/add", json=add_body("a1"), headers=headers)
    assert r.status_code == status
    s = keyed_client.post("/search", json={"query": "q", "user_id": "u1", "top_k": 1}, headers=headers)
    assert s.status_code == status
    if status == 401:
        assert r.json() == {"detail": {"reason": "missing or wrong API key"}}
        assert "s3cret" not in r.text


def test_health_is_always_open(keyed_client: TestClient) -> None:
    r = keyed_client.get("/health")
    assert r.status_code == 200
    assert r.json()["status"] == "ok"


def test_health_says_what_embeds_queries_and_how_loose_the_store_is(client: TestClient, memory: Memory) -> None:
    client.post("/add", json=add_body("h1"))
    client.post("/add", json=add_body("h2", texts=("world",)))
    # The figures are read in the background, a stale read starting a new one: the second
    # answer after they go stale carries what the store holds now.
    memory.figures.max_age_s = 0
    client.get("/health")
    deadline = time.monotonic() + 30
    while (body := client.get("/health").json())["fragments"] != memory.store.stats()["fragments"]:
        assert time.monotonic() < deadline, body
        time.sleep(0.05)
    # The session-scoped embedder was warmed: its ONNX graph is in use.
    assert body["model_loaded"] is True and body["query_embedding"] == "onnx"
    stats = memory.store.stats()
    assert body["fragments"] == stats["fragments"] >= 2  # compaction is off in tests
    assert body["unindexed_rows"] == stats["unindexed_rows"] > 0
    assert body["compactions"] == 0


def test_health_answers_while_the_store_cannot_be_read(client: TestClient, memory: Memory, monkeypatch) -> None:
    """Under many large Adds reading the store's figures waits behind their commits; /health
    answers from the figures last read and never waits for the store."""
    released = threading.Event()
    monkeypatch.setattr(memory.store, "stats", lambda: (released.wait(60), {})[1])
    memory.figures.max_age_s = 0
    answers: list[int] = []
    probe = threading.Thread(target=lambda: answers.extend(client.get("/health").status_code for _ in range(3)))
    probe.start()
    probe.join(timeout=20)
    released.set()
    assert answers == [200, 200, 200]


def test_health_says_loading_before_the_encoder_is_in(client: TestClient, monkeypatch) -> None:
    from codemem.encoders import packaged

    monkeypatch.setattr(packaged, "_ENCODERS", {})  # as in a server that has not loaded it yet
    body = client.get("/health").json()
    assert body["model_loaded"] is False and body["query_embedding"] == "loading"


def _valid() -> dict:
    return add_body("bad-1")


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda b: b.pop("request_id"), "request_id"),
        (lambda b: b.pop("messages"), "messages"),
        (lambda b: b.pop("user_id"), "user_id"),
        (lambda b: b.pop("session_id"), "session_id"),
        (lambda b: b.update(request_id=""), "request_id"),
        (lambda b: b.update(user_id="   "), "user_id"),
        (lambda b: b.update(session_id=""), "session_id"),
        (lambda b: b.update(messages=[]), "messages"),
        (lambda b: b.update(user_id=7), "user_id"),
        (lambda b: b.update(messages="hello"), "messages"),
        (lambda b: b["messages"][0].update(role="system"), "messages[0].role"),
        (lambda b: b["messages"][0].update(content=""), "messages[0].content"),
        (lambda b: b["messages"][0].update(content=[]), "messages[0].content"),
        (lambda b: b["messages"][0].update(content=5), "messages[0].content"),
        (lambda b: b["messages"][0].update(timestamp="yesterday"), "messages[0].timestamp"),
        (lambda b: b["messages"][0].update(timestamp=2**63), "messages[0].timestamp"),
        (lambda b: b["messages"][0].update(timestamp=-1), "messages[0].timestamp"),
        (lambda b: b["messages"][0].pop("role"), "role"),
    ],
)
def test_add_rejects_malformed_fields_with_422_naming_the_field(client: TestClient, mutate, field: str) -> None:
    body = _valid()
    mutate(body)
    r = client.post("/add", json=body)
    assert r.status_code == 422, r.text
    reason = r.json()["detail"]["reason"]
    assert field in reason
    assert "Traceback" not in r.text


@pytest.mark.parametrize("top_k", [0, -1, "5", 1.5, True, None])
def test_search_rejects_bad_top_k(client: TestClient, top_k: object) -> None:
    r = client.post("/search", json={"query": "q", "user_id": "u1", "top_k": top_k})
    assert r.status_code == 422
    assert "top_k" in r.json()["detail"]["reason"]


@pytest.mark.parametrize(
    "body, field",
    [
        ({"user_id": "u1", "top_k": 3}, "query"),
        ({"query": "q", "top_k": 3}, "user_id"),
        ({"query": "", "user_id": "u1", "top_k": 3}, "query"),
        ({"query": "q", "user_id": "u1", "options": "A"}, "options"),
    ],
)
def test_search_rejects_malformed_fields(client: TestClient, body: dict, field: str) -> None:
    r = client.post("/search", json=body)
    assert r.status_code == 422
    assert field in r.json()["detail"]["reason"]


@pytest.mark.parametrize("raw", [b"{bad json", b"", b"\xff\xfe\x00", b"[1, 2", b'{"query": "\\ud800"}'])
def test_malformed_json_is_a_client_error(client: TestClient, raw: bytes) -> None:
    for path in ("/add", "/search"):
        r = client.post(path, content=raw, headers={"content-type": "application/json"})
        assert r.status_code in (400, 422), r.text
        assert r.json()["detail"]["reason"]


def test_body_over_30_mib_is_413(client: TestClient, memory: Memory) -> None:
    big = add_body("huge", texts=("x" * (30 * 1024 * 1024 + 10),))
    r = client.post("/add", json=big)
    assert r.status_code == 413
    assert "31,457,280 bytes (30 MiB)" in r.json()["detail"]["reason"]  # names the limit
    assert memory.store.count() == 0


def test_unknown_path_is_404_with_reason(client: TestClient) -> None:
    r = client.post("/nope", json={})
    assert r.status_code == 404
    assert r.json()["detail"]["reason"]


def test_search_options_are_part_of_the_question(client: TestClient) -> None:
    client.post("/add", json=add_body("o1", texts=("The capital of France is Paris.", "Bananas are yellow.")))
    hits = search_with_options(client, ["A. Paris", "B. Lyon"])
    assert messages(hits)[0] == "The capital of France is Paris."


def search_with_options(client: TestClient, options: list[str]) -> list[dict]:
    r = client.post("/search", json={"query": "Which city?", "options": options, "user_id": "u1", "top_k": 5})
    assert r.status_code == 200
    return r.json()["data"]


# -- multimodal -----------------------------------------------------------------------------

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64).decode()
JPEG = base64.b64encode(b"\xff\xd8\xff\xe0" + b"\x00" * 64).decode()


def test_multimodal_parts_round_trip_in_order(client: TestClient) -> None:
    parts = [
        {"type": "text", "text": "Screenshot of the failing matplotlib legend"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
        {"type": "text", "text": "and the expected rendering"},
        {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{JPEG}"}},
    ]
    body = {"request_id": "mm1", "user_id": "u1", "session_id": "s1", "messages": [{"role": "user", "content": parts}]}
    assert client.post("/add", json=body).status_code == 200
    r = client.post("/search", json={"query": [{"type": "text", "text": "matplotlib legend screenshot"}], "user_id": "u1", "top_k": 3})
    assert r.status_code == 200
    assert messages(r.json()["data"]) == [parts]


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/cat.png",
        "http://example.com/cat.png",
        "data:image/gif;base64,R0lGODlhAQABAAAAACw=",
        f"data:image/jpeg;base64,{PNG}",
        "data:image/png;base64,!!!notbase64!!!",
        "data:text/plain;base64,aGVsbG8=",
    ],
)
def test_bad_images_are_rejected_with_422(client: TestClient, memory: Memory, url: str) -> None:
    parts = [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": url}}]
    body = {"request_id": "mm2", "user_id": "u1", "session_id": "s1", "messages": [{"role": "user", "content": parts}]}
    r = client.post("/add", json=body)
    assert r.status_code == 422
    assert "messages[0].content[1]" in r.json()["detail"]["reason"]
    assert memory.store.count() == 0


def test_image_over_10_mib_is_refused(client: TestClient) -> None:
    payload = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * (10 * 1024 * 1024 + 1)).decode()
    parts = [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{payload}"}}]
    body = {"request_id": "mm3", "user_id": "u1", "session_id": "s1", "messages": [{"role": "user", "content": parts}]}
    r = client.post("/add", json=body)
    assert r.status_code == 413
    assert "larger than" in r.json()["detail"]["reason"]


# -- data handling --------------------------------------------------------------------------

def test_delete_user_removes_every_memory_of_that_user_only(client: TestClient) -> None:
    for uid in ("gone'user", "kept"):
        client.post("/add", json=add_body(f"d-{uid}", user_id=uid, texts=CODE_TEXTS))
    r = client.delete("/users/gone'user")
    assert r.status_code == 200
    assert r.json() == {"user_id": "gone'user", "deleted": len(CODE_TEXTS) + 1}  # messages and card
    assert search(client, "gone'user", "QuerySet filter", top_k=100) == []
    assert sorted(messages(search(client, "kept", "QuerySet filter", top_k=100))) == sorted(CODE_TEXTS)
    # A retry of the deleted request is a new write, not a resurrection of old rows.
    assert client.delete("/users/gone'user").json()["deleted"] == 0


def test_delete_user_needs_the_key(keyed_client: TestClient) -> None:
    assert keyed_client.delete("/users/u1").status_code == 401


GARBAGE = [
    "\x01\x02\x03 binary-ish \ufffd\ufffd bytes \x7f",
    "x" * 1_000_000,  # one huge line
    '{"tool": "Edit", "input": {"file_path": "a.py", "old_string": ',  # truncated JSON tool blob
    "<function=unknown_tool><parameter=zzz>???</parameter>",  # unknown tool format
    "Tool call Frobnicate {not json at all",
    "\u0000 NUL inside text",
]


def test_garbage_content_is_stored_as_text_never_a_500(client: TestClient, memory: Memory) -> None:
    for i, text in enumerate(GARBAGE):
        r = client.post("/add", json=add_body(f"g{i}", session_id="garbage", texts=(text, "plain follow-up")))
        assert r.status_code == 200, (i, r.text[:200])
    assert stored_messages(memory) == 2 * len(GARBAGE)
    stored = {r["text"] for r in memory.store.rows("kind = 'message'", ["text"])}
    assert "Tool call Frobnicate {not json at all" in stored and "x" * 1_000_000 in stored
    # Searchable like any session: its experience is found (quiet or not, the answer names it).
    hits = search(client, "u1", "Frobnicate unknown_tool", top_k=100)
    assert hits and hits[0]["session_id"] == "garbage"


def test_answers_are_bounded_for_a_reader_with_a_limited_window(client: TestClient, memory: Memory) -> None:
    """A 200k-character tool output comes back trimmed (head and tail), and the answer stops
    at the token budget however large top_k is."""
    huge = "HEAD of the pytest log " + "x" * 200_000 + " TAIL FAILED tests/test_a.py::test_b"
    client.post("/add", json=add_body("big", session_id="big", texts=("Why does test_b fail?", huge)))
    notes = 100  # more than the budget holds, as cards or as turns clipped to their own bound
    for i in range(notes):
        client.post("/add", json=add_body(f"n{i}", session_id=f"note-{i}", texts=(f"test_b note {i} " + "y" * 20_000,)))
    hits = search(client, "u1", "test_b fails", top_k=1_000)
    sizes = [len(h["content"]) for h in hits]
    budget_chars = memory.search_config.answer.budget_tokens * 4
    assert sum(sizes) <= budget_chars + max(sizes)
    assert len(hits) < notes + 2  # the budget, not top_k, ended the answer
    big = [h for h in hits if h["session_id"] == "big"]
    assert big and all(len(h["content"]) < 30_000 for h in big)
    text = "\n".join(h["content"] for h in big)
    assert "HEAD of the pytest log" in text and "characters omitted" in text


def test_search_without_top_k_is_422_naming_it(client: TestClient) -> None:
    r = client.post("/search", json={"query": "q", "user_id": "u1"})
    assert r.status_code == 422, r.text
    assert "top_k" in r.json()["detail"]["reason"]


def test_exact_identifiers_match_as_wholes(client: TestClient) -> None:
    """400 messages that differ only in their numbers: the one holding `module_377` must
    come back among the first 10, not tie with the other 399."""
    texts = tuple(
        f"step {n} ran pytest tests/test_mod{n}.py::test_case and saw AssertionError in module_{n}"
        for n in range(400)
    )
    assert client.post("/add", json=add_body("exact-1", texts=texts)).status_code == 200
    for query, wanted in (
        ("AssertionError in module_377", "module_377"),
        ("tests/test_mod42.py::test_case", "test_mod42.py"),
        ("which step saw test_mod7?", "test_mod7.py"),
    ):
        r = client.post("/search", json={"query": query, "user_id": "u1", "top_k": 10})
        assert r.status_code == 200
        top = [h["content"] for h in r.json()["data"][:10]]
        assert any(re.search(rf"(?<!\w){re.escape(wanted)}(?!\w)", c) for c in top), (query, top)
