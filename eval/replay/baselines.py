"""In-process baselines of the replay, over exactly the corpora the service holds per
condition, so their figures go through the same metric code as codemem's:

- `bm25-traj`: BM25 over whole trajectories (one document = all rendered messages); an
  item is a whole trajectory.
- `bm25-msg`: BM25 over single messages (top 100 messages).
- `dense-chunk`: MiniLM cosine over chunks of consecutive messages packed to about 256
  tokens (top 100 chunks), the way a plain vector memory would store them.

BM25 items with score 0 (no query term at all) are not returned; dense always returns
top_k. Chunk embeddings are cached on disk by chunk text hash, because embedding every
trajectory takes many minutes on 2 cores.
"""

from __future__ import annotations

import hashlib
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from eval.replay.data import Trajectory
from eval.replay.metrics import CHARS_PER_TOKEN, Item

_TOKEN_RE = re.compile(r"(?u)\b\w\w+\b")
DENSE_CHUNK_TOKENS = 256
DENSE_MODEL_TOKENS = 256  # what the model reads of a chunk (its max_seq_length in sentence-transformers)
BASELINES = ("bm25-traj", "bm25-msg", "dense-chunk")


@dataclass(frozen=True)
class Doc:
    session_id: str
    text: str


def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


class Tokenizer:
    """bm25s's default tokenization (lowercase, 2+ word characters, English stopwords),
    done here once per text so that every corpus of a run reuses it."""

    def __init__(self) -> None:
        self._stop = _stopwords()
        self._cache: dict[tuple[str, int], list[str]] = {}

    def __call__(self, text: str) -> list[str]:
        return [sys.intern(t) for t in _TOKEN_RE.findall(text.lower()) if t not in self._stop]

    def cached(self, key: tuple[str, int], text: str) -> list[str]:
        if key not in self._cache:
            self._cache[key] = self(text)
        return self._cache[key]


class Bm25Index:
    """BM25 (bm25s, default parameters) over one list of documents."""

    def __init__(self, docs: Sequence[Doc], tokens: Sequence[list[str]]) -> None:
        import bm25s

        self.docs = list(docs)
        self._bm25 = bm25s.BM25()
        if self.docs:
            self._bm25.index(list(tokens), show_progress=False)

    def search(self, query_tokens: list[str], top_k: int) -> list[Item]:
        if not self.docs or not query_tokens:
            return []
        k = min(top_k, len(self.docs))
        ids, scores = self._bm25.retrieve([query_tokens], k=k, show_progress=False)
        return [Item(self.docs[i].session_id, len(self.docs[i].text) / CHARS_PER_TOKEN)
                for i, s in zip(ids[0], scores[0], strict=True) if s > 0]


def trajectory_index(trajs: Sequence[Trajectory], tok: Tokenizer) -> Bm25Index:
    docs = [Doc(t.instance_id, t.text) for t in trajs]
    tokens = [[w for j, m in enumerate(t.messages) for w in tok.cached((t.instance_id, j), m.content)] for t in trajs]
    return Bm25Index(docs, tokens)


def message_index(trajs: Sequence[Trajectory], tok: Tokenizer) -> Bm25Index:
    docs, tokens = [], []
    for t in trajs:
        for j, m in enumerate(t.messages):
            docs.append(Doc(t.instance_id, m.content))
            tokens.append(tok.cached((t.instance_id, j), m.content))
    return Bm25Index(docs, tokens)


# -- dense ------------------------------------------------------------------------------------

def pack_chunks(traj: Trajectory, max_tokens: int = DENSE_CHUNK_TOKENS) -> list[str]:
    """Consecutive messages joined until about `max_tokens` (chars / 4); a longer message is
    a chunk of its own (the model then sees its start, as a naive vector memory would)."""
    limit = max_tokens * CHARS_PER_TOKEN
    chunks: list[str] = []
    cur: list[str] = []
    size = 0
    for m in traj.messages:
        n = len(m.content)
        if cur and size + n > limit:
            chunks.append("\n\n".join(cur))
            cur, size = [], 0
        cur.append(m.content)
        size += n + 2
    if cur:
        chunks.append("\n\n".join(cur))
    return chunks


def _key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()[:20]


def _save(cache_file: Path, known: dict[str, np.ndarray]) -> None:
    cache_file.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache_file.with_name(cache_file.name + ".tmp.npz")
    np.savez(tmp, keys=np.array(list(known)), vectors=np.stack(list(known.values())))
    tmp.replace(cache_file)


class DenseChunks:
    """Chunk embeddings of every trajectory of the run (normalized MiniLM), cached in
    `cache_file`; a condition searches the subset of rows of its trajectories."""

    def __init__(self, trajs: Sequence[Trajectory], cache_file: Path, log: Callable[[str], None] = print) -> None:
        self.docs = [Doc(t.instance_id, c) for t in trajs for c in pack_chunks(t)]
        self._model: Any = None
        self.embed_s = 0.0
        self.cached = 0
        self.vectors = self._load_or_embed(cache_file, log)
        self._rows_by_session: dict[str, list[int]] = {}
        for i, d in enumerate(self.docs):
            self._rows_by_session.setdefault(d.session_id, []).append(i)

    def model(self):
        """The service's packaged MiniLM (sentence-transformers' vectors, through ONNX Runtime)."""
        if self._model is None:
            from codemem.encoders import ShippedEmbedder

            self._model = ShippedEmbedder()
        return self._model

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.model().embed(texts, DENSE_MODEL_TOKENS)

    def _load_or_embed(self, cache_file: Path, log: Callable[[str], None]) -> np.ndarray:
        keys = [_key(d.text) for d in self.docs]
        known: dict[str, np.ndarray] = {}
        if cache_file.exists():
            with np.load(cache_file) as z:
                known = dict(zip(z["keys"].tolist(), z["vectors"], strict=True))
        missing = sorted({k for k in keys if k not in known})
        self.cached = len(keys) - sum(k not in known for k in keys)
        if missing:
            texts = {k: d.text for k, d in zip(keys, self.docs, strict=True) if k not in known}
            log(f"dense baseline: embedding {len(missing):,} chunks ({self.cached:,} cached) ...")
            t0 = time.perf_counter()
            for start in range(0, len(missing), 2048):  # saved after each batch: an interrupted run keeps its work
                batch = missing[start:start + 2048]
                known.update(zip(batch, self.embed([texts[k] for k in batch]), strict=True))
                _save(cache_file, known)
                log(f"  {min(start + 2048, len(missing)):,}/{len(missing):,} chunks, {time.perf_counter() - t0:.0f} s")
            self.embed_s = time.perf_counter() - t0
        dim = next(iter(known.values())).shape[0] if known else 384
        return np.stack([known[k] for k in keys]) if keys else np.zeros((0, dim), np.float32)

    def query_vector(self, query: str) -> np.ndarray:
        return self.embed([query])[0]

    def search(self, qvec: np.ndarray, sessions: Sequence[str], top_k: int) -> list[Item]:
        rows = np.array([r for s in sessions for r in self._rows_by_session.get(s, [])], dtype=np.int64)
        if rows.size == 0:
            return []
        sims = self.vectors[rows] @ qvec
        k = min(top_k, rows.size)
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.argsort(-sims[top], kind="stable")]
        return [Item(self.docs[r].session_id, len(self.docs[r].text) / CHARS_PER_TOKEN) for r in rows[top]]
