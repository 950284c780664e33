"""`codemem mcp`: the memory as MCP tools, over stdio (the agent starts the server) or
streamable HTTP, calling the same `Memory` as the HTTP service.

The server answers the MCP handshake at once: the Memory (LanceDB is slow to import) and
the encoder (the packaged ONNX graph, `codemem.encoders`) are opened on a background thread,
and the first tool call waits for what is left. A tool given no `user_id` uses the memory of the
repository the server was started in (`codemem.git.repo_id`), so "this repository's memory"
needs no configuration.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from codemem import compact
from codemem.config import Settings
from codemem.contract.types import AddRequest, Message, SearchRequest
from codemem.errors import CodememError, Conflict
from codemem.git.repo_id import repo_user_id
from integrations import mcp_text

if TYPE_CHECKING:
    from codemem.memory import Memory

log = logging.getLogger("codemem.mcp")

INSTRUCTIONS = (
    "codemem remembers past coding-agent sessions of each repository: task, outcome, files and "
    "symbols edited, tests, errors. Before a task, call search_memory with the task and the code "
    "names involved; open a promising result with get_experience. Without user_id, the tools use "
    "the memory of the repository this server runs in."
)
# A search answer's default size, in tokens (~4 characters each): several experiences in brief
# (`codemem.compact`), which an agent reads before every task; it asks for more with max_tokens.
ANSWER_TOKENS = 1_500
MIN_ANSWER_TOKENS = 200
READ_ONLY = ToolAnnotations(read_only_hint=True)
IDEMPOTENT = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True)

UserId = Annotated[
    str | None,
    Field(description="whose memory; default: the repository the server runs in, e.g. repo:github.com/owner/name"),
]


class NoteMessage(BaseModel):
    role: Literal["user", "assistant"]
    content: str


class LazyMemory:
    """The Memory, opened on a background thread so start-up waits for neither LanceDB nor
    the model; `get` waits until the store is open, a search until the model is loaded."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._memory: Memory | None = None
        self._error: BaseException | None = None
        self._opened = threading.Event()
        self._thread = threading.Thread(target=self._open, name="codemem-open", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def get(self) -> Memory:
        self._opened.wait()
        if self._memory is None:
            raise ToolError(f"codemem could not open its memory at {self.settings.storage.data_dir}: {self._error}")
        return self._memory

    def close(self) -> None:
        """Wait for the opening thread to finish (the interpreter aborts with "terminate
        called without an active exception" when it exits while native code still loads a
        model on a thread), then close the Memory."""
        if self._thread.ident is not None:
            self._thread.join()
        if self._memory is not None:
            self._memory.close()

    def _open(self) -> None:
        from codemem.encoders import make_embedder

        settings = self.settings
        embedder = make_embedder(settings.embedding.model, settings.embedding.threads)
        try:
            from codemem.memory import Memory

            self._memory = Memory(settings, embedder=embedder)
            # After the store, not beside it: the handshake, answered meanwhile, competes
            # with one loader at a time.
            embedder.warm()
        except Exception as exc:  # noqa: BLE001 - reported by every tool call instead
            log.exception("opening the memory failed")
            self._error = exc
        finally:
            self._opened.set()


@contextmanager
def _reported() -> Iterator[None]:
    """A core error becomes a tool error: its reason is what the model reads."""
    try:
        yield
    except CodememError as exc:
        raise ToolError(exc.reason) from exc


def build_server(memory: LazyMemory, cwd: str) -> MCPServer:
    default_user = cache(lambda: repo_user_id(cwd))
    server: MCPServer = MCPServer(
        "codemem", instructions=INSTRUCTIONS, version=version("codemem"),
        log_level=memory.settings.server.log_level.upper(),  # type: ignore[arg-type]
    )

    @server.tool(annotations=READ_ONLY, structured_output=False)
    def search_memory(
        query: Annotated[str, Field(description="the task or question: its words, error messages, file and symbol names")],
        user_id: UserId = None,
        top_k: Annotated[int, Field(ge=1, le=100, description="most experiences shown")] = 5,
        max_tokens: Annotated[int, Field(ge=MIN_ANSWER_TOKENS, description=(
            f"the answer stops at about this many tokens (default {ANSWER_TOKENS}; at most the server's "
            "CODEMEM_SEARCH_TOKEN_BUDGET, 10,000 unless set); each experience gets an equal share: raise it "
            "to read more experiences, and more of each, at once"))] = ANSWER_TOKENS,
    ) -> str:
        """Past experiences that bear on a task, best first, each in brief: its card (task,
        outcome, files and symbols edited, errors, tests) and the evidence that matched best,
        trimmed; then the ones left out, by id. Compact by default (about 1,500 tokens:
        max_tokens); get_experience(id) opens one experience in full."""
        user = user_id or default_user()
        mem = memory.get()
        cap = mem.search_config.answer.budget_tokens
        budget = min(max_tokens, cap) if cap else max_tokens
        asked = top_k + compact.LOOKAHEAD
        with _reported():
            hits = mem.search(SearchRequest(user_id=user, query=query, top_k=asked),
                              config=compact.search_config(mem.search_config))
        answer = compact.compact(hits, top_k, budget, lambda item: mcp_text.brief_block(item, top_k), asked,
                                 mem.search_config.calibration.quiet_below)
        return mcp_text.search_answer(answer, user, budget)

    @server.tool(annotations=READ_ONLY, structured_output=False)
    def get_experience(
        id: Annotated[str, Field(description=(
            "an id search_memory returned (any item of the experience), a session id, a commit's SHA, "
            "or a unique prefix of any of them of 7 or more characters (git:d49cfb3, d49cfb3)"))],
        user_id: UserId = None,
    ) -> str:
        """One whole past experience: its card, then all its evidence in session order."""
        user = user_id or default_user()
        with _reported():
            hits = memory.get().experience(user, id)
        return mcp_text.experience_answer(hits, user)

    @server.tool(annotations=IDEMPOTENT, structured_output=False)
    def remember(
        text: Annotated[str | None, Field(description="a note to keep, e.g. how a problem was solved")] = None,
        messages: Annotated[list[NoteMessage] | None, Field(description="or a conversation to keep")] = None,
        user_id: UserId = None,
        session_id: Annotated[str | None, Field(description="add to this session; default: a session of its own")] = None,
    ) -> str:
        """Keep a note or a conversation in memory, as a session's experience later searches
        find. Storing the same content again stores nothing twice."""
        # Imported here: it loads numpy and pyarrow, which the handshake need not wait for.
        from codemem.store.schema import key_of

        if (text is None) == (messages is None):
            raise ToolError("give either text or messages")
        notes = [NoteMessage(role="user", content=text)] if text is not None else list(messages or [])
        user = user_id or default_user()
        digest = key_of(*(f"{m.role}\x00{m.content}" for m in notes))
        session = session_id or f"note:{digest[:16]}"
        now = int(time.time() * 1000)
        req = AddRequest(
            request_id=f"remember:{key_of(session, digest)}", user_id=user, session_id=session,
            messages=[Message(role=m.role, content=m.content, timestamp=now) for m in notes],
        )
        already = f"Already remembered: session {session} of {user} holds this content; nothing stored twice."
        try:
            with _reported():
                result = memory.get().add(req)
        except ToolError as exc:
            # Its request_id names the content, so another body under it is this content sent at
            # another time (its messages' timestamps differ): stored already.
            if isinstance(exc.__cause__, Conflict):
                return already
            raise
        if result.duplicate:
            return already
        return f"Remembered {len(notes)} message(s) as session {session} in the memory of {user}."

    @server.tool(annotations=IDEMPOTENT, structured_output=False)
    def ingest_repository(
        path: Annotated[str, Field(description="a git repository (relative paths start where the server runs)")] = ".",
        user_id: Annotated[str | None, Field(description="whose memory; default: that repository's")] = None,
        max_commits: Annotated[int | None, Field(ge=1, description="only the newest commits")] = None,
    ) -> str:
        """Import a repository's git history, one experience per change (a commit, or a merged
        pull request with its commits: messages and diff), so later searches find how past
        changes were made. Changes stored before are skipped."""
        from codemem.importers.git import ingest_git

        repo = str(Path(cwd, path).expanduser().resolve())
        user = user_id or repo_user_id(repo)
        try:
            with _reported():
                report = ingest_git(memory.get(), repo, user, max_commits=max_commits, progress=False)
        except ValueError as exc:  # not a repository
            raise ToolError(str(exc)) from exc
        return (f"Read {report.changes_read()} of {repo}: {report.added} new experiences, "
                f"{report.unchanged} already stored, in the memory of {user}.")

    return server


def serve_mcp(settings: Settings, transport: Literal["stdio", "http"] = "stdio") -> None:
    """Run until the client disconnects (stdio) or the process is stopped (http)."""
    memory = LazyMemory(settings)
    memory.start()
    server = build_server(memory, os.getcwd())
    try:
        if transport == "http":
            from integrations.mcp_http import serve_http

            serve_http(server.streamable_http_app(host=settings.server.host), settings.server)
        else:
            server.run("stdio")
    finally:
        memory.close()
