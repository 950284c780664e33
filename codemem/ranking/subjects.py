"""Commit subjects matched with a report's title: the closest words a bug report and the
change that fixed it share.

A report's title and a commit's subject both say in a few words what is wrong ("Replacing a
multiline expression duplicates non-matched lines" / "printer: fix duplicative replacement in
multiline mode"), but in different forms of the same words. BM25 over the subjects alone
(short documents: the words that name the change, not its diff) with words cut to their
first `STEM` letters (a crude stemmer: "replacing", "replacement" -> "repla") links them where
the whole-text index, which matches exact words over message, diff and card, ranks the fix
past a hundred larger commits.

Only commit experiences (cards whose metadata names a `commit`) are indexed, so the signal is
commit-specific: a memory of agent sessions has an empty index and ranks as before. The index
is built from the user's card rows and kept per user (`ranking/card_indexes.py`).
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from codemem.ranking.card_indexes import CardIndex
from codemem.ranking.query import IGNORED

STEM = 5  # letters a word is cut to (set by hand, not searched)
_K1, _B = 1.2, 0.75  # BM25's usual constants (not searched)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]+")


def stems(text: str) -> list[str]:
    """The words of `text` that say something, lowercased and cut to `STEM` letters."""
    words = (w.lower() for w in _WORD.findall(text))
    return [w[:STEM] for w in words if len(w) > 2 and w not in IGNORED]


@dataclass
class SubjectIndex(CardIndex):
    """One user's commit experiences by the stems of their subjects."""

    docs: dict[str, Counter[str]] = field(default_factory=dict)  # session_key -> stem counts
    lengths: dict[str, int] = field(default_factory=dict)
    df: Counter[str] = field(default_factory=Counter)

    def put(self, cards: Iterable[Mapping[str, Any]]) -> None:
        """Add these cards' subjects (card rows with `session_key` and `metadata`, JSON; commit
        cards carry `commit` and `subject`), each replacing its session's if the index holds one."""
        for card in cards:
            meta = json.loads(str(card.get("metadata") or "{}"))
            if "commit" not in meta:
                continue
            key = str(card["session_key"])
            if (old := self.docs.get(key)) is not None:
                self.df.subtract(old.keys())
                self.df += Counter()  # drops the stems no subject holds any more
            words = stems(str(meta.get("subject") or ""))
            self.docs[key] = Counter(words)
            self.lengths[key] = len(words)
            self.df.update(set(words))

    def copy(self) -> SubjectIndex:
        return SubjectIndex(dict(self.docs), dict(self.lengths), Counter(self.df))

    @property
    def commits(self) -> frozenset[str]:
        """The session keys of the commit experiences."""
        return frozenset(self.docs)

    def ranks(self, title: str, limit: int) -> dict[str, int]:
        """The commit experiences whose subject shares a stem with `title`, by BM25, as
        session key -> rank (1 = best), at most `limit`."""
        query = set(stems(title)) & self.df.keys()
        if not query or not self.docs:
            return {}
        n = len(self.docs)
        avg = sum(self.lengths.values()) / n or 1.0
        idf = {w: math.log(1 + (n - self.df[w] + 0.5) / (self.df[w] + 0.5)) for w in query}
        scores: dict[str, float] = {}
        for key, counts in self.docs.items():
            norm = _K1 * (1 - _B + _B * self.lengths[key] / avg)
            s = sum(idf[w] * counts[w] * (_K1 + 1) / (counts[w] + norm) for w in query if counts[w])
            if s > 0:
                scores[key] = s
        order = sorted(scores, key=lambda k: -scores[k])[:limit]
        return {k: i for i, k in enumerate(order, 1)}
