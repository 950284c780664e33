"""Shape a ranked item list into experiences: each session's card, then its evidence.

A reader with a limited window reads the items in order, so the most relevant experience
comes first as a whole (card, then its strongest steps or messages), then the next one.
A session ranks by its best item plus a share of its other matching items: a session is
more likely relevant when several of its parts are.
"""

from __future__ import annotations

from collections.abc import Callable

from codemem.store.lance import Candidate

SUPPORT_WEIGHT = 0.3  # share of each further matching item added to a session's score
MAX_EVIDENCE = 4  # items listed under a card before moving to the next experience


def assemble(
    fused: list[Candidate],
    card_of: Callable[[str], str],
    top_k: int,
    max_evidence: int = MAX_EVIDENCE,
) -> list[Candidate]:
    """Group `fused` (best first) by session; return cards and evidence in reading order,
    then the evidence beyond `max_evidence` per session.

    Every session has a card (written with its first chunk), with the id `card_of(session
    key)`: a session found by its steps or messages alone gets its card listed too."""
    groups: dict[str, list[Candidate]] = {}
    for cand in fused:
        groups.setdefault(str(cand.fields["session_key"]), []).append(cand)

    def session_score(items: list[Candidate]) -> float:
        return items[0].score + SUPPORT_WEIGHT * sum(c.score for c in items[1 : 1 + max_evidence])

    order = sorted(groups, key=lambda k: session_score(groups[k]), reverse=True)
    out: list[Candidate] = []
    rest: list[Candidate] = []
    for key in order:
        items = groups[key]
        score = session_score(items)
        card = next((c for c in items if c.fields["kind"] == "card"), None)
        if card is None:
            card = Candidate(id=card_of(key), score=0.0, fields={"session_key": key, "kind": "card"})
        evidence = [c for c in items if c.fields["kind"] != "card"]
        for cand in [card, *evidence[:max_evidence]]:
            out.append(Candidate(id=cand.id, score=score, fields=cand.fields))
            score *= 0.999  # evidence ranks just under its card, above the next session
        rest.extend(evidence[max_evidence:])
    # Every experience first, then the remaining matches for readers who asked for more.
    rest.sort(key=lambda c: c.score, reverse=True)
    return _monotone((out + rest)[:top_k])


def _monotone(items: list[Candidate]) -> list[Candidate]:
    """Scores never rise down the list, as the contract's readers expect."""
    floor = float("inf")
    for c in items:
        floor = min(floor, c.score)
        c.score = floor
    return items
