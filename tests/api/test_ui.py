"""The pages under /ui, over HTTP: what each shows, escaping, the login, CSRF on deletions,
and that a user's pages show nothing of another user. (The real-browser checks are in
tests/ui/test_browser.py.)"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from litestar.testing import TestClient

from codemem.config import Settings
from codemem.memory import Memory
from tests import coding_memory
from tests.conftest import add_body, make_client

XSS = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
FIX = ("fix the pagination crash in paginator.py", "Edited paginator.py: the page count was off by one. "
       "Ran pytest tests/test_paginator.py: 3 passed")


def _csrf(client: TestClient, path: str) -> str:
    page = client.get(path)
    assert page.status_code == 200, page.text
    m = re.search(r'name="_csrf_token" value="([^"]+)"', page.text)
    assert m, "the form carries no CSRF token"
    return m.group(1)


@pytest.fixture
def filled(client: TestClient) -> TestClient:
    for i, (user, session, texts) in enumerate([
        ("alice", "s-fix", FIX),
        ("alice", "s-xss", (f"render this {XSS}", f"I read {XSS} and did nothing")),
        ("bob", "s-bob", ("bob's secret migration plan", "done with the migration")),
        ('<i onmouseover="x()">eve</i>', "s-eve", ("a user id that is markup", "stays text")),
    ]):
        r = client.post("/add", json=add_body(f"r{i}", user, session, texts))
        assert r.status_code == 200, r.text
    return client


def test_memories_page_lists_each_user_with_counts_and_store_health(filled: TestClient) -> None:
    page = filled.get("/ui/")
    assert page.status_code == 200
    assert "alice" in page.text and "bob" in page.text
    row = re.search(r"<code>alice</code></a></td>\s*<td class=\"num\">(\d+)</td>\s*<td class=\"num\">(\d+)</td>", page.text)
    assert row and row.groups() == ("2", "4")  # two experiences, four messages
    assert "unindexed rows" in page.text and "fragments" in page.text and "compactions" in page.text
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert "&lt;i onmouseover=&#34;x()&#34;&gt;eve&lt;/i&gt;" in page.text and "<i onmouseover" not in page.text


def test_search_page_ranks_as_the_api_does_and_shows_only_that_user(filled: TestClient) -> None:
    q = "pagination crash paginator"
    api = filled.post("/search", json={"user_id": "alice", "query": q, "top_k": 30}).json()["data"]
    page = filled.get(f"/ui/search?user_id=alice&q={quote(q)}")
    assert page.status_code == 200
    shown = re.findall(r'<li class="result" data-session="([^"]+)"', page.text)
    assert shown == [h["session_id"] for h in api][: len(shown)] and shown[0] == "s-fix"
    assert "bob" not in page.text.split("</form>", 1)[1]  # the form's picker names every memory; the results, hers
    listing = filled.get("/ui/search?user_id=alice").text
    assert "s-fix" in listing and "s-xss" in listing and "s-bob" not in listing


def test_the_search_form_picks_one_of_the_stores_memories(filled: TestClient) -> None:
    blank = filled.get("/ui/search").text
    picker = re.search(r'<select name="user_id" required>(.*?)</select>', blank, re.S)
    assert picker, "the form offers the memories stored"
    options = re.findall(r'<option value="([^"]*)"( selected)?( disabled)?>([^<]*)</option>', picker.group(1))
    assert options[0][0] == "" and options[0][1] and "Choose one of the 3 memories" in options[0][3]
    assert sorted(o[0] for o in options[1:]) == sorted(["alice", "bob", "&lt;i onmouseover=&#34;x()&#34;&gt;eve&lt;/i&gt;"])
    assert "alice · 2 experiences" in picker.group(1)
    chosen = filled.get("/ui/search?user_id=alice").text
    assert '<option value="alice" selected>' in chosen and 'selected disabled' not in chosen
    typed = filled.get("/ui/search?user_id=nobody").text  # an id not stored stays chosen, and says so
    assert '<option value="nobody" selected>nobody · not stored</option>' in typed


def test_each_memory_links_to_a_search_of_it(filled: TestClient) -> None:
    page = filled.get("/ui/").text
    for user in ("alice", "bob"):
        assert f'<a class="search" href="/ui/search?user_id={user}">search</a>' in page
    assert "Choose one of" not in filled.get("/ui/search?user_id=alice").text


def test_a_search_that_nothing_relates_to_says_so_and_shows_the_nearest(filled: TestClient) -> None:
    page = filled.get("/ui/search?user_id=alice&q=" + quote("Plombrix quervane stollicut yarbenthal")).text
    assert "None stands out as the one this query is about: these are the nearest." in page
    assert 'class="result"' in page
    loud = filled.get("/ui/search?user_id=alice&q=" + quote("pagination crash in paginator.py")).text
    assert "None stands out" not in loud


def test_a_search_the_model_reads_as_unrelated_to_anything_stored_says_nothing_came_close(
        client: TestClient, memory: Memory) -> None:
    coding_memory.fill(memory, "carol")
    page = client.get("/ui/search?user_id=carol&q=" + quote(coding_memory.INVENTED)).text
    assert "Nothing in this memory came close to this query." in page and 'class="result"' not in page
    question, _ = coding_memory.RELATED
    assert 'class="result"' in client.get("/ui/search?user_id=carol&q=" + quote(question)).text


def test_more_pages_through_the_kept_answer_without_searching_again(
        filled: TestClient, memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    # Twelve look-alike experiences (code work: each names the file it fixed, so the answer
    # lists experiences, not a dialogue's turns), all kept (no floor, no quiet answer):
    # paging is the point.
    memory.search_config = memory.search_config.replace({"calibration.relevance_floor": 0.0, "calibration.quiet_below": 0.0})
    for i in range(12):
        filled.post("/add", json=add_body(f"m{i}", "carol", f"s{i}",
                                          (f"paginator bug number {i} in src/paginator.py", "fixed src/paginator.py")))
    first = filled.get("/ui/search?user_id=carol&q=paginator+bug")
    token = re.search(r"token=([^&\"]+)", first.text)
    assert token and first.text.count('class="result"') == 10

    def no_search(*_: object, **__: object) -> None:
        raise AssertionError("searched again")
    monkeypatch.setattr(memory, "search", no_search)
    more = filled.get(f"/ui/search?user_id=carol&q=paginator+bug&token={token.group(1)}&page=2")
    assert more.status_code == 200 and more.text.count('class="result"') == 12
    # A token does not carry an answer to another user or another query.
    monkeypatch.undo()
    other = filled.get(f"/ui/search?user_id=alice&q=paginator+bug&token={token.group(1)}&page=2")
    assert "s-fix" in other.text and 's1"' not in other.text


def test_experience_page_shows_card_timeline_and_messages_on_demand(filled: TestClient) -> None:
    page = filled.get("/ui/experience?user_id=alice&session_id=s-fix")
    assert page.status_code == 200
    card, messages = page.text.split("Raw messages")
    assert "Timeline" in card and "fix the pagination crash" in card
    assert "Show the 2 raw messages" in messages and "off by one" not in messages
    with_messages = filled.get("/ui/experience?user_id=alice&session_id=s-fix&messages=true")
    assert "off by one" in with_messages.text.split("Raw messages")[1]
    # Another user's experience is not found from this user's pages.
    assert filled.get("/ui/experience?user_id=alice&session_id=s-bob").status_code == 404
    assert "migration" not in filled.get("/ui/experience?user_id=alice&session_id=s-bob").text


def test_memory_content_is_escaped_on_every_page(filled: TestClient) -> None:
    for path in ("/ui/search?user_id=alice", "/ui/search?user_id=alice&q=render+this",
                 "/ui/experience?user_id=alice&session_id=s-xss&messages=true",
                 "/ui/delete?user_id=alice&session_id=s-xss"):
        text = filled.get(path).text
        assert "<script>window" not in text and "<img src=x" not in text, path
        assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in text, path


def test_deletion_needs_the_csrf_token_and_is_logged(filled: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    refused = filled.post("/ui/delete", data={"user_id": "alice", "session_id": "s-fix"})
    assert refused.status_code == 403 and "Reload the page" in refused.text
    token = _csrf(filled, "/ui/delete?user_id=alice&session_id=s-fix")
    with caplog.at_level(logging.INFO, logger="codemem.audit"):
        done = filled.post("/ui/delete", data={"user_id": "alice", "session_id": "s-fix", "_csrf_token": token},
                           follow_redirects=False)
    assert done.status_code == 303 and "deleted=s-fix" in done.headers["location"]
    [line] = [r for r in caplog.records if r.name == "codemem.audit"]
    assert line.event == "delete_experience" and line.items == 3 and "alice" not in line.getMessage()  # type: ignore[attr-defined]  # 2 messages, 1 card
    assert filled.get("/ui/experience?user_id=alice&session_id=s-fix").status_code == 404
    hits = filled.post("/search", json={"user_id": "alice", "query": "pagination crash", "top_k": 10}).json()["data"]
    assert all(h["session_id"] != "s-fix" for h in hits)
    # The JSON API needs no CSRF token.
    assert filled.delete("/users/bob").status_code == 200


def test_a_shortened_id_opens_the_experience_and_its_deletion_names_it_whole(client: TestClient) -> None:
    long_id = "session-2024-pagination-fix"
    assert client.post("/add", json=add_body("r-long", "alice", long_id, FIX)).status_code == 200
    page = client.get("/ui/experience?user_id=alice&session_id=session-2024-pag")
    assert page.status_code == 200 and "paginator.py" in page.text
    confirm = client.get("/ui/delete?user_id=alice&session_id=session-2024-pag").text
    assert f'name="session_id" value="{long_id}"' in confirm  # a deletion takes no prefix


def test_a_whole_user_is_deleted_after_confirmation(filled: TestClient) -> None:
    confirm = filled.get("/ui/delete?user_id=bob")
    assert "1 experiences" in confirm.text
    token = _csrf(filled, "/ui/delete?user_id=bob")
    filled.post("/ui/delete", data={"user_id": "bob", "_csrf_token": token})
    page = filled.get("/ui/").text
    assert "<code>bob</code></a>" not in page and "<code>alice</code></a>" in page


@pytest.fixture
def keyed(settings: Settings, memory: Memory) -> Iterator[TestClient]:
    with make_client(settings.replace({"server.api_key": "s3cret-key"}), memory) as c:
        yield c


def test_with_a_key_only_the_login_page_is_served_until_the_key_is_given(keyed: TestClient) -> None:
    keyed.post("/add", json=add_body("r1", "alice", "s1", FIX), headers={"X-Api-Key": "s3cret-key"})
    for path in ("/ui/", "/ui/search?user_id=alice&q=paginator", "/ui/experience?user_id=alice&session_id=s1",
                 "/ui/delete?user_id=alice"):
        r = keyed.get(path, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/ui/login", path
    token = _csrf(keyed, "/ui/login")
    wrong = keyed.post("/ui/login", data={"key": "nope", "_csrf_token": token})
    assert wrong.status_code == 401 and "Wrong key" in wrong.text
    ok = keyed.post("/ui/login", data={"key": "s3cret-key", "_csrf_token": token}, follow_redirects=False)
    cookie = ok.headers["set-cookie"]
    assert ok.status_code == 303 and "HttpOnly" in cookie and "samesite=strict" in cookie.lower() and "s3cret-key" not in cookie
    assert "alice" in keyed.get("/ui/").text
    # The JSON API still wants its header, cookie or not.
    assert keyed.post("/search", json={"user_id": "alice", "query": "x", "top_k": 1}).status_code == 401
