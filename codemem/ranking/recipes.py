"""Search configurations: every knob of a Search in one named, typed value.

`Memory.search` reads one `SearchConfig`; `DEFAULT_SEARCH` is the one the service runs
(its relevance floor and candidate depth can be set from the environment, see
`codemem.config.Settings`). An evaluation varies a search by passing another configuration
(`Memory(settings, search=...)` or `Memory.search(req, config=...)`), never by patching
module constants. The pattern is graphiti's search recipes (`HYBRID_RRF = SearchConfig(...)`).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

RANKINGS = ("fused", "learned")


def model_card(name: str) -> dict[str, Any]:
    """A packaged model's card (`codemem/ranking/models/<name>`)."""
    return json.loads((resources.files("codemem.ranking") / "models" / name).read_text())


@dataclass(frozen=True)
class SearchConfig:
    # Retrievers: how many candidates each hands to fusion, and its weight in the fusion of
    # session rankings.
    candidates: int
    lexical_weight: float
    dense_weight: float
    refs_weight: float
    # Code-location evidence (`ranking/locations.py`): its weight in the fusion, and what a
    # code key an experience only mentions counts against one it edited.
    location_weight: float
    location_mention_weight: float
    # Commit experiences only (imported git history): the report's title and the first
    # `title_prose_words` words of its prose matched with their text (BM25), and its title
    # with their subjects (`ranking/subjects.py`); weights in the same fusion. And the BM25
    # retriever's best experience when its score leads the next one's by `lead_ratio` or more
    # (a clear winner: the report and the change share rare words), as a ranking of one with
    # `lead_weight`.
    title_weight: float
    subject_weight: float
    title_prose_words: int
    lead_weight: float
    lead_ratio: float
    # And the candidate changes released since the version the report names
    # (`ranking/releases.py`), all tied first in a ranking with this weight.
    since_weight: float
    # Reciprocal-rank constants: item-level fusion (which orders each session's evidence)
    # and session-level fusion (which ranks experiences).
    item_rrf_k: int
    session_rrf_k: int
    # Experiences scoring below this share of the best one's fused score are left out.
    relevance_floor: float
    # Calibrated relevance (`ranking/relevance.py`): logistic coefficients (intercept, lead
    # over the best other experience in the fusion and in BM25 as shares of the larger score,
    # nearest cosine, how many retrievers rank it first).
    # When no experience reaches `quiet_below` the answer stays quiet (0 turns this off): at
    # most `quiet_experiences` experiences, the first with `quiet_first_evidence_chars` of
    # evidence, each other one as a short card (its task's headline and outcome, at most
    # `quiet_card_chars`, no evidence: `experience/building/render.short_card`), loose evidence
    # only where it cannot be inlined (images), all within `quiet_budget_tokens`.
    relevance_coefficients: tuple[float, float, float, float, float]
    quiet_below: float
    quiet_experiences: int
    quiet_first_evidence_chars: int
    quiet_card_chars: int
    quiet_budget_tokens: int  # and at most this many tokens, loose evidence included
    # Evidence inlined under the best experience's card, and under each of the others:
    # characters, and how many evidence items are read for it.
    first_evidence_chars: int
    evidence_chars: int
    first_evidence_items: int
    evidence_items: int
    # How experiences are ordered (`ranking/strategy.py`): "fused", the weighted RRF above;
    # "learned", the LightGBM ranker trained on public tasks (`ranking/learned.py`,
    # `train/ranker/README.md`), whose calibrated P(related) is then each experience's
    # relevance (so `quiet_below` and `relevance_floor` read probabilities).
    ranking: str = "fused"

    def __post_init__(self) -> None:
        if self.ranking not in RANKINGS:
            raise ValueError(f"ranking must be one of {', '.join(RANKINGS)}, not {self.ranking!r}")
        if not 0.0 <= self.relevance_floor <= 1.0:
            raise ValueError(f"relevance_floor must be between 0 and 1, not {self.relevance_floor}")
        if not 0.0 <= self.quiet_below <= 1.0:
            raise ValueError(f"quiet_below must be between 0 and 1, not {self.quiet_below}")

    def replace(self, **changes: object) -> SearchConfig:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


# The fusion weights and k, the code-location weights, the relevance floor, the calibration
# coefficients and the quiet threshold below were chosen by cross-validation across
# repositories, then fitted on all the labelled dev tasks (django + sympy; noisy-all and
# absent memories), so the shipped values are in-sample: `python -m eval.relevance_cv` on a
# `python -m eval.replay --keep DIR` ingest; its held-out and in-sample figures are in
# eval/README.md. A refit is taken only with the past fixes measured too, since the fusion
# weights also rank memories of commits. The quiet threshold trades gold share for quiet
# (relevance_cv's `threshold_curve`).
DEFAULT_SEARCH = SearchConfig(
    candidates=200,
    lexical_weight=1.0,  # the unit the other weights are read in (not searched)
    # The query's nearest cards (task to task) weigh more than its BM25 and reference
    # matches; code locations as much as the references (chosen by eval.relevance_cv).
    dense_weight=1.5,
    refs_weight=1.0,
    location_weight=1.0,
    location_mention_weight=0.25,
    # Chosen by leave-one-repository-out cross-validation on the past-fixes dev tasks
    # (`python -m eval.past_fixes_cv --store DIR`; figures in eval/README.md): these five
    # first, then the releases ranking's weight with them, the fit on all tasks shipped
    # (in-sample). They weigh nothing in a memory without commit experiences (agent sessions).
    title_weight=6.0,
    subject_weight=6.0,
    title_prose_words=10,
    lead_weight=12.0,
    lead_ratio=1.15,
    since_weight=6.0,
    # Cormack et al.'s k for items: robust to the retrievers' incomparable scores (not searched).
    item_rrf_k=60,
    # Small k for sessions: the first places of each retriever's session ranking carry the
    # signal (chosen by eval.relevance_cv from 1 and 3).
    session_rrf_k=3,
    # Half the largest share of the best score that cuts no gold experience the fusion finds
    # within an answer's room (eval.relevance_cv). 0 keeps all that top_k and the budget allow.
    relevance_floor=0.15,
    # Logistic regression of "is gold" over the first 10 experiences of each noisy-all and
    # absent answer (eval.relevance_cv): intercept, fused lead, BM25 lead, cosine, agreement.
    relevance_coefficients=(-3.3111, 2.7242, 0.8415, 1.1823, 0.593),
    # The threshold whose absent answers carry the fewest tokens against noisy-all's on the
    # smoothed training curve (eval.relevance_cv).
    quiet_below=0.42,
    # A quiet answer names as many experiences as a loud one can hold (a reader still finds
    # what was there), but short: a short card of at most ~75 tokens for each, ~1k
    # tokens of evidence for the first (set by hand, not searched).
    quiet_experiences=24,
    quiet_first_evidence_chars=4_000,
    quiet_card_chars=300,
    # Room for all of that, and for a small memory's images after it.
    quiet_budget_tokens=8_000,
    # Enough that a reader whose window holds only the first ~8k tokens gets the best
    # experience whole (the replay's gold share of those tokens grows with it at the same
    # hit@k; eval/README.md).
    first_evidence_chars=60_000,
    evidence_chars=4_000,
    first_evidence_items=20,
    evidence_items=3,
)

# The learned ranker in place of the fusion. Its quiet threshold and relevance floor read its
# calibrated P(related), so they are the model's own: chosen by train/ranker/train.py on the
# training data's out-of-fold scores and kept in its card (`models/ranker.json`, "search").
LEARNED_SEARCH = DEFAULT_SEARCH.replace(ranking="learned", **model_card("ranker.json")["search"])

# Each ranking's recipe, by its name (`Settings.ranking`, CODEMEM_RANKING).
RECIPES = {"fused": DEFAULT_SEARCH, "learned": LEARNED_SEARCH}
assert tuple(RECIPES) == RANKINGS
