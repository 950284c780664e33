"""Hostile input against /add and /search: never a 5xx, every rejection a 4xx with a reason.

Hypothesis builds bodies of three kinds: arbitrary JSON, valid bodies with one field
replaced by arbitrary JSON, and valid bodies with hostile strings (NUL, lone surrogates,
control characters, huge text). Fixed cases cover what a generator rarely reaches: deep
nesting, bytes that are not UTF-8, 10k messages in one Add, oversized and mislabelled
images, absurd top_k values.
"""

from __future__ import annotations

import base64
import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from litestar.testing import TestClient

from codemem.memory import Memory
from codemem.store.filters import user_scope
from codemem.store.schema import key_of
from tests.conftest import add_body

# FUZZ_EXAMPLES=2000 for a longer hunt; CI runs the default.
FUZZ = settings(max_examples=int(os.environ.get("FUZZ_EXAMPLES", "120")), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=50),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
hostile_text = st.one_of(
    st.text(min_size=1, max_size=200),
    st.just("\x00"), st.just("a\x00b"), st.just("\ud800"), st.just("x" * 100_000),
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x1F), min_size=1, max_size=20),
)


def check(r: Any) -> None:
    assert r.status_code < 500, (r.status_code, r.text[:300])
    if r.status_code >= 400:
        reason = r.json()["detail"]["reason"]
        assert isinstance(reason, str) and reason
        assert "Traceback" not in r.text


def valid_add() -> dict[str, Any]:
    return add_body("fuzz-req", texts=("fixed the failing test", "ran pytest"))


def valid_search() -> dict[str, Any]:
    return {"user_id": "u1", "query": "failing test", "top_k": 5}


@FUZZ
@given(body=json_values)
def test_any_json_body(client: TestClient, body: Any) -> None:
    for path in ("/add", "/search"):
        check(client.post(path, content=json.dumps(body)))


# (endpoint, where in a valid body) of every field a platform sends.
FIELDS = [("/add", (f,)) for f in ("request_id", "user_id", "session_id", "messages")] + [
    ("/add", ("messages", 0, f)) for f in ("role", "content", "timestamp")
] + [("/search", (f,)) for f in ("user_id", "query", "top_k", "options")]


@settings(FUZZ, max_examples=3 * FUZZ.max_examples)  # three properties' worth, as before
@given(target=st.sampled_from(FIELDS), value=json_values)
def test_valid_body_with_one_field_replaced(client: TestClient, target: tuple[str, tuple], value: Any) -> None:
    path, where = target
    body = valid_add() if path == "/add" else valid_search()
    parent = body
    for key in where[:-1]:
        parent = parent[key]
    parent[where[-1]] = value
    check(client.post(path, json=body))


def stored_or_refused(client: TestClient, memory: Memory, text: str, ident: str) -> int:
    """Add one message of hostile strings, check it was stored whole or refused cleanly, and
    return the Add's status.

    Stored (200): the user holds exactly that message, and a Search for it shows it. Refused
    (4xx with a reason): the memory holds not one row more than before, of that user or any
    other, and a Search of the user finds nothing."""
    raw = json.dumps({"request_id": ident, "user_id": ident, "session_id": ident,
                      "messages": [{"role": "user", "content": text}]})
    rows_before = memory.store.count()
    added = client.post("/add", content=raw)
    check(added)
    try:
        # Looked up by the user's key, which any string has, so a refused id can be too.
        scope = user_scope(key_of(ident))
        rows, messages = memory.store.count(scope), memory.store.count(f"{scope} AND kind = 'message'")
        searched = client.post("/search", content=json.dumps({"user_id": ident, "query": text, "top_k": 3}))
        check(searched)
        if added.status_code == 200:
            assert messages == 1, f"an Add answered 200 left {messages} messages of its user, not 1"
            assert searched.status_code == 200, searched.text[:300]
            # Long texts come back cut (head and tail kept): the head is always shown.
            shown = [hit["content"] for hit in searched.json()["data"] if isinstance(hit["content"], str)]
            assert any(text[:40] in content for content in shown), (text[:80], [c[:200] for c in shown])
        else:
            assert rows == 0, f"a refused Add ({added.status_code}) left {rows} rows of its user behind"
            assert memory.store.count() == rows_before, "a refused Add left rows behind"
            assert searched.status_code >= 400 or searched.json()["data"] == []
    finally:
        if added.status_code == 200:  # each example starts from an empty memory of its user
            memory.delete_user(ident)
    return int(added.status_code)


@FUZZ
@given(text=hostile_text, ident=hostile_text)
def test_hostile_strings_are_stored_or_refused(client: TestClient, memory: Memory, text: str, ident: str) -> None:
    """An Add of hostile strings is either stored whole, and then its message comes back from
    a Search, or refused with a 4xx that left nothing of it in the memory; never half of each."""
    stored_or_refused(client, memory, text, ident)


@pytest.mark.parametrize(("text", "ident", "status"), [
    ("a\x00b in the message", "u-nul", 200),
    ("x" * 100_000, "u-long", 200),
    ("\x01\x02\x1f control characters", "u-control", 200),
    ("a message of a user id made of control characters", "\x01\x1f", 200),
    (" ", "u-blank", 422),  # no text
    ("a message of a user id holding NUL", "a\x00b", 422),
    ("\ud800", "u-surrogate", 400),  # a lone surrogate is not valid JSON
], ids=["nul-text", "long-text", "control-text", "control-id", "blank-text", "nul-id", "surrogate"])
def test_known_hostile_strings_are_stored_or_refused(
        client: TestClient, memory: Memory, text: str, ident: str, status: int) -> None:
    """Both outcomes of the property above, met on every run (a generator may draw only one):
    each of these Adds is stored, or refused, as it should be, and checked the same way."""
    assert stored_or_refused(client, memory, text, ident) == status


@pytest.mark.parametrize("raw", [
    b"[" * 100_000 + b"]" * 100_000,  # deep nesting
    b'{"user_id": "u1", "query": "\xff\xfe not utf-8", "top_k": 3}',
    b"\x00\x01\x02",
    b"",
    b'{"user_id": "u1", "query": "x", "top_k": 3',  # truncated
])
def test_malformed_bytes(client: TestClient, raw: bytes) -> None:
    for path in ("/add", "/search"):
        r = client.post(path, content=raw)
        check(r)
        assert r.status_code in (400, 422)


@pytest.mark.parametrize("top_k", [0, -1, 10**9, 10**30, 1.5, "5", None, True])
def test_top_k_extremes(client: TestClient, top_k: Any) -> None:
    client.post("/add", json=valid_add())
    r = client.post("/search", json={"user_id": "u1", "query": "failing test", "top_k": top_k})
    check(r)
    if top_k in (10**9, 10**30) and top_k is not True:
        assert r.status_code == 200 and r.json()["data"]
    else:
        assert r.status_code in (400, 422)


def test_ten_thousand_messages_in_one_add(client: TestClient) -> None:
    body = add_body("huge", texts=tuple(f"message {i} about src/mod_{i % 50}.py" for i in range(10_000)))
    check(r := client.post("/add", json=body))
    assert r.status_code == 200
    hits = client.post("/search", json={"user_id": "u1", "query": "mod_7", "top_k": 10}).json()["data"]
    assert hits


@pytest.mark.parametrize("url", [
    "data:image/png;base64," + base64.b64encode(b"GIF89a" + b"\x00" * 20).decode(),  # says PNG, is GIF
    "data:image/png;base64,@@@not-base64@@@",
    "data:text/html;base64," + base64.b64encode(b"<script>").decode(),
    "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * (11 * 1024 * 1024)).decode(),
    "https://example.com/cat.png",
])
def test_bad_images_are_refused(client: TestClient, url: str) -> None:
    body = add_body("img")
    body["messages"][0]["content"] = [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": url}}]
    r = client.post("/add", json=body)
    check(r)
    assert r.status_code in (413, 422)
