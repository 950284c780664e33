"""How a Search orders experiences: one function per ranking, chosen by `SearchConfig.ranking`.

"fused" is the weighted reciprocal-rank fusion of the retrievers (`relevance.fuse`);
"learned" is the LightGBM ranker over the same signals (`learned.py`), loaded on first use.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from codemem.ranking.recipes import RANKINGS, SearchConfig
from codemem.ranking.relevance import SessionSignals, fuse, learned_applies


def learned(signals: SessionSignals, config: SearchConfig) -> dict[str, float]:
    """The learned ranker's order; in a memory of commits the fusion's, whose title, subject
    and release rankings the model has no features for (it was trained on agent sessions)."""
    if not learned_applies(signals, config):
        return fuse(signals, config)
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


def reasons(signals: SessionSignals, config: SearchConfig, keys: Sequence[str]) -> dict[str, dict[str, float]]:
    """Per session of `keys`, what carried its score where a model ranked it (feature ->
    contribution); nothing for the fusion, whose signals `relevance.explain` lists."""
    if not learned_applies(signals, config):
        return {}
    from codemem.ranking.learned import packaged

    return packaged().reasons(signals, config, keys)
