"""MemoryArena's memory-server protocol (arXiv 2602.16313), so its runners use codemem unchanged.

    POST /memory/initialize       {user_id, memory_system_name}  -> {status, user_id, memory_system_name}
    POST /memory/add              {user_id, chunk, memory_system_name} -> {status, user_id, response: null}
    POST /memory/wrap_user_prompt {user_id, question, memory_system_name} -> {status, user_id, prompt}

The prompt has the layout of MemoryArena's own reference servers, lines joined by "\\n":
`<memory_context>`, one `<memory>...</memory>` line per memory (or `None` when there is
none), `</memory_context>`, then `User: {question}` with the question verbatim, so a
runner can strip it. Each memory is one line: its line breaks are written as the two
characters `\\n` and a `</memory` inside it as `<\\/memory`. This keeps the structure
parseable line by line while the text reads as written (LaTeX backslashes untouched); it is
not meant to be decoded back. Memories are chosen by rank and listed in the order they were
added, so a model reads earlier subtasks before later ones.

Any `memory_system_name` is accepted and echoed: codemem is the memory system. Same API
key, admission bounds and error bodies as /add and /search.

Its two settings are MemoryArena's, not the core's: `MemoryArenaSettings` reads them from
`CODEMEM_MEMORYARENA_*` variables (the README's configuration table lists them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import msgspec
from litestar import Controller, Request, post
from litestar.datastructures import State

from api.admission import Admission
from api.auth import require_api_key
from api.bodies import decode_body
from codemem.config import Variable, read_variables
from codemem.memoryarena import Recalled, TextMemories

OK = "ok"


@dataclass(frozen=True)
class MemoryArenaSettings:
    """What wrap_user_prompt returns: at most `top_k` memories, within `token_budget` tokens
    (characters / 4; the best one always; 0 = only the count bounds it), each at most the
    service's `answer.max_item_chars`."""

    top_k: int = 20
    token_budget: int = 8_000

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> MemoryArenaSettings:
        return cls(**{path: value for path, value in read_variables(VARIABLES, environ).values()})  # type: ignore[arg-type]


VARIABLES = {
    "CODEMEM_MEMORYARENA_TOP_K": Variable("top_k", int),
    "CODEMEM_MEMORYARENA_TOKEN_BUDGET": Variable("token_budget", int),
}


def env_names() -> list[str]:
    return list(VARIABLES)


class InitializeBody(msgspec.Struct):
    user_id: str
    memory_system_name: str


class AddChunkBody(msgspec.Struct):
    user_id: str
    chunk: str
    memory_system_name: str


class WrapBody(msgspec.Struct):
    user_id: str
    question: str
    memory_system_name: str


class InitializeResponse(msgspec.Struct):
    status: str
    user_id: str
    memory_system_name: str


class AddChunkResponse(msgspec.Struct):
    status: str
    user_id: str
    response: None = None


class WrapResponse(msgspec.Struct):
    status: str
    user_id: str
    prompt: str


def memory_line(text: str) -> str:
    """One memory as one line (see the module docstring)."""
    flat = "\\n".join(text.splitlines()).replace("</memory", "<\\/memory")
    return f"<memory>{flat}</memory>"


def wrap_prompt(question: str, memories: list[Recalled]) -> str:
    """The wrapped prompt: memories in the order they were added, then the question verbatim."""
    ordered = sorted(enumerate(memories), key=lambda im: (im[1].created_at, im[0]))
    lines = [memory_line(m.text) for _, m in ordered] or ["None"]
    return "\n".join(["<memory_context>", *lines, "</memory_context>", f"User: {question}"])


def _memories(state: State) -> TextMemories:
    return TextMemories(state.memory)


class MemoryArenaController(Controller):
    path = "/memory"
    guards = [require_api_key]

    @post("/initialize", status_code=200)
    async def initialize(self, request: Request, state: State) -> InitializeResponse:
        """Start `user_id` over with an empty memory (durable; a second call empties it again)."""
        gate: Admission = state.admission["add"]
        async with gate.slot():
            body = await decode_body(request, InitializeBody)
            await gate.run(_memories(state).initialize, body.user_id)
        return InitializeResponse(OK, body.user_id, body.memory_system_name)

    @post("/add", status_code=200)
    async def add(self, request: Request, state: State) -> AddChunkResponse:
        """Store one chunk; answered once it is durable and recallable. 404: not initialized."""
        gate: Admission = state.admission["add"]
        async with gate.slot():
            body = await decode_body(request, AddChunkBody)
            await gate.run(_memories(state).add, body.user_id, body.chunk)
        return AddChunkResponse(OK, body.user_id)

    @post("/wrap_user_prompt", status_code=200)
    async def wrap_user_prompt(self, request: Request, state: State) -> WrapResponse:
        """The question with the user's most relevant memories before it. 404: not initialized."""
        settings: MemoryArenaSettings = state.memoryarena
        gate: Admission = state.admission["search"]
        async with gate.slot():
            body = await decode_body(request, WrapBody)
            found = await gate.run(
                _memories(state).recall, body.user_id, body.question, settings.top_k, settings.token_budget,
            )
        return WrapResponse(OK, body.user_id, wrap_prompt(body.question, found))
