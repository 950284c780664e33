"""How a Search orders experiences: one function per ranking, chosen by `SearchConfig.ranking`.

"fused" is the weighted reciprocal-rank fusion of the retrievers (`relevance.fuse`);
"learned" is the LightGBM ranker over the same signals and the candidates' card fields
(`learned.py`), loaded on first use.
"""

from __future__ import annotations

from collections.abc import Callable

from codemem.ranking.relevance import SessionSignals, fuse, learned_applies
from codemem.ranking.search_config import RANKINGS, SearchConfig
from codemem.ranking.types import Ranking


def fused(signals: SessionSignals, config: SearchConfig, explain: int) -> Ranking:
    """The fusion's order; its signals are listed by `relevance.explain`, not here."""
    return Ranking(fuse(signals, config), {})


def learned(signals: SessionSignals, config: SearchConfig, explain: int) -> Ranking:
    """The learned ranker's order; in a memory of commits the fusion's, whose title, subject
    and release rankings the model has no features for (it was trained on agent sessions)."""
    if not learned_applies(signals, config):
        return fused(signals, config, explain)
    from codemem.ranking.learned import packaged  # lightgbm is imported only when asked for

    return packaged().rank(signals, config, explain)


STRATEGIES: dict[str, Callable[[SessionSignals, SearchConfig, int], Ranking]] = {
    "fused": fused,
    "learned": learned,
}
assert tuple(STRATEGIES) == RANKINGS


def rank_sessions(signals: SessionSignals, config: SearchConfig, explain: int = 0) -> Ranking:
    """Each candidate session's score (higher first), by `config.ranking`, and what carried
    the first `explain` scores where a model ranked them."""
    try:
        strategy = STRATEGIES[config.ranking]
    except KeyError:
        raise ValueError(f"unknown ranking {config.ranking!r}; one of {', '.join(STRATEGIES)}") from None
    return strategy(signals, config, explain)
