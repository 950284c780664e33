"""Field-wise matches of a task with each candidate experience's card.

The retrievers score an experience by its best item, whatever part of it matched. Which part
matched says more: a task whose title is another experience's title is a twin; one whose words
are those of an experience's task is a similar report; one that names what an experience's
final diff changed, or the errors it met, or the files it read, points at the same code. Each
match is the share of the query's words (weighted by their rarity among the candidates) found
in that field of the card, so it reads the same in a short memory and a long one, and whatever
the query's length.

The rarity is counted over the candidates themselves (`idf`): a word every candidate holds
(the repository's name) tells them apart no better than none, while one that a single
experience holds tells much. The fields are read from the rendered card (its `## Task`,
`## Final diff`, `## Edited` and `## Also read` sections) and its metadata (`errors`), so an imported
commit, an agent session and a replayed task are matched alike.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from codemem.experience.building.render import card_sections, headline
from codemem.experience.types import CONVERSATION, SAID
from codemem.ranking.card_indexes import CardIndex
from codemem.ranking.merged import merged_of
from codemem.ranking.query import IGNORED
from codemem.times import representable

FIELDS = ("title", "task", "diff", "errors", "files", "merged", "words")

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A line that names an error: an exception or error type, a traceback, a failing assertion.
_ERROR_LINE = re.compile(r"\b(?:\w*(?:Error|Exception|Warning|Failure)|Traceback|panicked|FAILED|error\[?)\b")


def words(text: str) -> frozenset[str]:
    """The telling words of `text`: identifiers split into their parts and kept whole
    (`hist_kwargs`: hist_kwargs, hist, kwargs), lowercase, without function words and
    template words (`query.IGNORED`) and words of fewer than three characters."""
    out: set[str] = set()
    for token in _WORD.findall(text):
        low = token.lower()
        out.add(low)
        if "_" in low:
            out.update(low.split("_"))
    return frozenset(w for w in out if len(w) > 2 and w not in IGNORED)


def error_words(text: str) -> frozenset[str]:
    """The words of the lines of `text` that name an error."""
    return words("\n".join(line for line in text.splitlines() if _ERROR_LINE.search(line)))


@dataclass(frozen=True)
class CardFields:
    """The words of each field of one experience's card."""

    title: frozenset[str]
    task: frozenset[str]
    diff: frozenset[str]
    errors: frozenset[str]
    files: frozenset[str]  # the files (and symbols) it edited and read
    merged: frozenset[str] = frozenset()  # a merge's branch commits' subjects (`merged.merged_of`)
    conversation: bool = False  # a session with no coding work (`Experience.metadata`)
    ms: int = 0  # when the experience happened (its messages' latest timestamp, Unix ms; 0: not known)
    text: frozenset[str] = frozenset()  # every word of the card, its sections' and the rest

    @classmethod
    def of(cls, text: str, metadata: str | Mapping[str, object] | None, ms: int = 0) -> CardFields:
        """From a card row's `text`, `metadata` (JSON or decoded) and `timestamp`."""
        meta = json.loads(metadata or "{}") if isinstance(metadata, str) else (metadata or {})
        sections = dict(card_sections(text))
        task = sections.get("Task", "")
        errors = meta.get("errors") or []
        return cls(title=words(headline(task)), task=words(task), diff=words(sections.get("Final diff", "")),
                   errors=words("\n".join(str(e) for e in errors) if isinstance(errors, list) else str(errors)),
                   files=words(sections.get("Edited", "") + "\n" + sections.get("Also read", "")),
                   merged=words("\n".join(subject for _, subject in merged_of(meta, text))),
                   conversation=bool(meta.get(CONVERSATION)), ms=ms,
                   text=words(text) | words(" ".join(str(w) for w in said) if isinstance(said := meta.get(SAID), list) else ""))

    @property
    def every(self) -> frozenset[str]:
        return self.title | self.task | self.diff | self.errors | self.files | self.merged


class FieldIndex(CardIndex):
    """One user's cards' fields by session key (`card_indexes.CardIndexes` keeps it current),
    so that a Search matches its candidates without reading their cards."""

    def __init__(self, cards: dict[str, CardFields] | None = None) -> None:
        self.cards: dict[str, CardFields] = cards or {}

    def put(self, cards: Iterable[Mapping[str, object]]) -> None:
        """Add these card rows (`session_key`, `text`, `metadata`, `timestamp`), each replacing its session's."""
        for card in cards:
            # Only the session's own time dates it: its Add time may be a batch import's.
            stamp = card.get("timestamp")
            self.cards[str(card["session_key"])] = CardFields.of(str(card.get("text") or ""),
                                                                str(card.get("metadata") or "{}"),
                                                                stamp if representable(stamp) else 0)

    def copy(self) -> FieldIndex:
        return FieldIndex(dict(self.cards))


def idf(cards: Iterable[CardFields]) -> dict[str, float]:
    """Each word's inverse document frequency over `cards`: log(1 + n / df)."""
    return idf_of(card.every for card in cards)


def idf_of(documents: Iterable[Iterable[str]]) -> dict[str, float]:
    """Each term's inverse document frequency over `documents` (each its set of terms)."""
    held = [frozenset(doc) for doc in documents]
    df: dict[str, int] = {}
    for doc in held:
        for w in doc:
            df[w] = df.get(w, 0) + 1
    return {w: math.log(1 + len(held) / d) for w, d in df.items()}


def _share(query: frozenset[str], field: frozenset[str], weight: Mapping[str, float], default: float) -> float:
    total = sum(weight.get(w, default) for w in query)
    return sum(weight.get(w, default) for w in query & field) / total if total > 0 else 0.0


def field_matches(text: str, cards: Mapping[str, CardFields]) -> dict[str, tuple[float, ...]]:
    """Per candidate of `cards` (session key -> its card's fields), in `FIELDS` order: how
    much of the query's title its title holds (weighted Jaccard: 1 for a twin), the share of
    the query's words found in its task, its final diff and the files it edited or read, of
    the words of the query's error lines found in its errors (0 when the query names no
    error), and of the query title's words found in a merge's branch subjects (0 for anything
    but a merge); a word no candidate holds weighs as the rarest one does. Last, unweighted,
    the share of the query's words found anywhere in its card: the one absolute match, the
    same whatever the other candidates hold (a one-experience memory asked about something
    else reads near 0 there, and 1 in every weighted share's place of best)."""
    weight = idf(cards.values())
    rarest = math.log(1 + len(cards)) if cards else 0.0
    query = words(text)
    title = words(headline(text))
    errors = error_words(text)
    out: dict[str, tuple[float, ...]] = {}
    for key, card in cards.items():
        union = title | card.title
        both = sum(weight.get(w, rarest) for w in title & card.title)
        out[key] = (both / sum(weight.get(w, rarest) for w in union) if union else 0.0,
                    _share(query, card.task, weight, rarest), _share(query, card.diff, weight, rarest),
                    _share(errors, card.errors, weight, rarest), _share(query, card.files, weight, rarest),
                    _share(title, card.merged, weight, rarest),
                    len(query & card.every) / len(query) if query else 0.0)
    return out
