"""A Search answer: each experience as one item (its card, then its strongest evidence
inline), best first, then further evidence while the token budget lasts.

A reader scores and reads items in order, so one experience is one item: the second-best
experience starts at item 2, not after the first one's steps and messages, and the first
few thousand tokens carry the most likely experience in depth (the first item gets a
larger evidence allotment than the rest). Evidence that is not plain text (images) is
listed as its own item, as stored.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

from codemem import times
from codemem.clip import clip_middle
from codemem.contract.types import ContentPart, Hit
from codemem.experience.building.render import short_card
from codemem.ranking.assemble import FoundExperience
from codemem.ranking.search_config import AnswerShape
from codemem.ranking.shape import within_budget
from codemem.ranking.types import Candidate

_ENCODER = msgspec.json.Encoder()
# The contract caps a Search response at 30 MiB; stay clear of it with room for the envelope.
MAX_RESPONSE_BYTES = 29 * 1024 * 1024

Row = dict[str, Any]  # a stored row as LanceDB returns it


_HEAD_CHARS = 256  # how much of an evidence text `_ShownEvidence.covers` looks at first
# What separates an experience item's card from the evidence inlined under it, each evidence
# item then "[label]\ntext" (`_label`), blocks apart by a blank line.
EVIDENCE_HEADING = "Evidence from this session:"


def build(groups: Sequence[FoundExperience], read: Callable[[list[str]], list[Candidate]], user_id: str,
          top_k: int, shape: AnswerShape, why: Mapping[str, dict[str, object]] | None = None,
          quiet: bool = False) -> list[Hit]:
    """Hits for `groups` (best first): `read` fetches whole rows by id; `why[session_key]`
    goes into each experience item's metadata; `shape` is the search's answer part, fitted
    to the request (`AnswerShape.fitted`).

    One read fetches the cards, the evidence to inline and the next `top_k` evidence items
    (what an answer with room left appends): each read has a fixed cost however few rows it
    returns, and a second one is made only for loose evidence beyond those.

    A `quiet` answer (no experience relevant enough) is the first `shape.quiet_experiences`
    experiences: the first with `shape.quiet_first_evidence_chars` of evidence, each other
    as a short card (its task's headline and outcome, at most `shape.quiet_card_chars`, no
    evidence: `Memory.experience` opens it), then only the evidence that cannot be inlined
    (images), all within `shape.quiet_budget_tokens`: a reader learns what the memory holds
    nearby without reading tens of thousands of tokens of it, and a small memory's own notes
    and images still come back."""
    why = why or {}
    card_chars = 0
    if quiet:
        budget = min(shape.budget_tokens or shape.quiet_budget_tokens, shape.quiet_budget_tokens)
        shape = dataclasses.replace(shape, first_evidence_chars=shape.quiet_first_evidence_chars,
                                    evidence_chars=0, budget_tokens=budget)
        groups, card_chars = groups[: shape.quiet_experiences], shape.quiet_card_chars
    groups = groups[: shape.groups_to_read(top_k)]
    inlinable = [shape.first_evidence_items if i == 0 else shape.evidence_items for i in range(len(groups))]
    wanted = [g.card.id for g in groups] + [e.id for g, n in zip(groups, inlinable, strict=True) for e in g.evidence[:n]]
    listed = set(wanted)
    wanted += [e.id for g in groups for e in g.evidence if e.id not in listed][:top_k]
    rows = _rows_of_user(read(wanted), user_id)
    hits: list[Hit] = []
    loose: list[str] = []  # evidence ids not inlined, in answer order
    shown = _ShownEvidence()
    for g, n in zip(groups, inlinable, strict=True):
        card = rows.get(g.card.id)
        allot = shape.evidence_chars if hits else shape.first_evidence_chars
        inline: list[tuple[Row, str]] = []
        for j, e in enumerate(g.evidence):
            row = rows.get(e.id)
            if card is None or row is None or row["content"] or allot <= 0 or j >= n:
                loose.append(e.id)
                continue
            if shown.covers(row):
                continue
            text, _ = clip_middle(str(row["text"]), min(allot, shape.max_item_chars))
            shown.add(text)
            allot -= len(text)
            inline.append((row, text))
        if card is not None:
            hits.append(_experience_hit(card, inline, g.score, why.get(g.session_key, {}), card_chars if hits else 0))
            if quiet:
                hits[-1].metadata["quiet"] = True
    built = hits[:top_k]
    hits = within_budget(built, _size, shape.budget_tokens, MAX_RESPONSE_BYTES)
    room = top_k - len(hits)
    if room > 0 and len(hits) == len(built) and loose:  # the budget has room for more
        if unread := [item_id for item_id in loose[:room] if item_id not in rows]:
            rows.update(_rows_of_user(read(unread), user_id))
        floor = hits[-1].score if hits else 1.0
        for i, item_id in enumerate(loose[:room]):
            row = rows.get(item_id)
            if row is None or shown.covers(row) or (quiet and not row["content"]):
                continue
            hits.append(_item_hit(row, floor * 0.99 ** (i + 1), shape.max_item_chars))
            if isinstance(hits[-1].content, str):
                shown.add(hits[-1].content)
        hits = within_budget(hits, _size, shape.budget_tokens, MAX_RESPONSE_BYTES)
    return hits


def whole(card: Row, evidence: Sequence[Row], shape: AnswerShape) -> list[Hit]:
    """One experience for a reader who asked for it by id: the card, then each evidence
    item in order (each trimmed to max_item_chars) until the token budget is spent."""
    hits = [_item_hit(card, 1.0, 0)] + [_item_hit(row, 1.0, shape.max_item_chars) for row in evidence]
    return within_budget(hits, _size, shape.budget_tokens, MAX_RESPONSE_BYTES)


class _ShownEvidence:
    """The evidence an answer carries so far, whitespace aside: evidence already shown (a
    file read twice, a rerun's output, a message its step record quotes) is not shown again.
    Cards are not counted: a message is returned verbatim even where a card restates it.
    What is recorded is what the answer shows: an item trimmed to its head and tail does not
    cover its middle."""

    def __init__(self) -> None:
        self._said = ""  # one string, so that a lookup is one substring search

    def add(self, text: str) -> None:
        self._said += "\0" + " ".join(text.split())

    def covers(self, row: Row) -> bool:
        """Whether all of `row`'s text is in the answer already."""
        if row["content"]:  # multimodal parts are returned as stored
            return False
        text = str(row["text"])
        # Most rows are not covered, and the head of a text, normalised, is the head of the
        # whole text normalised: a head not in the answer rules the row out without
        # normalising all of it (a Search asks of ~100 rows of ~2k characters each).
        if len(text) > _HEAD_CHARS and " ".join(text[:_HEAD_CHARS].split()) not in self._said:
            return False
        return " ".join(text.split()) in self._said


def _rows_of_user(rows: list[Candidate], user_id: str) -> dict[str, Row]:
    # The store filtered by user key already; this re-check costs nothing and makes
    # isolation independent of the hash.
    return {c.id: c.fields for c in rows if c.fields["user_id"] == user_id}


def _experience_hit(card: Row, evidence: list[tuple[Row, str]], score: float, why: Mapping[str, object],
                    card_chars: int = 0) -> Hit:
    """The card (whole, or with `card_chars` its short form) with its inlined evidence."""
    parts = [short_card(str(card["text"]), card_chars) if card_chars else str(card["text"])]
    if evidence:
        parts.append(EVIDENCE_HEADING)
        parts.extend(f"[{_label(row)}]\n{text}" for row, text in evidence)
    hit = _item_hit(card, score, 0)
    hit.content = "\n\n".join(parts)
    hit.metadata["evidence"] = [str(row["id"]) for row, _ in evidence]
    hit.metadata.update(why)
    return hit


def _label(row: Row) -> str:
    meta = json.loads(str(row["metadata"])) if row["metadata"] else {}
    what = f"step: {meta['step']}" if row["kind"] == "step" and "step" in meta else str(row["kind"])
    return f"{what}, {row['role']}, position {row['position']}"


def _item_hit(row: Row, score: float, max_chars: int) -> Hit:
    raw_content = str(row["content"])
    meta = json.loads(str(row["metadata"])) if row["metadata"] else {}
    meta.update({"kind": row["kind"], "role": row["role"], "position": row["position"], "timestamp": row["timestamp"]})
    content: str | list[ContentPart]
    if raw_content:  # multimodal parts are returned as stored
        content = msgspec.json.decode(raw_content, type=list[ContentPart])
    else:
        content, omitted = clip_middle(str(row["text"]), max_chars)
        if omitted:
            meta["omitted_chars"] = omitted
    # The item's own time (the commit's, the message's, the session's latest message's);
    # when it was stored is kept beside it (`codemem/times.py`).
    meta["stored_at"] = times.iso(int(row["created_at"]))
    return Hit(
        id=str(row["id"]),
        content=content,
        score=round(score, 6),
        created_at=times.iso(times.source_ms(row)),
        session_id=str(row["session_id"]),
        metadata=meta,
    )


def _size(hit: Hit) -> int:
    return len(_ENCODER.encode(hit.content)) + 256
