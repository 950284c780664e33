"""The configuration tree: every CODEMEM_* variable lands on one leaf, bad values are refused
with an error that names them, and the search values a deployment leaves unset are the
recipe's own."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from codemem.config import VARIABLES, Maintenance, SettingError, Settings, agent_defaults, env_names
from codemem.experience.building.builder import build_experience
from codemem.experience.building.render import CARD_CHARS, render_card, render_conversation
from codemem.git.cards import commit_to_experience
from codemem.git.staleness import Staleness
from codemem.ranking.learned import model_card
from codemem.ranking.recipes import DEFAULT_SEARCH
from codemem.ranking.search_config import AnswerShape, Calibration, Retrieval
from codemem.ranking.shape import CHARS_PER_TOKEN

# A value for each variable (as the environment holds it) and what it sets.
SAMPLES: dict[str, tuple[str, object]] = {
    "CODEMEM_DATA_DIR": ("/srv/memory", "/srv/memory"),
    "CODEMEM_HOST": ("0.0.0.0", "0.0.0.0"),
    "CODEMEM_PORT": ("9001", 9001),
    "CODEMEM_WORKERS": ("3", 3),
    "CODEMEM_API_KEY": ("s3cret", "s3cret"),
    "CODEMEM_ALLOW_OPEN": ("true", True),
    "CODEMEM_TLS_CERT": ("/etc/codemem/cert.pem", "/etc/codemem/cert.pem"),
    "CODEMEM_TLS_KEY": ("/etc/codemem/key.pem", "/etc/codemem/key.pem"),
    "CODEMEM_ADD_THREADS": ("4", 4),
    "CODEMEM_SEARCH_THREADS": ("0", 0),
    "CODEMEM_LOG_LEVEL": ("debug", "debug"),
    "CODEMEM_LOG_FORMAT": ("text", "text"),
    "CODEMEM_EMBEDDER": ("other", "other"),
    "CODEMEM_EMBED_THREADS": ("2", 2),
    "CODEMEM_EMBED_MAX_TOKENS": ("128", 128),
    "CODEMEM_EMBED_STEPS": ("yes", True),
    "CODEMEM_EMBED_MESSAGES": ("1", True),
    "CODEMEM_EMBED_CODE_WINDOW_TOKENS": ("64", 64),
    "CODEMEM_QUERY_MAX_TOKENS": ("32", 32),
    "CODEMEM_WRITE_BATCH_ROWS": ("100", 100),
    "CODEMEM_REFRESH_QUIET_S": ("0.5", 0.5),
    "CODEMEM_INDEX_CACHE_MB": ("32", 32),
    "CODEMEM_METADATA_CACHE_MB": ("16", 16),
    "CODEMEM_SESSION_CACHE_S": ("5", 5.0),
    "CODEMEM_SESSION_CACHE_MB": ("8", 8),
    "CODEMEM_USER_CACHE_MB": ("100", 100),
    "CODEMEM_COMPACT_INTERVAL_S": ("0", 0.0),
    "CODEMEM_COMPACT_MIN_WRITES": ("7", 7),
    "CODEMEM_COMPACT_MAX_SMALL_FRAGMENTS": ("3", 3),
    "CODEMEM_COMPACT_MAX_UNINDEXED_ROWS": ("90", 90),
    "CODEMEM_MAX_BODY_BYTES": ("1024", 1024),
    "CODEMEM_MAX_IMAGE_BYTES": ("2048", 2048),
    "CODEMEM_MAX_INFLIGHT_ADDS": ("0", 0),
    "CODEMEM_MAX_INFLIGHT_SEARCHES": ("5", 5),
    "CODEMEM_MAX_ADD_BYTES_INFLIGHT": ("1048576", 1048576),
    "CODEMEM_CANDIDATES": ("50", 50),
    "CODEMEM_RELEVANCE_FLOOR": ("0", 0.0),
    "CODEMEM_QUIET_BELOW": ("0.9", 0.9),
    "CODEMEM_EMPTY_WHEN_UNRELATED": ("off", False),
    "CODEMEM_SEARCH_TOKEN_BUDGET": ("1000", 1000),
    "CODEMEM_MAX_ITEM_CHARS": ("500", 500),
}
# Where the search values a deployment sets land in the configuration a Search reads.
IN_SEARCH = {
    "CODEMEM_CANDIDATES": "retrieval.candidates",
    "CODEMEM_RELEVANCE_FLOOR": "calibration.relevance_floor",
    "CODEMEM_QUIET_BELOW": "calibration.quiet_below",
    "CODEMEM_EMPTY_WHEN_UNRELATED": "calibration.empty_when_unrelated",
    "CODEMEM_SEARCH_TOKEN_BUDGET": "answer.budget_tokens",
    "CODEMEM_MAX_ITEM_CHARS": "answer.max_item_chars",
}


def test_every_variable_has_a_sample_here() -> None:
    assert sorted(SAMPLES) == sorted(env_names())


@pytest.mark.parametrize("name", sorted(VARIABLES))
def test_each_variable_sets_its_leaf_and_nothing_else(name: str) -> None:
    raw, expected = SAMPLES[name]
    base = Settings.from_env({}, overrides={"storage.data_dir": "/d"})
    assert base.value_at(VARIABLES[name].path) != expected
    settings = Settings.from_env({name: raw}, overrides={} if name == "CODEMEM_DATA_DIR" else {"storage.data_dir": "/d"})
    assert settings.value_at(VARIABLES[name].path) == expected
    assert settings.replace({VARIABLES[name].path: base.value_at(VARIABLES[name].path)}) == base
    if name in IN_SEARCH:
        assert settings.search.config().value_at(IN_SEARCH[name]) == expected


def test_settings_go_to_workers_and_come_back_whole() -> None:
    settings = Settings.from_env({name: raw for name, (raw, _) in SAMPLES.items()})
    assert Settings.from_env(settings.to_env()) == settings
    defaults = Settings.from_env({})
    assert Settings.from_env(defaults.to_env()) == defaults


def test_an_empty_variable_is_unset() -> None:
    assert Settings.from_env({"CODEMEM_PORT": ""}).server.port == Settings().server.port


@pytest.mark.parametrize("name, raw, says", [
    ("CODEMEM_PORT", "eighty", "CODEMEM_PORT='eighty': must be a whole number"),
    ("CODEMEM_REFRESH_QUIET_S", "soon", "CODEMEM_REFRESH_QUIET_S='soon': must be a number"),
    ("CODEMEM_EMBED_STEPS", "maybe", "CODEMEM_EMBED_STEPS='maybe': must be a bool: true or false"),
    ("CODEMEM_PORT", "70000", "CODEMEM_PORT=70000: must be between 0 and 65535"),
    ("CODEMEM_WORKERS", "0", "CODEMEM_WORKERS=0: must be at least 1"),
    ("CODEMEM_USER_CACHE_MB", "0", "CODEMEM_USER_CACHE_MB=0: must be at least 1"),
    ("CODEMEM_LOG_FORMAT", "xml", "CODEMEM_LOG_FORMAT='xml': must be one of auto, json, text"),
    ("CODEMEM_RELEVANCE_FLOOR", "1.5", "CODEMEM_RELEVANCE_FLOOR=1.5: must be between 0 and 1"),
    ("CODEMEM_QUIET_BELOW", "-1", "CODEMEM_QUIET_BELOW=-1.0: must be between 0 and 1"),
    ("CODEMEM_CANDIDATES", "0", "CODEMEM_CANDIDATES=0: must be at least 1"),
    ("CODEMEM_COMPACT_MIN_WRITES", "-2", "CODEMEM_COMPACT_MIN_WRITES=-2: must be at least 0"),
    ("CODEMEM_MAX_ITEM_CHARS", "-1", "CODEMEM_MAX_ITEM_CHARS=-1: must be at least 0"),
])
def test_a_bad_value_is_refused_naming_its_variable(name: str, raw: str, says: str) -> None:
    with pytest.raises(SettingError, match=says) as refused:
        Settings.from_env({name: raw})
    assert refused.value.source == name


def test_a_path_that_is_not_in_the_tree_is_refused_naming_what_is() -> None:
    with pytest.raises(ValueError, match="no setting 'calibration.floor'; calibration holds quiet_below, relevance_floor"):
        DEFAULT_SEARCH.replace({"calibration.floor": 1.0})
    with pytest.raises(ValueError, match="'calibration.quiet_below' is a value, not a part"):
        DEFAULT_SEARCH.replace({"calibration.quiet_below.x": 1.0})
    with pytest.raises(ValueError, match="no setting 'compact_interval_s'"):
        Settings().replace({"compact_interval_s": 0})
    with pytest.raises(ValueError, match="no setting 'server.nope'"):
        Settings().value_at("server.nope")


def test_each_part_checks_its_own_values() -> None:
    calibration = DEFAULT_SEARCH.calibration
    with pytest.raises(ValueError, match="relevance_floor must be between 0 and 1"):
        dataclasses.replace(calibration, relevance_floor=1.5)
    with pytest.raises(ValueError, match="quiet_below must be between 0 and 1"):
        Calibration(quiet_below=-0.1, relevance_floor=0.0)
    with pytest.raises(ValueError, match="Retrieval.candidates must be at least 1"):
        Retrieval(candidates=0)
    with pytest.raises(ValueError, match="AnswerShape.short_card_chars must be at least 0"):
        dataclasses.replace(DEFAULT_SEARCH.answer, short_card_chars=-1)
    with pytest.raises(ValueError, match="Maintenance.interval_s must be at least 0"):
        Maintenance(interval_s=-1.0)
    assert isinstance(calibration, Calibration) and isinstance(DEFAULT_SEARCH.answer, AnswerShape)


def test_unset_search_values_are_the_recipes_own() -> None:
    assert Settings().search.config() == DEFAULT_SEARCH
    # The quiet threshold and the relevance floor are the relevance model's own.
    card = model_card()["search"]
    assert DEFAULT_SEARCH.calibration == Calibration(quiet_below=card["quiet_below"],
                                                     relevance_floor=card["relevance_floor"])
    # The variables a deployment leaves unset are not handed to workers either.
    assert not {"CODEMEM_CANDIDATES", "CODEMEM_SEARCH_TOKEN_BUDGET"} & set(Settings().to_env())


def test_the_agent_commands_only_shrink_the_answer() -> None:
    agent = Settings.from_env({}, defaults=agent_defaults())
    assert agent.search.config() == DEFAULT_SEARCH.replace({"answer.budget_tokens": agent.search.token_budget})
    assert agent.search.config().answer.budget_tokens < DEFAULT_SEARCH.answer.budget_tokens
    assert Settings.from_env({"CODEMEM_SEARCH_TOKEN_BUDGET": "20000"}, defaults=agent_defaults()).search.token_budget == 20_000


def test_the_card_size_is_every_card_builders_default() -> None:
    for fn, name in ((render_card, "max_chars"), (render_conversation, "max_chars"), (build_experience, "max_chars"),
                     (commit_to_experience, "max_card_chars"), (Staleness.__init__, "max_card_chars")):
        assert inspect.signature(fn).parameters[name].default == CARD_CHARS, fn


def test_a_fitted_answer_leaves_room_for_one_card_beside_its_evidence() -> None:
    shape = DEFAULT_SEARCH.answer
    assert shape.fitted() == shape.fitted(None) == shape.fitted().fitted()
    small = shape.fitted(1_500)
    room = 1_500 * CHARS_PER_TOKEN - CARD_CHARS
    assert small.budget_tokens == 1_500
    assert small.first_evidence_chars == min(shape.first_evidence_chars, room)
    assert small.quiet_first_evidence_chars == min(shape.quiet_first_evidence_chars, room)
    # A request never enlarges the answer; with no budget of its own it takes the request's.
    assert shape.fitted(10 * shape.budget_tokens).budget_tokens == shape.budget_tokens
    unbounded = dataclasses.replace(shape, budget_tokens=0)
    assert unbounded.fitted() == unbounded and unbounded.fitted(900).budget_tokens == 900
