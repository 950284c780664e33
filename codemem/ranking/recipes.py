"""Search recipes: named, complete search configurations built from the parts in
`codemem.ranking.search_config`.

`Memory.search` reads one `SearchConfig`; `DEFAULT_SEARCH` is the one the service runs (a
deployment may set a few of its values from the environment, see `codemem.config`). An
evaluation varies a search by passing another configuration (`Memory(settings, search=...)`
or `Memory.search(req, config=...)`), never by patching module constants. The pattern is
graphiti's search recipes (`HYBRID_RRF = SearchConfig(...)`).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from codemem.ranking.search_config import (
    RANKINGS,
    AnswerShape,
    Calibration,
    Fusion,
    Retrieval,
    SearchConfig,
)
from codemem.timeline.turns import DEFAULT_TURNS


def model_card(name: str) -> dict[str, Any]:
    """A packaged model's card (`codemem/ranking/models/<name>`)."""
    return json.loads((resources.files("codemem.ranking") / "models" / name).read_text())


# The fusion weights and k, the code-location weights, the relevance floor, the calibration
# coefficients and the quiet threshold were chosen by cross-validation across repositories,
# then fitted on all the labelled dev tasks, so the shipped values are in-sample:
# `python -m eval.replay.relevance_cv` on a `python -m eval.replay --keep DIR` ingest. A refit
# is taken only with the past fixes measured too, since the fusion weights also rank memories
# of commits. The quiet threshold trades gold share for quiet (relevance_cv's `threshold_curve`).
DEFAULT_SEARCH = SearchConfig(
    retrieval=Retrieval(
        candidates=200,
        # Chosen with the commit-only weights below (`python -m eval.quality.past_fixes_cv`).
        title_prose_words=10,
    ),
    fusion=Fusion(
        lexical_weight=1.0,  # the unit the other weights are read in (not searched)
        # The query's nearest cards (task to task) weigh more than its BM25 and reference
        # matches; code locations as much as the references (chosen by eval.replay.relevance_cv).
        dense_weight=1.5,
        refs_weight=1.0,
        location_weight=1.0,
        location_mention_weight=0.25,
        # The commit-only knobs: chosen on 118 public past-fix tasks of 6 repositories
        # (`train/past_fixes`, SWE-bench Verified tasks over their histories) by the procedure
        # of `eval.quality.past_fixes_cv`, fitted on all of them; the past-fixes dev set only
        # validates them. They weigh nothing in a memory without commit experiences.
        title_weight=3.0,
        subject_weight=3.0,
        since_weight=6.0,
        # Cormack et al.'s k for items: robust to the retrievers' incomparable scores (not searched).
        item_rrf_k=60,
        # Small k for sessions: the first places of each retriever's session ranking carry
        # the signal (chosen by eval.replay.relevance_cv).
        session_rrf_k=3,
        # Half the largest share of the best score that cuts no gold experience the fusion
        # finds within an answer's room (eval.replay.relevance_cv).
        relevance_floor=0.15,
    ),
    calibration=Calibration(
        # Logistic regression of "is gold" over the first experiences of each noisy-all and
        # absent answer (eval.replay.relevance_cv).
        coefficients=(-3.3111, 2.7242, 0.8415, 1.1823, 0.593),
        # The threshold whose absent answers carry the fewest tokens against noisy-all's on
        # the smoothed training curve (eval.replay.relevance_cv).
        quiet_below=0.42,
    ),
    answer=AnswerShape(
        # A reader with a limited window: the answer stops at this many tokens (~4 characters
        # each) and no single item is longer than this (its head and tail are kept).
        budget_tokens=32_000,
        max_item_chars=6_000,
        # Enough that a reader whose window holds only the first few thousand tokens gets the
        # best experience whole.
        first_evidence_chars=60_000,
        evidence_chars=4_000,
        first_evidence_items=20,
        evidence_items=3,
        # A quiet answer names as many experiences as a loud one can hold (a reader still
        # finds what was there), but short: a short card for each, a little evidence for the
        # first (set by hand, not searched), and room for a small memory's images after it.
        quiet_experiences=24,
        quiet_first_evidence_chars=4_000,
        quiet_card_chars=300,
        quiet_budget_tokens=8_000,
    ),
    turns=DEFAULT_TURNS,
    ranking="fused",
)

# The learned ranker in place of the fusion. Its quiet threshold and relevance floor read its
# calibrated P(related), so they are the model's own: chosen by train/ranker/train.py on the
# training data's out-of-fold scores and kept in its card (`models/ranker.json`, "search").
_LEARNED = model_card("ranker.json")["search"]
LEARNED_SEARCH = DEFAULT_SEARCH.replace({
    "ranking": "learned",
    "calibration.quiet_below": _LEARNED["quiet_below"],
    "fusion.relevance_floor": _LEARNED["relevance_floor"],
})

# Each ranking's recipe, by its name (`Settings.search.ranking`, CODEMEM_RANKING).
RECIPES = {"fused": DEFAULT_SEARCH, "learned": LEARNED_SEARCH}
assert tuple(RECIPES) == RANKINGS
