"""The timeline's learned text readers as shipped (`codemem/timeline/linear_text.py`): numpy
computes what scikit-learn fitted, for one output (the decision reader) and for several (the
question reader), and the packaged readers load and read."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from codemem.timeline.decisions import packaged as decision_reader
from codemem.timeline.linear_text import LinearText
from codemem.timeline.questions import CLASSES, MODEL, QuestionReader
from codemem.timeline.questions import packaged as question_reader

TEXTS = ["the cache moved to redis", "who broke the build again", "pool size set to forty",
         "lunch moved to noon", "we pinned numpy below two", "flaky test in the parser",
         "ci runs on github actions now", "the parser drops unicode"]


def _fitted(labels: list[int]) -> tuple[LinearText, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(len(TEXTS), 6)).astype(np.float32)
    words = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, lowercase=True)
    x = sp.hstack([words.fit_transform(TEXTS), sp.csr_matrix(vectors)]).tocsr()
    model = LogisticRegression(C=10.0, max_iter=5_000).fit(x, labels)
    shipped = LinearText.of({"ngrams": 2, **LinearText.card_fields([(words.vocabulary_, words.idf_)], model.coef_, model.intercept_)})
    return shipped, vectors, np.atleast_2d(model.decision_function(x).T).T.reshape(len(TEXTS), -1)


def test_one_output_scores_as_scikit_learn_does() -> None:
    shipped, vectors, expected = _fitted([1, 0, 1, 0, 1, 0, 1, 0])
    assert np.allclose(shipped.scores(TEXTS, vectors), expected, atol=1e-5)


def test_several_outputs_score_as_scikit_learn_does_and_unseen_words_weigh_nothing() -> None:
    shipped, vectors, expected = _fitted([0, 1, 2, 3, 0, 1, 2, 3])
    assert np.allclose(shipped.scores(TEXTS, vectors), expected, atol=1e-5)
    unseen = shipped.scores(["zzz qqq"], vectors[:1])
    assert np.allclose(unseen, vectors[:1] @ shipped.embedding_weights.T + shipped.bias)


def test_words_and_characters_score_as_scikit_learn_does() -> None:
    vectors = np.random.default_rng(2).normal(size=(len(TEXTS), 4)).astype(np.float32)
    blocks = [TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, lowercase=True),
              TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5), sublinear_tf=True, lowercase=True)]
    texts = [t.upper() if i % 3 == 0 else f"  {t}  x" for i, t in enumerate(TEXTS)]  # case, spaces, a one-letter word
    x = sp.hstack([b.fit_transform(texts) for b in blocks] + [sp.csr_matrix(vectors)]).tocsr()
    model = LogisticRegression(C=10.0, max_iter=5_000).fit(x, [1, 0, 1, 0, 1, 0, 1, 0])
    shipped = LinearText.of({"ngrams": 2, "char_ngrams": [2, 5],
                             **LinearText.card_fields([(b.vocabulary_, b.idf_) for b in blocks], model.coef_, model.intercept_)})
    assert np.allclose(shipped.scores(texts, vectors)[:, 0], model.decision_function(x), atol=1e-5)


def test_the_packaged_question_reader_gives_a_distribution_over_its_classes() -> None:
    reader = question_reader()
    vectors = np.random.default_rng(1).normal(size=(3, reader.model.embedding_weights.shape[1]))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    p = reader.probabilities(["a", "b c", "d e f"], vectors)
    assert p.shape == (3, len(CLASSES)) and np.allclose(p.sum(axis=1), 1.0)
    asked = reader.read("a", vectors[0])
    assert asked.about_now == (int(np.argmax(p[0])) == CLASSES.index("now"))


def test_a_question_reader_with_other_classes_is_refused(tmp_path: Path) -> None:
    card = json.loads(MODEL.read_text())
    card["classes"] = ["now", "later"]
    (tmp_path / "q.json").write_text(json.dumps(card))
    with pytest.raises(ValueError, match="classes"):
        QuestionReader.load(tmp_path / "q.json")


def test_the_packaged_decision_reader_loads_its_card() -> None:
    reader = decision_reader()
    assert 0.0 < reader.threshold < 1.0 and reader.model.embedding_weights.shape == (1, 384)
    assert reader.model.char_terms and reader.model.char_ngrams == (2, 5)
