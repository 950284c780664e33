"""A Search answer for a reader with a small window: an agent's tool result, a terminal.

The answer of `POST /search` (`ranking/answer.py`) gives the best experience in depth, its whole
card (a commit's diff included) and thousands of characters of its evidence, for an answer
model that reads 128k tokens. An agent that searches before each task reads a page or two:
there one large diff filled the answer and the other past changes never reached it. A compact
answer gives every experience alike and brief: its card cut to what a reader acts on
(`render.brief_card`: the task, how it ended, the files edited, errors, tests) and the one
piece of evidence that matched best, trimmed; as many experiences as the budget holds, each
with an equal share of it (so a larger budget shows more of each as well as more of them);
and those left out, counted and named, so that the reader can open one by id or ask again
with a larger budget. The MCP tool and `codemem search` both answer so; each renders the
items its own way (`render` gives an item's size as that edge shows it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from codemem.clip import clip_middle
from codemem.contract.types import Hit
from codemem.experience.building.render import brief_card
from codemem.ranking.answer import EVIDENCE_HEADING
from codemem.ranking.search_config import SearchConfig
from codemem.ranking.shape import CHARS_PER_TOKEN

# Experiences asked for beyond the reader's top_k, to tell how many more match.
LOOKAHEAD = 10
# The evidence text read for each experience: enough for any item's share of a large budget.
EVIDENCE_READ = 4_000
# An item's share of the budget for its card and evidence: at least this much (a card's
# headline, outcome and files and a few lines of evidence), at most this much (a whole card and
# its evidence); what a reader is shown around them (its tag, ids, labels) takes about
# ITEM_FRAME_CHARS more.
MIN_ITEM_CHARS = 800
MAX_ITEM_CHARS = 8_000
ITEM_FRAME_CHARS = 250
CARD_SHARE = 0.6  # of an item's share, for its card; the rest for its evidence
# Of the budget, what an answer's head and its list of what was left out take.
FRAME_CHARS = 1_200
MAX_NAMED = 10  # experiences left out that an answer names


def search_config(base: SearchConfig) -> SearchConfig:
    """`base` with one evidence item read per experience, every experience alike: no budget,
    no relevance floor and no quiet shape of its own, since the compact answer is bounded here
    (`compact`: the nearest few, in the model's order, fit in a page), and says whether any
    experience stood out (`CompactAnswer.quiet`)."""
    return base.replace({"answer.first_evidence_items": 1, "answer.evidence_items": 1,
                         "answer.first_evidence_chars": EVIDENCE_READ, "answer.evidence_chars": EVIDENCE_READ,
                         "answer.budget_tokens": 0, "calibration.quiet_below": 0.0,
                         "calibration.relevance_floor": 0.0})


@dataclass(frozen=True)
class Brief:
    """One experience, brief: its card cut to `card`, and the evidence that matched best
    (`label` says what it is: "step: edit, assistant, position 3"; both empty when none)."""

    hit: Hit
    card: str
    label: str
    evidence: str


@dataclass(frozen=True)
class CompactAnswer:
    shown: list[Brief]
    left_out: list[Hit]  # experiences found and not shown: over top_k or over the budget
    more: bool  # as many experiences were found as were asked for: more may match
    quiet: bool  # no experience's calibrated relevance reached the search's quiet threshold

    @property
    def found(self) -> int:
        return len(self.shown) + len(self.left_out)


def card_and_evidence(hit: Hit) -> tuple[str, str, str]:
    """An experience item's card, and the label and text of the first evidence inlined under it."""
    text = hit.content if isinstance(hit.content, str) else ""
    card, _, evidence = text.partition(f"\n\n{EVIDENCE_HEADING}\n\n")
    first = evidence.split("\n\n[", 1)[0] if evidence else ""
    label, _, body = first.partition("\n")
    if not (label.startswith("[") and label.endswith("]")):
        return card, "", first
    return card, label[1:-1], body


def brief(hit: Hit, share: int = MAX_ITEM_CHARS) -> Brief:
    """One experience item made brief within `share` characters (`CARD_SHARE` for its card)."""
    card, label, evidence = card_and_evidence(hit)
    card_chars = int(share * CARD_SHARE)
    return Brief(hit, brief_card(card, card_chars), label, clip_middle(evidence, share - card_chars)[0] if evidence else "")


def compact(hits: Sequence[Hit], top_k: int, budget_tokens: int, render: Callable[[Brief], str],
            asked: int | None = None, quiet_below: float = 0.0) -> CompactAnswer:
    """The experiences of `hits` (a Search answer, best first; loose evidence items are left
    aside) made brief, as many as `top_k` and `budget_tokens` allow (0: no budget), the first
    always; `render(item)` is how the reader is shown one, whose length the budget counts.
    `asked`: how many experiences the Search was asked for (default `top_k`); `quiet_below`:
    the search's quiet threshold (`Calibration.quiet_below`)."""
    experiences = [h for h in hits if h.metadata.get("kind") == "card"]
    room = max(MIN_ITEM_CHARS, budget_tokens * CHARS_PER_TOKEN - FRAME_CHARS) if budget_tokens else 0
    wanted = min(top_k, len(experiences)) or 1
    share = min(MAX_ITEM_CHARS, max(MIN_ITEM_CHARS, room // wanted - ITEM_FRAME_CHARS)) if room else MAX_ITEM_CHARS
    shown: list[Brief] = []
    used = 0
    for hit in experiences[:top_k]:
        item = brief(hit, share)
        size = len(render(item))
        if shown and room and used + size > room:
            break
        shown.append(item)
        used += size
    quiet = bool(experiences) and all(float(h.metadata.get("relevance", 1.0)) < quiet_below  # type: ignore[arg-type]
                                      for h in experiences)
    return CompactAnswer(shown, experiences[len(shown):], len(experiences) >= (asked or top_k), quiet)
