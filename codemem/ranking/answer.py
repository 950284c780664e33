"""A Search answer: each experience as one item, best first, as much of it as its calibrated
P(related) warrants: the best one's card with its strongest evidence inline, each other related
one's card, a short card for the rest.

A reader scores and reads items in order, so one experience is one item: the second-best
experience starts at item 2, not after the first one's steps and messages, and the first few
thousand tokens carry the most likely experience in depth. Unfiltered experience helps a reader
little (SWE-ContextBench), so what is not related is named, not shown. Evidence that is not
plain text (images) is listed as its own item, as stored.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Collection, Mapping, Sequence
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
          related: Collection[str] = (), quiet: bool = False) -> list[Hit]:
    """Hits for `groups` (best first, at most `shape.experiences`): `read` fetches whole rows
    by id; `why[session_key]` goes into each experience item's metadata; `shape` is the
    search's answer part, fitted to the request (`AnswerShape.fitted`).

    How much of an experience is shown follows its calibrated P(related): the first
    experience's card carries its strongest evidence (`shape.first_evidence_chars`; the others'
    `shape.evidence_chars`, none by default); each other
    experience in `related` (P at least the quiet threshold) is its whole card, and every
    other one a short card (its task's headline and outcome, at most `shape.short_card_chars`:
    `Memory.experience` opens it). A `quiet` answer (no experience related) is the
    `shape.named_experiences` best experiences, the first with `shape.quiet_first_evidence_chars` of
    evidence and the others short cards, within
    `shape.quiet_budget_tokens`: a reader learns what the memory holds nearby without reading
    tens of thousands of tokens of it. Evidence that cannot be inlined (images) follows the
    experiences as its own items while `top_k` and the budget allow, so a small memory's own
    images still come back. One read fetches the cards and the evidence to inline."""
    why = why or {}
    first_chars = shape.first_evidence_chars
    if quiet:
        budget = min(shape.budget_tokens or shape.quiet_budget_tokens, shape.quiet_budget_tokens)
        shape = dataclasses.replace(shape, budget_tokens=budget)
        first_chars = shape.quiet_first_evidence_chars
    groups = groups[: min(top_k, shape.named_experiences if quiet else shape.experiences)]
    inlined = {g.session_key: g.evidence[: shape.first_evidence_items if i == 0 else shape.evidence_items]
               for i, g in enumerate(groups)}
    evidence = [e.id for g in groups for e in g.evidence]  # the first experience's first
    wanted = [e.id for found in inlined.values() for e in found]
    rows = _rows_of_user(read([g.card.id for g in groups] + list(dict.fromkeys(wanted + evidence[:top_k]))), user_id)
    hits: list[Hit] = []
    shown = _ShownEvidence()
    for g in groups:
        card = rows.get(g.card.id)
        if card is None:
            continue
        inline: list[tuple[Row, str]] = []
        allot = first_chars if g is groups[0] else shape.evidence_chars
        for e in inlined[g.session_key]:
            row = rows.get(e.id)
            if row is None or row["content"] or allot <= 0 or shown.covers(row):
                continue
            text, _ = clip_middle(str(row["text"]), min(allot, shape.max_item_chars))
            shown.add(text)
            allot -= len(text)
            inline.append((row, text))
        # Short: any card after the first that is not related, and in a quiet answer every card
        # but a first that carries evidence.
        short = shape.short_card_chars if hits and (quiet or g.session_key not in related) or (quiet and not first_chars) else 0
        hits.append(_experience_hit(card, inline, g.score, why.get(g.session_key, {}), short))
        if quiet:
            hits[-1].metadata["quiet"] = True
    built = hits[:top_k]
    hits = within_budget(built, _size, shape.budget_tokens, MAX_RESPONSE_BYTES)
    room = top_k - len(hits)
    if room > 0 and len(hits) == len(built):  # images, which no card can inline
        floor = hits[-1].score if hits else 1.0
        images = [rows[i] for i in evidence if i in rows and rows[i]["content"]][:room]
        hits += [_item_hit(row, floor * 0.99 ** (i + 1), shape.max_item_chars) for i, row in enumerate(images)]
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
