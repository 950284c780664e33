"""What a question asks of time, read by a learned model, not by cue lists.

"Which bundler does the web app use?" asks for the current state as surely as "are we still on
webpack?", and neither says "now"; "what did we use before pnpm?" asks for an order, "what was
the pool size in March?" for the state at a named time. A cue list reads the words its author
thought of (the two it replaced, `ASKS_CURRENT` and `ASKS_TIME`, were never tested on a
question written by someone else). This reader is a multinomial logistic regression over the
question's words and word pairs and its MiniLM vector (`linear_text.py`: the vector a Search
computes for its dense retriever anyway), trained by `python -m train.questions.train` on the
questions of the training projects, labelled by what their answers are:

- `now`: the current value (the answer is the newest session that states one);
- `when`: a date or an order (when a change was made, what a change replaced);
- `asof`: the value in effect at a time the question names;
- `other`: every value over time (no session is preferred for its date).

Its probabilities are features of the relevance model (`ranking/time_features.py`), and a
question whose most probable class is `now` is one about the current state: its answer marks
what was replaced (`Searcher`, `timeline/turns.py`). Shipped as
package data: `models/questions.json`, which says what it was trained on.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from codemem.timeline.linear_text import LinearText

MODEL = Path(str(resources.files("codemem.timeline") / "models" / "questions.json"))
CLASSES = ("now", "when", "asof", "other")


@dataclass(frozen=True)
class Asked:
    """What one question asks of time: each class's probability."""

    now: float
    when: float
    asof: float
    most: str = "other"  # the most probable of `CLASSES`

    @property
    def about_now(self) -> bool:
        return self.most == "now"

    @property
    def about_time(self) -> bool:
        """A date, an order or a named time."""
        return self.most in ("when", "asof")


NOT_ASKED = Asked(0.0, 0.0, 0.0)


def asked_of(p: np.ndarray) -> Asked:
    """A reading from one row of `QuestionReader.probabilities`."""
    now, when, asof, _ = (float(v) for v in p)
    return Asked(now, when, asof, CLASSES[int(np.argmax(p))])


@dataclass(frozen=True)
class QuestionReader:
    model: LinearText
    classes: tuple[str, ...]  # the model's outputs, in order (the card's)
    embedder: str  # the embedding model whose vectors the weights read

    @classmethod
    def load(cls, path: Path = MODEL) -> QuestionReader:
        card = json.loads(path.read_text())
        classes = tuple(str(c) for c in card["classes"])
        if set(classes) != set(CLASSES):
            raise ValueError(f"{path}: classes {list(classes)}, this code reads {list(CLASSES)}")
        return cls(LinearText.of(card), classes, str(card["embedder"]))

    def probabilities(self, texts: list[str], vectors: np.ndarray) -> np.ndarray:
        """P(class) of each text (rows) for each of `CLASSES` (columns, in that order)."""
        z = self.model.scores(texts, vectors)
        z = np.exp(z - z.max(axis=1, keepdims=True))
        p = z / z.sum(axis=1, keepdims=True)
        return p[:, [self.classes.index(c) for c in CLASSES]]

    def read(self, text: str, vector: np.ndarray) -> Asked:
        """What `text` (with its MiniLM vector) asks of time."""
        return asked_of(self.probabilities([text], np.asarray(vector)[None, :])[0])


@functools.cache
def packaged() -> QuestionReader:
    """The packaged reader, loaded once per process."""
    return QuestionReader.load()
