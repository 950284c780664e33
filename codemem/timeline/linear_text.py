"""A linear model over a text's words and its sentence vector, as scikit-learn fitted it:
the shipped form of the timeline's learned text readers (`decisions.py`, `questions.py`).

Each reader is a logistic regression over the text's words and word pairs (scikit-learn's
TfidfVectorizer: its default tokens, lower-cased, sublinear term frequency, l2-normalised),
optionally its characters' runs inside words (a second TfidfVectorizer, `char_wb`: "bumped",
"bump" and "bumps" share most of theirs), and the memory's own MiniLM vector of the text (so that a stored turn, or the
query a Search has embedded anyway, is read without embedding it again). This module computes
the raw scores scikit-learn's `decision_function` gives, one per output, with numpy alone: a
Search never imports scikit-learn.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from codemem.experience.memo import TextMemo

# scikit-learn's TfidfVectorizer's default tokens, lower-cased: the trainers'.
_TOKEN = re.compile(r"(?u)\b\w\w+\b")


_SPACES = re.compile(r"\s\s+")


def terms(text: str, ngrams: int = 2) -> Counter[str]:
    """The text's words and runs of up to `ngrams` words, counted (TfidfVectorizer's analyzer)."""
    words = _TOKEN.findall(text.lower())
    return Counter(" ".join(words[i:i + n]) for n in range(1, ngrams + 1) for i in range(len(words) - n + 1))


def char_terms(text: str, shortest: int, longest: int) -> Counter[str]:
    """The runs of `shortest` to `longest` characters inside each space-padded word, counted
    (TfidfVectorizer's `char_wb` analyzer, lower-cased)."""
    out: Counter[str] = Counter()
    for w in _SPACES.sub(" ", text.lower()).split():
        w = f" {w} "
        for n in range(shortest, longest + 1):
            out.update(w[i:i + n] for i in range(max(len(w) - n, 0) + 1))
            if len(w) <= n:  # a short word counts once
                break
    return out


def _block(weights: Mapping[str, tuple[float, np.ndarray]], counts: Counter[str], outputs: int) -> np.ndarray:
    """One TF-IDF block's share of the scores: its sublinear, l2-normalised vector times the
    weights (the terms the trainer never saw weigh nothing, as in scikit-learn)."""
    tfidf = {t: (1.0 + math.log(n)) * weights[t][0] for t, n in counts.items() if t in weights}
    norm = math.sqrt(sum(v * v for v in tfidf.values()))
    out = np.zeros(outputs)
    for t, v in tfidf.items():
        out += v * weights[t][1]
    return out / norm if norm > 0 else out


@dataclass(frozen=True)
class LinearText:
    """Raw scores of texts: TF-IDF(words) . W_terms + vector . W_embedding + bias, per output."""

    embedding_weights: np.ndarray  # (outputs, dim)
    terms: dict[str, tuple[float, np.ndarray]]  # word or word pair -> (idf, weight per output)
    ngrams: int
    bias: np.ndarray  # (outputs,)
    char_terms: dict[str, tuple[float, np.ndarray]] = field(default_factory=dict)  # character run -> the same
    char_ngrams: tuple[int, int] = (0, 0)  # the shortest and longest runs (0, 0: no such block)
    # A stored turn is read again by every Search it is a candidate of, and its words' share of
    # the scores depends on its text alone (about 1 ms a turn with the characters): remembered.
    _texts: TextMemo[np.ndarray] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_texts", TextMemo(lambda text, _: self._text_scores(text), max_chars=16 << 20))

    @classmethod
    def of(cls, card: Mapping[str, Any]) -> LinearText:
        """From a model card: `embedding_weights` (a list, or a list per output), `terms`
        ({term: [idf, weight, ...]}: one weight per output), `ngrams` and `bias` (a number, or one
        per output); `char_terms` and `char_ngrams` where the model reads characters too."""
        def weights(block: Mapping[str, Sequence[float]]) -> dict[str, tuple[float, np.ndarray]]:
            return {t: (float(v[0]), np.asarray(v[1:], dtype=np.float64)) for t, v in block.items()}

        emb = np.atleast_2d(np.asarray(card["embedding_weights"], dtype=np.float32))
        shortest, longest = card.get("char_ngrams") or (0, 0)
        return cls(emb, weights(card["terms"]), int(card["ngrams"]), np.atleast_1d(np.asarray(card["bias"], dtype=np.float64)),
                   weights(card.get("char_terms") or {}), (int(shortest), int(longest)))

    @staticmethod
    def card_fields(blocks: Sequence[tuple[Mapping[str, int], np.ndarray]], coef: np.ndarray, intercept: np.ndarray) -> dict[str, Any]:
        """The card fields `of` reads, from fitted TfidfVectorizers' (vocabulary, idf): the words'
        block, then the characters' where there is one; and a fitted LogisticRegression's coef_
        and intercept_ over [words | characters | vector] columns."""
        coef = np.atleast_2d(coef)
        out: dict[str, Any] = {"bias": [float(b) for b in np.atleast_1d(intercept)]}
        start = 0
        for name, (vocabulary, idf) in zip(("terms", "char_terms"), blocks, strict=False):
            out[name] = {t: [float(idf[i]), *(float(w) for w in coef[:, start + i])]
                         for t, i in sorted(vocabulary.items()) if np.any(coef[:, start + i])}
            start += len(vocabulary)
        out["embedding_weights"] = [[float(w) for w in row[start:]] for row in coef]
        return out

    def scores(self, texts: Sequence[str], vectors: np.ndarray) -> np.ndarray:
        """Raw scores, (len(texts), outputs), given each text's vector (a row of `vectors`)."""
        k = len(self.bias)
        if not texts:
            return np.zeros((0, k))
        z = np.asarray(vectors, dtype=np.float32) @ self.embedding_weights.T + self.bias
        return np.asarray(z + np.stack([self._texts(t) for t in texts]))

    def _text_scores(self, text: str) -> np.ndarray:
        """The text's words' (and characters') share of the scores."""
        k = len(self.bias)
        out = _block(self.terms, terms(text, self.ngrams), k)
        if self.char_terms:
            out = out + _block(self.char_terms, char_terms(text, *self.char_ngrams), k)
        return out
