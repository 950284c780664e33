"""Rank experiences, not items: the relevance model scores sessions (each retriever ranks
them by their best item, `relevance.SessionSignals`), then each session's matching items are
grouped under its card.

A long session has hundreds of messages that each match a few query words, so summing a
session's items would reward length: a session counts once per retriever whatever its length.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from codemem.ranking.types import Candidate


@dataclass
class FoundExperience:
    """One experience in an answer: its card and its strongest evidence, best first."""

    session_key: str
    score: float
    card: Candidate
    evidence: list[Candidate] = field(default_factory=list)


def group_by_session(
    items: Sequence[Candidate],
    scores: dict[str, float],
    card_of: Callable[[str], str],
    limit: int,
    floor: float = 0.0,
    kept: int = 0,
) -> list[FoundExperience]:
    """The `limit` best sessions, each with its card and its other matching `items` (in the
    order given). Every session has a card, written with its first chunk, with the id
    `card_of(session key)`: a session found through its steps or messages gets it too.

    Sessions past the first `kept` scoring below `floor` times the best session's score are
    left out: what only one retriever's tail found is noise, not padding for a reader's
    window; the first `kept` stay whatever their scores (an answer names them)."""
    order = sorted(scores, key=lambda key: scores[key], reverse=True)[:limit]
    if order and floor > 0:
        least = floor * scores[order[0]]
        order = order[:kept] + [key for key in order[kept:] if scores[key] >= least]
    groups = {key: FoundExperience(key, scores[key], Candidate(card_of(key), 0.0, {"session_key": key, "kind": "card"}))
              for key in order}
    for item in items:
        g = groups.get(str(item.fields["session_key"]))
        if g is None:
            continue
        if item.fields["kind"] == "card":
            g.card = item
        else:
            g.evidence.append(item)
    return [groups[key] for key in order]
