"""The search configuration the service runs, built from the parts in
`codemem.ranking.search_config`.

`Memory.search` reads one `SearchConfig`; `DEFAULT_SEARCH` is the one the service runs (a
deployment may set a few of its values from the environment, see `codemem.config`). An
evaluation varies a search by passing another configuration (`Memory(settings, search=...)`
or `Memory.search(req, config=...)`), never by patching module constants.
"""

from __future__ import annotations

from codemem.ranking.learned import model_card
from codemem.ranking.search_config import AnswerShape, Calibration, Retrieval, SearchConfig
from codemem.timeline.turns import DEFAULT_TURNS

# The quiet threshold and the relevance floor read the relevance model's calibrated
# P(related), so they are the model's own: chosen by train/ranker/train.py on its training
# folds' out-of-fold probabilities and kept in its card (`models/ranker.json`, "search").
_MODEL = model_card()["search"]

DEFAULT_SEARCH = SearchConfig(
    retrieval=Retrieval(candidates=200),
    calibration=Calibration(quiet_below=float(_MODEL["quiet_below"]), relevance_floor=float(_MODEL["relevance_floor"])),
    answer=AnswerShape(
        # A reader with a limited window: the answer stops at this many tokens (~4 characters
        # each) and no single item is longer than this (its head and tail are kept).
        budget_tokens=32_000,
        max_item_chars=6_000,
        # The best experience's evidence: its strongest steps and messages, about 2k tokens
        # beside its card (SWE-ContextBench found unfiltered experience helps little).
        first_evidence_chars=8_000,
        first_evidence_items=20,
        # The others: their cards only (a compact answer reads one evidence item each).
        evidence_chars=0,
        evidence_items=0,
        # Every experience a reader might open names itself in a short card (its task's
        # headline and outcome: `Memory.experience` opens it whole); related ones in full.
        experiences=24,
        short_card_chars=300,
        # A quiet answer (nothing related): the five nearest experiences (every answer names
        # its first five, `named_experiences`), the first with a little evidence (a search for
        # an exact string still shows where it was said), the others as short cards a reader can
        # open, and room for a small memory's images after them (set by hand, not searched: an
        # answer with nothing in it should cost little).
        quiet_first_evidence_chars=2_000,
        quiet_budget_tokens=8_000,
        named_experiences=5,
    ),
    turns=DEFAULT_TURNS,
)
