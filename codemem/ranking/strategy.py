"""How a Search orders experiences: one function per ranking, chosen by `SearchConfig.ranking`.

"fused" is the weighted reciprocal-rank fusion of the retrievers (`relevance.fuse`);
"learned" is the LightGBM ranker over the same signals (`learned.py`), loaded on first use.
"""

from __future__ import annotations

from collections.abc import Callable

from codemem.ranking.recipes import RANKINGS, SearchConfig
from codemem.ranking.relevance import SessionSignals, fuse


def learned(signals: SessionSignals, config: SearchConfig) -> dict[str, float]:
    from codemem.ranking.learned import packaged  # lightgbm is imported only when asked for

    return packaged().scores(signals, config)


STRATEGIES: dict[str, Callable[[SessionSignals, SearchConfig], dict[str, float]]] = {
    "fused": fuse,
    "learned": learned,
}
assert tuple(STRATEGIES) == RANKINGS


def rank_sessions(signals: SessionSignals, config: SearchConfig) -> dict[str, float]:
    """Each candidate session's score (higher first), by `config.ranking`."""
    try:
        strategy = STRATEGIES[config.ranking]
    except KeyError:
        raise ValueError(f"unknown ranking {config.ranking!r}; one of {', '.join(STRATEGIES)}") from None
    return strategy(signals, config)
