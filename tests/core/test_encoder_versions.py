"""Vectors that know their encoder: a store written before they did opens and answers as it
did (its cards that show a change given a code window in the background), a store written
by another encoder is embedded again in the background while Searches answer, and two
encoders' vectors never meet in one ranking."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from codemem.config import Settings
from codemem.contract.types import AddRequest, Message, SearchRequest
from codemem.encoders import ShippedEmbedder
from codemem.errors import StoreMismatch
from codemem.experience.building.render import code_window
from codemem.memory import Memory
from codemem.store.lance import Store
from codemem.store.schema import CODE_WINDOW, META_SCHEMA, SCHEMA_VERSION, Row, card_id, key_of
from codemem.writing.reembedder import vector_input
from tests import coding_memory

WRITTEN_BEFORE = Path(__file__).resolve().parents[1] / "fixtures" / "store-v1"
CARDS = 16  # the fixture's sessions (README there), all coding ones (its chat names a file)
TRAJECTORIES = ("traj-swe_agent", "traj-openhands", "traj-codex_patch")  # the cards that show a change


class Reversed(ShippedEmbedder):
    """Another encoder of the same dimensions: MiniLM's components in reverse order, a vector
    space in which MiniLM's vectors mean nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.name = "codemem-tests/reversed-minilm@1"

    def embed(self, texts: list[str], max_tokens: int) -> np.ndarray:
        return np.ascontiguousarray(super().embed(texts, max_tokens)[:, ::-1])


@pytest.fixture
def written_before(tmp_path: Path) -> Settings:
    """Settings over a copy of the store written at 8dbc363."""
    data = tmp_path / "data"
    shutil.copytree(WRITTEN_BEFORE, data)
    return Settings().replace({"storage.data_dir": str(data), "maintenance.interval_s": 0})


def _first_session(memory: Memory, text: str) -> str | None:
    hits = memory.search(SearchRequest(user_id="dev", query=text, top_k=5))
    return hits[0].session_id if hits else None


def test_a_store_written_before_opens_with_its_vectors_named_and_answers_as_it_did(
        written_before: Settings, embedder: ShippedEmbedder) -> None:
    with Memory(written_before, embedder=embedder) as memory:
        store = memory.store
        assert "encoder" in store.table.schema.names
        assert store.table.schema.metadata[META_SCHEMA] == SCHEMA_VERSION.encode()
        assert store.count(store.current_vectors) == CARDS and store.other_vector_count() == 0
        query, session = coding_memory.RELATED
        assert _first_session(memory, query) == session
        memory.start()
        _wait(memory)
        # Nothing was embedded again; each card that shows a change was given its code window.
        assert store.count(f"kind = 'card' AND {store.current_vectors}") == CARDS
        windows = store.rows(f"kind = '{CODE_WINDOW}'", ["session_id", "session_key", "text", "vector"])
        assert sorted(r["session_id"] for r in windows) == sorted(TRAJECTORIES)
        assert memory.reembedder.embedded == 3 and all(r["text"] == "" for r in windows)
        cards = {r["session_key"]: r["text"] for r in store.rows("kind = 'card'", ["session_key", "text"])}
        tokens = written_before.embedding.code_window_tokens
        expected = embedder.embed([code_window(cards[r["session_key"]]) for r in windows], tokens)
        assert np.allclose(np.stack([r["vector"] for r in windows]), expected, atol=1e-5)
        # A Search meets a code window as its card.
        found = store.nearest(expected[0], key_of("dev"), 5)
        assert found[0].id == card_id(windows[0]["session_key"]) and found[0].score > 0.999
        assert all(c.fields["kind"] != CODE_WINDOW for c in found) and len({c.id for c in found}) == len(found)
        assert _first_session(memory, query) == session
        # A code window is no memory of its own: not counted, nor removed as one.
        dev = next(u for u in memory.list_users() if u.user_id == "dev")
        assert dev.items == store.count(f"kind != '{CODE_WINDOW}'") == store.count() - 3
        swe = key_of("dev", "traj-swe_agent")
        items = store.count(f"session_key = '{swe}' AND kind != '{CODE_WINDOW}'")
        assert memory.delete_experience("dev", "traj-swe_agent") == items
        assert store.count(f"session_key = '{swe}'") == 0

        # New rows are written beside the old ones with their encoder named, a trajectory's
        # code window with its card; a conversation (no code named) has none, and none is owed.
        memory.add(AddRequest("new-1", "dev", "s-new", _trajectory("swe_agent")))
        memory.add(AddRequest("talk-2", "dev", "chat-2", [Message("user", "Shall we meet on Tuesday to plan the trip?"),
                                                           Message("assistant", "Tuesday works, after lunch.")]))
        assert store.count(f"kind = 'card' AND {store.current_vectors}") == CARDS - 1 + 2
        assert store.count(f"kind = '{CODE_WINDOW}' AND {store.current_vectors}") == 3
        assert key_of("dev", "s-new") not in store.cards_without_window()
        assert key_of("dev", "chat-2") not in store.cards_without_window()
    with Memory(written_before, embedder=embedder) as again:  # and opens again unchanged
        # the cards (one deleted), three code windows, and the conversation's two messages
        assert again.store.count(again.store.current_vectors) == CARDS - 1 + 2 + 3 + 2


def _trajectory(name: str) -> list[Message]:
    rows = json.loads((WRITTEN_BEFORE.parent / "experience" / f"{name}.json").read_text())["messages"]
    return [Message(r["role"], r["content"]) for r in rows]


def _wait(memory: Memory) -> None:
    deadline = time.monotonic() + 120
    while memory.reembedder.running and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not memory.reembedder.running


def test_a_store_of_another_encoder_is_embedded_again_while_searches_answer(
        written_before: Settings, embedder: ShippedEmbedder) -> None:
    other = Reversed()
    query, session = coding_memory.RELATED
    with Memory(written_before, embedder=other) as memory:
        store = memory.store
        assert store.count(store.current_vectors) == 0 and store.other_vector_count() == CARDS
        user = key_of("dev")
        probe = other.embed([query], 64)[0]
        assert store.nearest(probe, user, 20) == []  # MiniLM's vectors are not compared with the other's
        assert _first_session(memory, query) == session  # found by its words meanwhile

        memory.reembedder.batch, memory.reembedder.pause_s = 2, 0.2
        memory.start()
        assert memory.reembedder.running
        answered = 0
        deadline = time.monotonic() + 120
        while memory.reembedder.running and time.monotonic() < deadline:
            answered += _first_session(memory, query) == session
        assert not memory.reembedder.running and answered > 0
        assert store.other_vector_count() == 0
        assert store.count(f"kind = 'card' AND {store.current_vectors}") == CARDS
        assert memory.reembedder.embedded == CARDS + len(TRAJECTORIES)  # and the code windows owed

        cards = store.rows("kind = 'card'", ["id", "kind", "text", "vector"])
        expected = other.embed([vector_input(r, {}) for r in cards], written_before.embedding.max_tokens)
        assert np.allclose(np.stack([r["vector"] for r in cards]), expected, atol=1e-5)
        assert [c.id for c in store.nearest(probe, user, 1)] == [card_id(key_of("dev", session))]
        assert _first_session(memory, query) == session


def test_two_encoders_vectors_never_meet_in_one_ranking(written_before: Settings, embedder: ShippedEmbedder) -> None:
    other = Reversed()
    with Memory(written_before, embedder=other) as memory:
        memory.reembedder.batch = 5
        assert memory.reembedder.run_once() == 5  # five cards embedded again, the others left as they were
        new = Store(written_before.storage.data_dir, other.name, other.dim)
        old = Store(written_before.storage.data_dir, embedder.name, embedder.dim)
        user = key_of("dev")
        probe = embedder.embed([coding_memory.RELATED[0]], 64)[0]
        found_new = {c.id for c in new.nearest(probe[::-1].copy(), user, 50)}
        found_old = {c.id for c in old.nearest(probe, user, 50)}
        assert len(found_new) == 5 and len(found_old) == CARDS - 5 and not found_new & found_old
        # A vector read back is the reader's encoder's, or none.
        assert sum(r["vector"] is not None for r in old.rows("kind = 'card'", ["id", "vector"])) == CARDS - 5


def test_a_row_deleted_while_it_was_embedded_again_stays_deleted(written_before: Settings) -> None:
    other = Reversed()
    store = Store(written_before.storage.data_dir, other.name, other.dim)
    row = store.other_vectors(1)[0]
    store.delete_ids([row["id"]])
    store.revector([Row(**row, vector=other.embed([vector_input(row, {})], 16)[0])])
    assert store.count(f"id = '{row['id']}'") == 0
    assert store.other_vector_count() == CARDS - 1


def test_a_store_of_other_dimensions_is_refused_with_what_it_holds(written_before: Settings) -> None:
    with pytest.raises(StoreMismatch, match="384 dims"):
        Store(written_before.storage.data_dir, "codemem-tests/wide@1", 768)
