"""What a new store and a cold process must not wait for (issue 29).

An Add fingerprints its card's text to reuse vectors; that used torch's tokenizer, so every
Add waited for torch to load, a load that Searches starved of the GIL for as long as they
came (the encoder is an ONNX graph now, with no torch at all). A Search of a memory that does not exist yet embedded its query and ran every
retriever. Neither needs the model now.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import msgspec

from codemem.config import Settings
from codemem.contract.types import AddRequest, SearchRequest
from codemem.encoders import ShippedEmbedder
from codemem.memory import Memory
from codemem.store.schema import key_of
from tests.conftest import add_body

TEXTS = ["QuerySet.filter(None) raises TypeError in django/db/models/query.py " * 12, "", "héllo 日本語 x", "a" * 3000]


def test_fingerprints_are_the_model_s_own_token_ids_and_need_no_torch(embedder: ShippedEmbedder) -> None:
    """A process fingerprints without importing torch, and gets exactly the keys of the token
    ids sentence-transformers' own tokenizer gives (else a card would be embedded again, or
    worse, keep a vector of another text)."""
    from transformers import AutoTokenizer

    from codemem.encoders.packaged import _fingerprint, _prefix_for_tokenizer
    from train.encoder.export import model_dir

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir()))
    reference = {n: [_fingerprint(ids) for ids in tokenizer([_prefix_for_tokenizer(t, n) for t in TEXTS],
                                                             truncation=True, max_length=n)["input_ids"]]
                 for n in (16, 256)}
    script = (
        "import json, sys\n"
        "from codemem.encoders import ShippedEmbedder\n"
        f"e = ShippedEmbedder(); keys = {{n: e.fingerprints({TEXTS!r}, n) for n in (16, 256)}}\n"
        "print(json.dumps({'torch': 'torch' in sys.modules, 'keys': keys}))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], env=dict(os.environ), capture_output=True, text=True,
                         check=True, timeout=120)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["torch"] is False
    assert {int(k): v for k, v in got["keys"].items()} == reference


class _NoModel:
    """An embedder whose model must not be reached."""

    name, dim = ShippedEmbedder().name, ShippedEmbedder().dim

    def embed(self, texts: list[str], max_tokens: int) -> object:
        raise AssertionError("the model was reached")

    fingerprints = embed

    def warm(self) -> None:
        raise AssertionError("the model was reached")


def test_a_search_of_a_memory_that_does_not_exist_reaches_no_model(tmp_path: Path) -> None:
    settings = Settings().replace({"storage.data_dir": str(tmp_path / "data"), "maintenance.interval_s": 0})
    with Memory(settings, embedder=_NoModel()) as memory:  # type: ignore[arg-type]
        assert memory.search(SearchRequest(query="TypeError when filtering", user_id="nobody", top_k=5)) == []
        assert memory.search(SearchRequest(query="TypeError when filtering", user_id="nobody", top_k=5)) == []


def test_a_memory_written_after_an_empty_search_is_found(memory: Memory) -> None:
    """The absence a Search saw is not kept past the next commit: an Add acknowledged after it
    is found at once."""
    req = SearchRequest(query="filter TypeError", user_id="late", top_k=5)
    assert memory.search(req) == []
    memory.add(_add("late"))
    assert memory.search(req), "a stored memory was hidden by the absence seen before"


def test_deleting_a_user_makes_its_memory_absent_again(memory: Memory) -> None:
    memory.add(_add("gone"))
    req = SearchRequest(query="filter TypeError", user_id="gone", top_k=5)
    assert memory.search(req)
    memory.delete_user("gone")
    assert memory.search(req) == []
    assert not memory.store.holds_user(key_of("gone"))


def _add(user_id: str) -> AddRequest:
    return msgspec.convert(add_body("r1", user_id=user_id, texts=("QuerySet.filter raises TypeError",)), AddRequest)


class _Loading:
    """The real embedder, reporting itself not ready (its model still loading) until told."""

    def __init__(self, real: ShippedEmbedder) -> None:
        self._real = real
        self.name, self.dim = real.name, real.dim
        self.is_ready = False
        self.embedded: list[str] = []

    def ready(self) -> bool:
        return self.is_ready

    def embed(self, texts: list[str], max_tokens: int) -> object:
        self.embedded += texts
        return self._real.embed(texts, max_tokens)

    def __getattr__(self, name: str) -> object:
        return getattr(self._real, name)


def test_an_add_while_the_model_loads_is_stored_at_once_and_embedded_later(tmp_path: Path, embedder: ShippedEmbedder) -> None:
    """An Add does not wait for the model: its card is stored without a vector, found by its
    words at once, and embedded by the session's quiet-time refresh once the model is in."""
    loading = _Loading(embedder)
    settings = Settings().replace({"storage.data_dir": str(tmp_path / "data"), "maintenance.interval_s": 0, "writes.refresh_quiet_s": 60})
    with Memory(settings, embedder=loading) as memory:  # type: ignore[arg-type]
        memory.add(_add("early"))
        assert loading.embedded == []
        card = memory.store.user_rows(key_of("early"), "card", ["id", "has_vector"])
        assert [r["has_vector"] for r in card] == [False]
        found = memory.search(SearchRequest(query="QuerySet.filter TypeError", user_id="early", top_k=5))
        assert found and found[0].session_id == "s1"
        loading.is_ready = True
        memory.refresher.flush()
        card = memory.store.user_rows(key_of("early"), "card", ["id", "has_vector"])
        assert [r["has_vector"] for r in card] == [True]
