"""A Search answer from a memory of dialogue: turns, not experience cards, each dated.

Where the best sessions are people talking (LoCoMo-style conversations, project chat), the
answer to a question is a statement in one turn, and a card per session would spend the
reader's window on whole sessions. Here each candidate turn is scored by the retrievers'
fused item score (`ranking/rrf.py`) and its session's (its best turn's), then:

- a turn that reads as a decision is superseded where a turn of a later session among the candidates reads as a
  decision (`decisions.py`, a learned reader, not phrasings) and is close to it in meaning
  (the cosine of their stored vectors at least `TurnConfig.supersede_cosine`, chosen on the
  training projects); the latest of such a chain is the current one. A replacement goes
  ahead of what it replaced (newest first), and a question about the current state (as the
  question reader reads it, `questions.py`) also discounts the replaced turn;
- a turn that reads as a decision and shares the question's words is lifted above turns that
  only mention the subject (`TurnConfig.decision_boost`, off by default);
- turns are chosen greedily, each pick's score discounted per turn already chosen from its
  session (a maximal-marginal-relevance choice by session; `TurnConfig.session_discount`,
  and `time_discount` for a question about when, first, last, before or after), so that an
  answer spanning sessions need not be filled from one; the default is no discount;
- a question whose subject the memory seems not to hold (`present_probability`, fitted on
  the dev questions by `python -m eval.quality.timeline --calibrate`) gets a quiet answer: its
  first few turns only, marked `quiet`;
- each item is `[date] text`, with its relative dates resolved against the session's date
  and, where superseded, the session, date and words of the decision that replaced it (also
  in `metadata`).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np

from codemem import times
from codemem.clip import clip_middle
from codemem.contract.types import ContentPart, Hit
from codemem.ranking.shape import within_budget
from codemem.ranking.types import Candidate
from codemem.timeline.dates import day_of, resolve
from codemem.timeline.decisions import packaged as decision_reader
from codemem.timeline.index import DialogueIndex
from codemem.timeline.questions import Asked

_ENCODER = msgspec.json.Encoder()
_WORD = re.compile(r"[a-z0-9][a-z0-9+#.-]*[a-z0-9+#]|[a-z0-9]", re.I)
_STOPWORDS = frozenset("""a an the and or but of to in on at for with by from as is are was were be been being do does did
have has had what which who whom whose when where why how that this these those it its we our us you your they
their them i me my he she his her him not no any some all can could would should will shall may might must about
into over under than then there here so if also just only ever very much many more most use used uses using
now currently current latest still first last before after did does do go went get got make made like one ones
time times kind sort thing things""".split())


@dataclass(frozen=True)
class TurnConfig:
    """How turns are scored and chosen; `python -m eval.quality.timeline --calibrate` fits the quiet model."""

    candidates: int = 150  # turns read and scored
    session_weight: float = 0.6  # the session's score's share beside the turn's own (each scaled to the best)
    # Each turn already chosen from a session multiplies the next one's score by this (1: no
    # diversification): measured on the dev questions, 0.7 lost LoCoMo evidence and gained
    # nothing on the timeline fixtures, so it is off unless set.
    session_discount: float = 1.0
    time_discount: float = 1.0  # ... when the question is about time
    # A superseded turn's score, times this, for a question about now. 1 (no discount): the three
    # values below were chosen together on the written training projects' 214 update questions
    # (`python -m eval.quality.timeline --choose-supersession`, eval/results/timeline-supersession.json;
    # issue 53): the discount changed no answer's order there, so none is applied.
    superseded_factor: float = 1.0
    # A decision sharing the question's words: its score times 1 + this. Off: set by hand, never
    # chosen on data, it lifted a decision-like sibling above the turn the question names.
    decision_boost: float = 0.0
    # A later decision this close (cosine of the two turns' vectors) supersedes a turn.
    supersede_cosine: float = 0.4
    # Whether only a turn that reads as a decision can be superseded, or any turn as close to a
    # later decision (what was said of a subject before it was decided again).
    replaced_must_decide: bool = False
    neighbour_weight: float = 0.0  # a turn gains this share of the score of the turn before it (a reply to what matched)
    max_turn_chars: int = 1_500
    # Quiet (nothing in memory on the subject): P(present) = sigmoid(bias + cosine * the best
    # session's cosine + coverage * the share of the question's words the best turns hold);
    # below `quiet_below` the answer is the first `quiet_turns` turns only, marked quiet.
    # Fitted by class-weighted logistic regression on the dev questions (the timeline
    # fixtures' dev projects and LoCoMo dev), the threshold by Youden's J on out-of-fold
    # probabilities, one project or conversation held out at a time
    # (`python -m eval.quality.timeline --calibrate`, eval/results/timeline-quiet.json).
    quiet_bias: float = -14.8401
    quiet_cosine: float = 31.8679
    quiet_coverage: float = 6.4242
    quiet_below: float = 0.7364
    quiet_turns: int = 3
    coverage_turns: int = 10  # the best turns `coverage` reads


DEFAULT_TURNS = TurnConfig()


def is_dialogue(scores: Mapping[str, float], index: DialogueIndex, look_at: int = 5) -> bool:
    """Whether the best `look_at` sessions are all conversations (and there is one)."""
    best = sorted(scores, key=lambda k: scores[k], reverse=True)[:look_at]
    return bool(best) and all(index.conversation(k) for k in best)


def words(text: str) -> set[str]:
    """Content words, lower case, cut to 6 characters (a crude stem: "migrations" meets "migration")."""
    return {w.lower()[:6] for w in _WORD.findall(text) if w.lower() not in _STOPWORDS and len(w) > 1}


def present_probability(best_cosine: float, covered: float, config: TurnConfig) -> float:
    """How likely the memory holds the question's subject, from the best cosine and the share
    of the question's content words the best turns hold (`coverage`)."""
    z = config.quiet_bias + config.quiet_cosine * best_cosine + config.quiet_coverage * covered
    return 1.0 / (1.0 + math.exp(-z))


def coverage(question: str, texts: Sequence[str]) -> float:
    """The largest share of the question's content words that one of `texts` holds."""
    asked = words(question)
    if not asked:
        return 1.0
    return max((len(asked & words(t)) / len(asked) for t in texts), default=0.0)


@dataclass
class _Turn:
    row: dict[str, Any]
    score: float
    ms: int
    vector: np.ndarray | None = None
    decision: bool = False
    # The first later decision that replaced it, and the latest of that chain.
    superseded: tuple[_Turn, _Turn] | None = None


@dataclass(frozen=True)
class Reading:
    """What a dialogue answer reads before it chooses turns: the candidate turns with their
    scores before supersession, stored vectors and decision readings, and how likely the memory
    holds the question's subject. The costly part of a turn answer (rows, vectors, the decision
    reader); `decide` turns it into an answer under any `TurnConfig` of the same reading
    fields (`READ_FIELDS`) without reading again (`Memory.dialogue_reading`)."""

    turns: tuple[_Turn, ...]
    covered: float
    present: float
    best_cosine: float
    asked: Asked | None


# The `TurnConfig` fields a `Reading` depends on; `decide` reads the others.
READ_FIELDS = ("candidates", "session_weight", "neighbour_weight", "coverage_turns", "quiet_bias", "quiet_cosine",
               "quiet_coverage")


def read(question: str, items: Sequence[Candidate], session_scores: Mapping[str, float], best_cosine: float,
         index: DialogueIndex, read_rows: Callable[[list[str]], list[Candidate]],
         vectors: Callable[[list[str]], Mapping[str, np.ndarray]], user_id: str, encoder: str,
         config: TurnConfig = DEFAULT_TURNS, asked: Asked | None = None) -> Reading | None:
    """The turns of the conversations among `items` (the retrievers' fused items, best first)
    and what is read of them (None: no candidate turn): `read_rows` fetches rows by id,
    `vectors` their stored vectors, written by `encoder`; `asked`: what the question asks of
    time (`questions.py`; None: nothing, as where no turn is dated)."""
    best_session = max(session_scores.values(), default=0.0) or 1.0
    chosen = [c for c in items if c.fields.get("kind") == "message" and index.conversation(str(c.fields["session_key"]))]
    chosen = chosen[: config.candidates]
    rows = {c.id: c.fields for c in read_rows([c.id for c in chosen]) if c.fields.get("user_id") == user_id}
    best_item = max((c.score for c in chosen), default=0.0) or 1.0
    turns: list[_Turn] = []
    for c in chosen:
        row = rows.get(c.id)
        if row is None or not str(row["text"]).strip():
            continue
        prior = session_scores.get(str(row["session_key"]), 0.0) / best_session
        score = (1 - config.session_weight) * c.score / best_item + config.session_weight * prior
        turns.append(_Turn(row, score, times.source_ms(row)))
    if not turns:
        return None
    if config.neighbour_weight:
        _lift_replies(turns, config.neighbour_weight)
    ordered = sorted(turns, key=lambda t: -t.score)
    covered = coverage(question, [str(t.row["text"]) for t in ordered[: config.coverage_turns]])
    _read_decisions(turns, vectors, encoder)
    return Reading(tuple(turns), covered, present_probability(best_cosine, covered, config), best_cosine, asked)


def decide(question: str, reading: Reading, top_k: int, budget_tokens: int, max_bytes: int,
           config: TurnConfig = DEFAULT_TURNS, quiet: bool = True) -> list[Hit]:
    """The answer's items, best first, from its `Reading` (left as it was: the turns are
    copied): only the first few, marked quiet, when the subject seems absent (unless `quiet`
    is off: a search configured never to be quiet)."""
    turns = [dataclasses.replace(t, superseded=None) for t in reading.turns]
    asked = reading.asked
    silent = quiet and reading.present < config.quiet_below
    _mark_superseded(turns, config.supersede_cosine, config.replaced_must_decide)
    _boost_decisions(turns, words(question), config.decision_boost)
    _newest_first(turns, asked is not None and asked.about_now, config)
    discount = config.time_discount if asked is not None and asked.about_time else config.session_discount
    picked = _diversify(turns, discount, min(top_k, config.quiet_turns) if silent else top_k)
    hits = [_hit(t, config) for t in picked]
    if silent:  # what is nearest, in case the calibration is wrong, and little of it
        for h in hits:
            h.metadata["quiet"] = True
    hits[0].metadata["subject_present"] = {"probability": round(reading.present, 4), "cosine": round(reading.best_cosine, 4),
                                           "coverage": round(reading.covered, 4)}
    return within_budget(hits, _size, budget_tokens, max_bytes)


def _lift_replies(turns: Sequence[_Turn], weight: float) -> None:
    """Each turn gains `weight` of the score of the candidate turn just before it in its
    chunk: an answer often replies to the turn that shares the question's words."""
    def place(t: _Turn) -> tuple[str, str, int]:
        return str(t.row["session_key"]), str(t.row["metadata"]), int(t.row["position"])

    before = {place(t): t.score for t in turns}
    for t in turns:
        key, chunk, position = place(t)
        t.score += weight * before.get((key, chunk, position - 1), 0.0)


def _read_decisions(turns: Sequence[_Turn], vectors: Callable[[list[str]], Mapping[str, np.ndarray]], encoder: str) -> None:
    """Each turn's stored vector, and whether it reads as a decision (`decisions.py`): only by
    a reader trained on `encoder`'s vectors (another encoder's mean nothing to its weights, and
    then no turn reads as one)."""
    held = vectors([str(t.row["id"]) for t in turns])
    with_vector = [t for t in turns if str(t.row["id"]) in held]
    for t in with_vector:
        t.vector = held[str(t.row["id"])]
    if with_vector and decision_reader().embedder == encoder:
        read = decision_reader().decides([str(t.row["text"]) for t in with_vector],
                                         np.stack([t.vector for t in with_vector if t.vector is not None]))
        for t, decides in zip(with_vector, read, strict=True):
            t.decision = bool(decides)


def _mark_superseded(turns: Sequence[_Turn], cosine: float, must_decide: bool = True) -> None:
    """A turn (where `must_decide`, only one that reads as a decision) is superseded by the first
    decision of a later session among the candidates whose vector is at least `cosine` close to
    its own; the chain goes on from that decision to the next later one as close to it, and the
    last is the current one."""
    decisions = sorted((t for t in turns if t.decision and t.vector is not None), key=lambda t: t.ms)
    for t in turns:
        if t.vector is None or (must_decide and not t.decision):
            continue
        key = str(t.row["session_key"])
        first = next((d for d in decisions if d.ms > t.ms and str(d.row["session_key"]) != key
                      and float(d.vector @ t.vector) >= cosine), None)
        if first is None:
            continue
        latest = first
        for d in decisions:
            if d.ms > latest.ms and str(d.row["session_key"]) != str(latest.row["session_key"]) \
                    and float(d.vector @ latest.vector) >= cosine:  # type: ignore[operator]
                latest = d
        t.superseded = (first, latest)


def _boost_decisions(turns: Sequence[_Turn], asked: set[str], boost: float) -> None:
    """A turn that reads as a decision in words the question shares is what a question about
    a choice asks for, more than a turn that only mentions the subject."""
    if not boost:
        return
    for t in turns:
        if t.decision and words(str(t.row["text"])) & asked:
            t.score *= 1 + boost


def _newest_first(turns: Sequence[_Turn], current: bool, config: TurnConfig) -> None:
    """A superseded turn goes below the decisions that replaced it; for a question about now,
    its score is also discounted."""
    for t in turns:
        if t.superseded is None:
            continue
        if current:
            t.score *= config.superseded_factor
        for later in t.superseded:
            if later.superseded is None and later.score <= t.score:
                later.score = t.score * 1.001


def _diversify(turns: Sequence[_Turn], discount: float, top_k: int) -> list[_Turn]:
    """Greedy choice: each pick's score is discounted by `discount` per turn already picked
    from its session."""
    left = sorted(turns, key=lambda t: -t.score)
    if discount >= 1.0:  # no discount: the best first
        return left[:top_k]
    picked: list[_Turn] = []
    per_session: dict[str, int] = {}
    while left and len(picked) < top_k:
        best = max(range(len(left)), key=lambda i: left[i].score * discount ** per_session.get(str(left[i].row["session_key"]), 0))
        t = left.pop(best)
        key = str(t.row["session_key"])
        per_session[key] = per_session.get(key, 0) + 1
        picked.append(t)
    return picked


def _hit(t: _Turn, config: TurnConfig) -> Hit:
    row = t.row
    text, omitted = clip_middle(str(row["text"]), config.max_turn_chars)
    day = day_of(t.ms).isoformat()
    meta: dict[str, object] = {"kind": "turn", "role": row["role"], "date": day, "timestamp": row["timestamp"],
                               "conversation": True}
    notes = []
    resolved = resolve(text, t.ms)
    if resolved:
        meta["dates"] = {r.phrase: r.label() for r in resolved}
        notes.append("; ".join(f'"{r.phrase}" = {r.label()}' for r in resolved))
    if t.superseded is not None:
        first, latest = t.superseded
        meta["superseded_by"] = _decision(first)
        if latest is not first:
            meta["current"] = _decision(latest)
        notes.append(f"superseded on {day_of(first.ms).isoformat()}: {clip_middle(str(latest.row['text']), DECISION_CHARS)[0]}")
    if omitted:
        meta["omitted_chars"] = omitted
    content: str | list[ContentPart] = f"[{day}] {text}" + (f" ({'; '.join(notes)})" if notes else "")
    if row["content"]:  # multimodal parts are returned as stored: the date and notes are in metadata
        content = msgspec.json.decode(str(row["content"]), type=list[ContentPart])
        if notes:
            meta["notes"] = "; ".join(notes)
    meta["stored_at"] = times.iso(int(row["created_at"]))
    return Hit(id=str(row["id"]), content=content, score=round(t.score, 6), created_at=times.iso(t.ms),
               session_id=str(row["session_id"]), metadata=meta)


DECISION_CHARS = 200  # of a superseding decision's words quoted in a note


def _decision(t: _Turn) -> dict[str, object]:
    """A superseding decision as metadata: its session, day, item id and words."""
    return {"session_id": str(t.row["session_id"]), "date": day_of(t.ms).isoformat(), "id": str(t.row["id"]),
            "text": clip_middle(str(t.row["text"]), DECISION_CHARS)[0]}


def _size(hit: Hit) -> int:
    return len(_ENCODER.encode(hit.content)) + 256
