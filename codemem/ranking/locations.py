"""Code-location evidence: which experiences worked on the code a task points at.

Bug localisation ranks source files by how well a bug report's words match them
(BugLocator, Zhou et al., ICSE 2012); here the "files" are past experiences, and what a
task names (paths, symbols, exception and test names, exact identifiers) is matched with
what each experience edited or mentioned. Each matched key counts its inverse document
frequency over the user's experiences, so a path every session touched says little and a
rare helper name says much; a key the experience edited counts fully, a key it only
mentions (its task, its errors, files it read) counts `mention_weight` of that.

Issue and PR references (`#1234`, a ticket or pull-request URL, a commit SHA) are matched
separately with the experiences whose items mention them (`ticket_refs`): the same ticket
is the surest link between two tasks there is.

The index is built from the user's card rows (their `refs` column and the edited files and
symbols in their metadata) and cached per user: one read of the cards, then every Search is
a few set lookups (`ranking/card_indexes.py` keeps it current as cards are written).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import parsers
from codemem.ranking.card_indexes import CardIndex

# Ticket, issue and pull-request URLs of the common trackers, and bare "#1234" references.
_TICKET_URL = re.compile(r"/(?:ticket|issues|pull|pulls|merge_requests)/(\d{1,9})\b")
_ISSUE = re.compile(r"(?<![\w&])#(\d{1,9})\b")
_SHA = re.compile(r"\b[0-9a-f]{7,40}\b")


def ticket_refs(text: str) -> list[str]:
    """The issue, PR and commit references of `text`, as the references index keys them
    (`#1234`, a lowercase SHA), first-seen order."""
    refs = [f"#{n}" for n in _ISSUE.findall(text)] + [f"#{n}" for n in _TICKET_URL.findall(text)]
    refs += [s for s in _SHA.findall(text.lower()) if re.search(r"\d", s) and re.search(r"[a-f]", s)]
    return list(dict.fromkeys(refs))


@dataclass(frozen=True)
class ExperienceCode:
    """What one experience's card says about code: keys it edited, and every key it holds."""

    edited: frozenset[str]
    mentioned: frozenset[str]


@dataclass
class LocationIndex(CardIndex):
    """The code keys of one user's experiences, with their document frequencies."""

    experiences: dict[str, ExperienceCode] = field(default_factory=dict)  # session_key -> keys
    df: dict[str, int] = field(default_factory=dict)

    def put(self, cards: Iterable[Mapping[str, Any]]) -> None:
        """Add these cards (rows with `session_key`, `refs`: space-separated keys, and
        `metadata`: JSON with `edited_files` and `edited_symbols`), each replacing its
        session's card if the index holds one."""
        for card in cards:
            meta = json.loads(str(card.get("metadata") or "{}"))
            edited = parsers.CodeRefs(files=list(meta.get("edited_files") or []),
                                      symbols=list(meta.get("edited_symbols") or [])).terms()
            keys = frozenset(str(card.get("refs") or "").split()) | frozenset(edited)
            session_key = str(card["session_key"])
            if (old := self.experiences.get(session_key)) is not None:
                for key in old.mentioned:
                    self.df[key] -= 1
                    if not self.df[key]:
                        del self.df[key]
            self.experiences[session_key] = ExperienceCode(frozenset(edited), keys)
            for key in keys:
                self.df[key] = self.df.get(key, 0) + 1

    def copy(self) -> LocationIndex:
        return LocationIndex(dict(self.experiences), dict(self.df))

    def idf(self, key: str) -> float:
        df = self.df.get(key, 0)
        return math.log(1 + len(self.experiences) / df) if df else 0.0

    def scores(self, query_keys: Iterable[str]) -> dict[str, tuple[float, float]]:
        """Per experience that matches any of `query_keys`: the idf mass of the keys it
        edited, and of those it only mentions."""
        weights = {k: w for k in dict.fromkeys(query_keys) if (w := self.idf(k)) > 0}
        out: dict[str, tuple[float, float]] = {}
        for session_key, code in self.experiences.items():
            matched = code.mentioned.intersection(weights)
            if not matched:
                continue
            edited = sum(weights[k] for k in matched if k in code.edited)
            out[session_key] = (edited, sum(weights[k] for k in matched) - edited)
        return out

    def held(self, query_keys: Iterable[str], among: Iterable[str]) -> dict[str, float]:
        """Per experience of `among`: the share of `query_keys` (each counted once) its card
        holds. Absolute, unlike `scores`: the idf of a key depends on the memory, this share
        does not (a one-experience memory asked about other code reads 0)."""
        wanted = frozenset(query_keys)
        if not wanted:
            return {}
        return {key: len(code.mentioned & wanted) / len(wanted)
                for key in among if (code := self.experiences.get(key)) is not None}
