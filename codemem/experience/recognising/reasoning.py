"""Sentences of the agent's reasoning that explain a bug or its fix.

A sentence scores by the explanatory cues it holds ("the issue is", "because", "root cause",
"the fix") and the code it names, and loses for narration ("Let me look at..."). The card
keeps the best few, in session order, without near-duplicates.
"""

from __future__ import annotations

import re

import msgspec

from codemem.clip import clip
from codemem.experience.memo import TextMemo

_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*\"'(\[])|\n\s*\n|\n(?=[ \t]*(?:[-*•]|\d+[.)]|#+)\s)")
_CUE_PATTERNS: tuple[tuple[str, float], ...] = (
    (r"\broot cause\b", 4.0),
    (
        r"\bthe (?:actual |real |core |underlying )?(?:issue|problem|bug) "
        r"(?:is|was|here is|occurs|arises|happens|lies)\b",
        3.5,
    ),
    (r"\bbecause\b|\bdue to\b|\bsince the\b", 2.0),
    (r"\bthe (?:fix|solution|correct approach)\b|\bto fix (?:this|it|the)\b", 2.5),
    (r"\bcaus(?:es|ed|ing)\b|\bresults? in\b|\bleads? to\b", 2.0),
    (r"\bwhich means\b|\b(?:that|this)(?:'s| is) why\b", 1.5),
    (r"\binstead of\b|\brather than\b", 1.0),
    (r"\bshould (?:be|return|use|not|have|handle)\b", 1.0),
    (
        r"\b(?:doesn't|does not|isn't|is not|never|fails? to|missing|incorrectly|wrong(?:ly)?)\b",
        0.8,
    ),
    (r"\bthe (?:issue|problem|bug)\b", 1.0),
)
_CUES = tuple((re.compile(pattern, re.I), weight) for pattern, weight in _CUE_PATTERNS)
_PLAN = re.compile(
    r"\b(?:I'll|I will|we need to|we should|I need to|the fix is to|the solution is to)\b.{0,80}?"
    r"\b(?:fix|change|modify|add|update|replace|remove|handle|move|use|override|implement)\b",
    re.I,
)
_NARRATION = re.compile(
    r"^(?:let me|let's|now let me|now i|now,? let|first,? let|next,? let|great|perfect|good|"
    r"excellent|okay|ok\b|now\b|alright|i see|interesting|hmm|wait)",
    re.I,
)
# Words every cue or plan contains: a sentence holding none cannot reach the keep score, so
# most sentences are dismissed by a few substring tests.
_CUE_WORDS = (
    "issue",
    "problem",
    "bug",
    "because",
    "due to",
    "since the",
    "fix",
    "solution",
    "approach",
    "caus",
    "result",
    "lead",
    "means",
    "why",
    "instead",
    "rather",
    "should",
    "n't",
    " not ",
    "never",
    "fail",
    "missing",
    "incorrect",
    "wrong",
    "i'll",
    "i will",
    "need to",
)
_EXPLAINS = re.compile(r"\b(?:is|was) that\b|\bwhen\b|\bso that\b", re.I)
# Narration of the agent's own work, verification and environment trouble: not a root cause.
_OFF_TOPIC = re.compile(
    r"\b(?:I'll|I will|let me|let's)\s+(?:just\s+|now\s+|first\s+)?(?:read|look|check|explore|"
    r"examine|start|run|search|see|investigate|understand|verify|test|find|create|write|try)\b|"
    r"\b(?:is|are) (?:now )?working\b|\bworks\b|\b(?:tests?|fix) (?:now )?pass(?:es|ed)?\b|✓|✅|"
    r"\btestbed\b|\bdirectory\b|\bpip install\b|\binstall(?:ed|ation)?\b|\benvironment\b|"
    r"\bpython ?[23](?:\.\d+)?\b|\bpermission\b",
    re.I,
)
_CODE = re.compile(r"`[^`\n]+`|\b\w+\(\)|\b[a-z]+_[a-z_]+\b|\b[A-Z][a-z]+[A-Z]\w+\b")
_BOLD = re.compile(r"\*\*(?=\S)([^*\n]+?)(?<=\S)\*\*")
_MARKDOWN = re.compile(
    r"^#+[ \t]*|^[ \t]*(?:[-*•]|\d+[.)])[ \t]+|"
    r"^[ \t]*(?:DISCUSSION|THOUGHT|Thought|Reasoning):?[ \t]*",
    re.M,
)
_WORD = re.compile(r"\w+")
_HEADING = re.compile(r"^#+[ \t]*([^\n]*)$", re.M)
_MIN_CHARS = 40
_MAX_CHARS = 320
_KEEP_SCORE = 3.0
LIMIT = 2  # excerpts kept of one message


class Excerpt(msgspec.Struct, frozen=True):
    position: int
    score: float
    text: str




def sentences(text: str) -> list[str]:
    """Plain-text sentences of a reasoning message (markdown markers removed; a heading is
    a sentence of its own, not the start of the next one)."""
    out = []
    for piece in _SPLIT.split(_HEADING.sub(r"\n\n\1\n\n", text)):
        sentence = " ".join(_MARKDOWN.sub("", _BOLD.sub(r"\1", piece)).split())
        if len(sentence) >= _MIN_CHARS:
            out.append(sentence)
    return out


def _has_cue(sentence: str) -> bool:
    low = sentence.lower()
    return any(word in low for word in _CUE_WORDS)


def score(sentence: str) -> float:
    value = sum(weight for pattern, weight in _CUES if pattern.search(sentence))
    if _PLAN.search(sentence):
        value += 1.5
    value += min(len(_CODE.findall(sentence)), 3) * 0.5
    if _EXPLAINS.search(sentence):
        value += 1.0
    if _OFF_TOPIC.search(sentence):
        value -= 2.5
    if _NARRATION.match(sentence):
        value -= 2.5
    if sentence.endswith("?") or sentence.endswith(":"):
        value -= 1.5
    return value


def excerpts(position: int, text: str) -> list[Excerpt]:
    """The best explanatory sentences of one message (at most ``LIMIT``), in text order."""
    return [Excerpt(position, sc, sentence) for sc, sentence in _BEST(text)]


def _best(text: str, _: str = "") -> tuple[tuple[float, str], ...]:
    """(score, sentence) of the message's best explanatory sentences, in text order."""
    scored = [(score(s), i, s) for i, s in enumerate(sentences(text[:20_000])) if _has_cue(s)]
    best = sorted((x for x in scored if x[0] >= _KEEP_SCORE), key=lambda x: (-x[0], x[1]))[:LIMIT]
    return tuple((sc, clip(s, _MAX_CHARS, break_at=" ")) for sc, _, s in sorted(best, key=lambda x: x[1]))


# A session's messages are read again by each of its Adds' rebuilds (`experience.memo`).
_BEST = TextMemo(_best)


def _similar(a: str, b: str) -> bool:
    wa, wb = set(_WORD.findall(a.lower())), set(_WORD.findall(b.lower()))
    if not wa or not wb:
        return False
    return len(wa & wb) / min(len(wa), len(wb)) > 0.7


def pick(candidates: list[Excerpt], limit: int) -> list[Excerpt]:
    """The ``limit`` best distinct excerpts, returned in session order."""
    chosen: list[Excerpt] = []
    for excerpt in sorted(candidates, key=lambda e: (-e.score, e.position)):
        if any(_similar(excerpt.text, c.text) for c in chosen):
            continue
        chosen.append(excerpt)
        if len(chosen) >= limit:
            break
    return sorted(chosen, key=lambda e: e.position)
