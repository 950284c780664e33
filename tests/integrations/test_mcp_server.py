"""`codemem mcp` through the MCP SDK's own client: one server process over stdio for the
module (a conversation whose answers the tests read), and one over streamable HTTP."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import git
import httpx
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

from codemem.config import Settings
from codemem.contract.types import AddRequest, Message
from codemem.encoders import ShippedEmbedder
from codemem.memory import Memory
from tests.server import free_port

ROOT = Path(__file__).resolve().parents[2]
USER = "repo:github.com/acme/widgets"  # the remote of the repository the server runs in
NOTE = ("The flaky test tests/test_io.py::test_read_chunks fails when two workers share /tmp/cache; "
        "fixed by giving each test its own tmp_path.")
TIMEOUT_S = 240



@dataclass
class Conversation:
    tools: dict[str, Any] = field(default_factory=dict)
    answers: dict[str, CallToolResult] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    history_repo: str = ""
    server_log: str = ""

    def text(self, name: str) -> str:
        content = self.answers[name].content
        assert len(content) == 1 and isinstance(content[0], TextContent)
        return content[0].text


def _history(path: Path) -> Path:
    """A repository of three commits, the second a fix to find later."""
    repo = git.Repo.init(path)
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "Dev")
        cw.set_value("user", "email", "dev@example.com")
    for message, body in [
        ("Add calculator", "def divide(a, b):\n    return a / b\n"),
        ("Fix ZeroDivisionError in divide when b is 0",
         "def divide(a, b):\n    if b == 0:\n        raise ValueError('division by zero')\n    return a / b\n"),
        ("Write the README", None),
    ]:
        name = "calc.py" if body else "README"
        (path / name).write_text(body or "docs\n")
        repo.index.add([name])
        repo.index.commit(message)
    return path


def _busy_history(path: Path) -> Path:
    """A repository whose every commit reworks the cache's eviction, each with a large diff:
    a typical question matches several past changes, any one of which fills a small answer."""
    repo = git.Repo.init(path)
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "Dev")
        cw.set_value("user", "email", "dev@example.com")
    for n, subject in enumerate(["Evict cache entries by least recent use", "Fix cache eviction dropping fresh entries",
                                 "Cap the cache size before eviction runs", "Log each cache eviction with its key",
                                 "Make cache eviction thread-safe", "Test cache eviction under concurrent writers"]):
        body = "".join(f"def evict_{n}_{i}(cache, key):\n    return cache.pop(key, None)  # eviction step {i}\n"
                       for i in range(150))
        (path / f"cache_{n}.py").write_text(body)
        repo.index.add([f"cache_{n}.py"])
        repo.index.commit(subject)
    return path


def _write_from_another_process(data_dir: Path, embedder: ShippedEmbedder) -> None:
    """What the Claude Code hook does while the server runs: its own Memory, its own commits."""
    with Memory(Settings().replace({"storage.data_dir": str(data_dir), "maintenance.interval_s": 0}), embedder=embedder) as m:
        m.add(AddRequest("hook-1", USER, "claude-session-7", [
            Message("user", "PaymentGateway.charge times out after 30 s under load"),
            Message("assistant", "Raised the pool size in payments/gateway.py and added a retry with backoff"),
        ]))


async def _converse(
    params: StdioServerParameters, data_dir: Path, history: Path, errlog: Any, embedder: ShippedEmbedder
) -> Conversation:
    talk = Conversation(history_repo=str(history.resolve()))
    with anyio.fail_after(TIMEOUT_S):
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:

            async def call(key: str, tool: str, **arguments: Any) -> str:
                started = time.monotonic()
                talk.answers[key] = await session.call_tool(tool, arguments)
                talk.seconds[key] = time.monotonic() - started
                return talk.text(key)

            started = time.monotonic()
            await session.initialize()
            talk.seconds["initialize"] = time.monotonic() - started
            talk.tools = {t.name: t for t in (await session.list_tools()).tools}
            await call("remember", "remember", text=NOTE)
            await call("remember_again", "remember", text=NOTE)
            await call("remember_chat", "remember", session_id="docs-theme", messages=[
                {"role": "user", "content": "Bump the docs theme to furo 2024.8"},
                {"role": "assistant", "content": "Updated docs/conf.py and docs/requirements.txt"},
            ])
            found = await call("search", "search_memory", query="test_read_chunks is flaky with shared cache", top_k=2)
            first_id = re.search(r'<experience rank="1" id="([^"]+)"', found)
            await call("experience", "get_experience", id=first_id.group(1) if first_id else "")
            await call("experience_missing", "get_experience", id="c_000000000000000000000000")
            await call("stranger", "search_memory", query="flaky test", user_id="someone-else")
            await call("neither", "remember")
            await anyio.to_thread.run_sync(_write_from_another_process, data_dir, embedder)
            await anyio.sleep(1.5)  # the server looks for other processes' commits every second
            await call("elsewhere", "search_memory", query="payment gateway charge timeout", top_k=1)
            await call("ingest", "ingest_repository", path=str(history))
            await call("ingest_again", "ingest_repository", path=str(history))
            await call("history", "search_memory", query="ZeroDivisionError when dividing by zero",
                       user_id=f"repo:{history.resolve()}")
            fix = git.Repo(history).commit("HEAD~1").hexsha  # as `codemem search` shows it: 12 characters
            await call("by_sha", "get_experience", id=f"git:{fix[:12]}", user_id=f"repo:{history.resolve()}")
            await call("by_short_sha", "get_experience", id=fix[:7], user_id=f"repo:{history.resolve()}")
            await call("long_chat", "remember", user_id="budget", messages=[
                {"role": "user", "content": "Speed up the slow csv export in exporter.py"},
                *({"role": "assistant", "content": f"Read exporter.py part {j}: " + "csv rows and columns " * 120}
                  for j in range(12)),
            ])
            await call("compact", "search_memory", query="slow csv export", user_id="budget")
            busy = _busy_history(data_dir.parent / "busy")
            await call("ingest_busy", "ingest_repository", path=str(busy))
            await call("several", "search_memory", query="cache eviction drops entries", user_id=f"repo:{busy.resolve()}")
            await call("several_fuller", "search_memory", query="cache eviction drops entries",
                       user_id=f"repo:{busy.resolve()}", max_tokens=6000)
            await call("nonsense", "search_memory", query="Plombrix quervane stollicut yarbenthal")
            await call("fuller", "search_memory", query="slow csv export", user_id="budget", max_tokens=6000)
    return talk


@pytest.fixture(scope="module")
def talk(tmp_path_factory: pytest.TempPathFactory, embedder: ShippedEmbedder) -> Conversation:
    base = tmp_path_factory.mktemp("mcp")
    workdir = base / "widgets"
    git.Repo.init(workdir).create_remote("origin", "git@github.com:acme/widgets.git")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cli", "mcp", "--data-dir", str(base / "data")],
        env={"PYTHONPATH": str(ROOT), "CODEMEM_COMPACT_INTERVAL_S": "0"}, cwd=workdir,
    )
    log = base / "server.log"
    with open(log, "w") as errlog:
        try:
            done = anyio.run(_converse, params, base / "data", _history(base / "history"), errlog, embedder)
            done.server_log = log.read_text()
            return done
        except BaseException:
            print(log.read_text()[-4000:], file=sys.stderr)
            raise


def test_the_server_offers_the_four_tools(talk: Conversation) -> None:
    assert set(talk.tools) == {"search_memory", "get_experience", "remember", "ingest_repository"}
    assert talk.tools["search_memory"].input_schema["required"] == ["query"]
    assert talk.tools["get_experience"].input_schema["required"] == ["id"]
    assert talk.tools["search_memory"].annotations.read_only_hint is True
    budget = talk.tools["search_memory"].input_schema["properties"]["max_tokens"]
    assert budget["default"] == 1500 and "tokens" in budget["description"]
    assert "7 or more characters" in talk.tools["get_experience"].input_schema["properties"]["id"]["description"]
    assert talk.tools["remember"].annotations.idempotent_hint is True


def test_the_server_exits_without_a_native_abort(talk: Conversation) -> None:
    # It waits for its opening thread: exiting while native code loads a model aborted with this.
    assert "terminate called" not in talk.server_log


def test_remember_goes_to_this_repository_and_stores_nothing_twice(talk: Conversation) -> None:
    assert not talk.answers["remember"].is_error
    assert talk.text("remember").startswith("Remembered 1 message(s) as session note:")
    assert talk.text("remember").endswith(f"in the memory of {USER}.")
    assert talk.text("remember_again").startswith("Already remembered")
    assert "session docs-theme" in talk.text("remember_chat")


def test_search_finds_the_remembered_experience_first(talk: Conversation) -> None:
    text = talk.text("search")
    assert not talk.answers["search"].is_error
    blocks = re.findall(r"<experience rank=\"(\d)\" id=\"(c_\w+)\" session=\"([^\"]+)\"[^>]*>\n(.*?)\n</experience>", text, re.S)
    n = len(blocks)
    assert text.startswith(f"{n} of {n} past experiences found in the memory of {USER}, best first")
    assert [b[0] for b in blocks] == [str(i) for i in range(1, len(blocks) + 1)]
    assert blocks[0][2].startswith("note:") and "test_read_chunks" in blocks[0][3]
    # The unrelated chat comes second, unless the relevance floor leaves it out.
    assert [b[2] for b in blocks[1:]] in ([], ["docs-theme"])


def test_get_experience_opens_the_card_with_its_evidence(talk: Conversation) -> None:
    text = talk.text("experience")
    assert not talk.answers["experience"].is_error
    assert text.startswith("Experience note:") and "1 evidence item in session order" in text
    assert "<experience id=\"c_" in text and "## Task" in text
    assert re.search(r'<evidence id="m_\w+" session="note:\w+" kind="message" role="user" position="0"', text)
    assert NOTE in text.split("<evidence")[1]


def test_errors_are_tool_errors_a_model_can_read(talk: Conversation) -> None:
    assert talk.answers["experience_missing"].is_error
    assert "no experience 'c_000000000000000000000000'" in talk.text("experience_missing")
    assert talk.answers["neither"].is_error and "give either text or messages" in talk.text("neither")


def test_the_server_sees_what_another_process_stored(talk: Conversation) -> None:
    first = talk.text("elsewhere").split("</experience>")[0]
    assert 'session="claude-session-7"' in first and "payments/gateway.py" in first


def test_memories_are_per_repository(talk: Conversation) -> None:
    assert talk.text("stranger").startswith("Nothing closely related in the memory of someone-else:")


def test_ingest_repository_imports_history_once_into_that_repositorys_memory(talk: Conversation) -> None:
    user = f"repo:{talk.history_repo}"
    assert talk.text("ingest") == f"Read 3 commits of {talk.history_repo}: 3 new experiences, 0 already stored, in the memory of {user}."
    assert ": 0 new experiences, 3 already stored" in talk.text("ingest_again")
    first = talk.text("history").split("</experience>")[0]
    assert f"found in the memory of {user}, best first" in talk.text("history")
    assert "Fix ZeroDivisionError in divide" in first


def test_get_experience_takes_the_sha_as_people_are_shown_it(talk: Conversation) -> None:
    for key in ("by_sha", "by_short_sha"):
        assert not talk.answers[key].is_error, talk.text(key)
        assert talk.text(key).startswith("Experience git:") and "Fix ZeroDivisionError in divide" in talk.text(key)


def test_by_default_an_agent_sees_several_past_changes_each_with_its_matched_evidence(talk: Conversation) -> None:
    text = talk.text("several")
    assert not talk.answers["several"].is_error, text
    assert len(text) / 4 <= 1500  # the default budget
    blocks = re.findall(r"<experience rank=\"\d\" id=\"(c_\w+)\"[^>]*>\n(.*?)\n</experience>", text, re.S)
    assert len(blocks) >= 3
    for _, body in blocks:
        assert body.startswith("## Task\n") and "cache" in body.lower()
        assert "\n\nMatched evidence (" in body  # the item of the change that matched best: its message, a diff
    assert text.startswith(f"{len(blocks)} of 6 past experiences found")
    left = re.search(r"Left out, to stay within max_tokens=1,500: (\d) more experiences?:\n((?:- c_\w+: .*\n)+)", text)
    assert left and int(left.group(1)) == 6 - len(blocks) == left.group(2).count("\n- c_") + 1
    assert "get_experience(id)" in text and "larger max_tokens" in text


def test_a_query_nothing_in_memory_relates_to_says_so_and_names_the_nearest(talk: Conversation) -> None:
    text = talk.text("nonsense")
    assert f"past experiences found in the memory of {USER}" in text
    assert "None stands out as the one this task is about: these are the nearest." in text


def test_search_answers_compactly_unless_asked_for_more(talk: Conversation) -> None:
    compact, fuller = talk.text("compact"), talk.text("fuller")
    assert not talk.answers["fuller"].is_error, fuller
    assert "Matched evidence (message, user, position 0):\nSpeed up the slow csv export" in compact
    assert len(compact) / 4 <= 1500 and len(fuller) / 4 <= 6000
    several, more = talk.text("several"), talk.text("several_fuller")
    assert not talk.answers["several_fuller"].is_error, more
    assert len(several) / 4 <= 1500 < len(more) / 4 <= 6000  # more experiences, and more of each
    assert more.count("<experience rank=") >= several.count("<experience rank=")


async def _over_http(url: str, key: str) -> tuple[set[str], CallToolResult]:
    with anyio.fail_after(60):
        client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60)
        async with client, streamable_http_client(url, http_client=client) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            return names, await session.call_tool("get_experience", {"id": "s-1", "user_id": "u"})


def test_the_same_tools_over_streamable_http_behind_the_key(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", "mcp", "--transport", "http", "--port", str(port),
         "--data-dir", str(tmp_path / "data")],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "CODEMEM_API_KEY": "k3y"},
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert proc.poll() is None, "the server exited"
            time.sleep(0.2)
        url = f"http://127.0.0.1:{port}/mcp"
        refused = [httpx.post(url, json={}, headers=h, timeout=10) for h in ({}, {"Authorization": "Bearer nope"})]
        names, missing = anyio.run(_over_http, url, "k3y")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert [r.status_code for r in refused] == [401, 401]
    assert refused[0].json() == {"detail": {"reason": "missing or wrong API key"}}
    assert names == {"search_memory", "get_experience", "remember", "ingest_repository"}
    assert missing.is_error and "no experience 's-1' in the memory of 'u'" in missing.content[0].text  # type: ignore[union-attr]
