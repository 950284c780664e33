"""Code-location evidence: experiences that edited the code a task names rank first."""

from __future__ import annotations

import json

import pytest

from codemem.contract.types import AddRequest, Message, SearchRequest
from codemem.memory import Memory
from codemem.ranking.card_indexes import CardIndexes
from codemem.ranking.locations import LocationIndex, ticket_refs
from codemem.ranking.query import parse_query
from codemem.store.schema import key_of


def _card(key: str, refs: list[str], edited_files: list[str] = (), edited_symbols: list[str] = ()) -> dict:  # type: ignore[assignment]
    meta = {"edited_files": list(edited_files), "edited_symbols": list(edited_symbols)}
    return {"session_key": key, "refs": " ".join(refs), "metadata": json.dumps(meta)}


def _index() -> LocationIndex:
    common = "django/db/models/query.py"
    cards = [
        # Edited the file and the rare helper the task names.
        _card("fixer", [common, "_batched_insert"], [common], ["QuerySet._batched_insert"]),
        # Mentions the same keys in its task, edited something else.
        _card("mentions", [common, "_batched_insert", "django/forms/fields.py"], ["django/forms/fields.py"]),
        # Only mention the common file.
        *(_card(f"other{i}", [common, f"helper_{i}"], [f"pkg/m{i}.py"]) for i in range(8)),
    ]
    return LocationIndex.of_cards(cards)


def test_an_experience_that_edited_the_named_code_outranks_one_that_mentions_it() -> None:
    index = _index()
    query = parse_query("bulk_create fails: _batched_insert in django/db/models/query.py passes on_conflict")
    scores = index.scores(query.refs)
    assert max(scores, key=lambda k: scores[k][0]) == "fixer"  # the most edited mass
    assert scores["fixer"][0] > scores["mentions"][0] == 0 and scores["mentions"][1] > scores["other0"][1] > 0
    assert "unrelated" not in scores


def test_the_share_of_the_query_references_held_does_not_depend_on_the_memory() -> None:
    index = _index()
    keys = ["django/db/models/query.py", "_batched_insert"]
    held = index.held(keys, ["fixer", "mentions", "other0", "not-there"])
    assert held == {"fixer": 1.0, "mentions": 1.0, "other0": 0.5}
    alone = LocationIndex.of_cards([_card("fixer", ["django/db/models/query.py", "_batched_insert"], [])])
    assert alone.held(keys, ["fixer"]) == {"fixer": 1.0} and alone.held(["pkg/other.py"], ["fixer"]) == {"fixer": 0.0}
    assert index.held([], ["fixer"]) == {}


def test_a_rare_key_counts_more_than_one_every_experience_shares() -> None:
    index = _index()
    assert index.idf("_batched_insert") > index.idf("django/db/models/query.py") > 0
    assert index.idf("never_seen") == 0.0
    edited, mentioned = index.scores(["django/db/models/query.py"])["fixer"]
    assert edited > 0 and mentioned == 0
    assert index.scores(["django/db/models/query.py"])["other0"] == (0.0, edited)


def test_edited_keys_use_the_same_normalisation_as_query_references() -> None:
    """A card's edited paths and symbols become lookup keys as a task's references do."""
    index = LocationIndex.of_cards([_card("s", [], ["src/pkg/module.py"], ["Klass.method"])])
    keys = set(parse_query("error in src/pkg/module.py, Klass.method()").refs)
    assert keys & index.experiences["s"].edited


def test_ticket_pr_and_commit_references_are_found() -> None:
    text = ("Regression of #30123, see https://code.djangoproject.com/ticket/29876 and "
            "https://github.com/sympy/sympy/pull/24567; introduced by 3f2a9c1d. Colour &#123; and v1.2.3 are not.")
    refs = ticket_refs(text)
    assert refs[:3] == ["#30123", "#29876", "#24567"]
    assert "3f2a9c1d" in refs
    assert "#123" not in refs


class _Cards:
    """A user's cards in a store, counting the reads of them."""

    def __init__(self, *cards: dict) -> None:
        self.cards = list(cards)
        self.reads = 0

    def __call__(self) -> list[dict]:
        self.reads += 1
        return list(self.cards)


def test_an_index_is_read_once_and_kept_current_by_the_cards_written() -> None:
    a, b = _Cards(_card("a1", ["x_y"])), _Cards(_card("b1", ["x_y"]))
    cache = CardIndexes(LocationIndex, max_age_s=3600)
    assert set(cache.get("A", a).scores(["x_y"])) == {"a1"}
    cache.get("B", b)
    # B writes a card: A's index is not read again, B's gains the card without a read.
    cache.put("B", [_card("b2", ["x_y", "only_b2"])])
    assert set(cache.get("A", a).scores(["x_y"])) == {"a1"}
    assert set(cache.get("B", b).scores(["only_b2"])) == {"b2"}
    assert set(cache.get("B", b).scores(["x_y"])) == {"b1", "b2"}
    assert (a.reads, b.reads) == (1, 1)


def test_a_rewritten_card_replaces_its_keys_and_frequencies() -> None:
    cache = CardIndexes(LocationIndex, max_age_s=3600)
    cards = _Cards(_card("s", ["old_key", "shared_key"]), _card("t", ["shared_key"]))
    cache.get("u", cards)
    cache.put("u", [_card("s", ["new_key", "shared_key"])])
    index = cache.get("u", cards)
    assert index.scores(["old_key"]) == {}
    assert set(index.scores(["new_key"])) == {"s"}
    assert index.df["shared_key"] == 2 and "old_key" not in index.df
    assert index.df == LocationIndex.of_cards([_card("s", ["new_key", "shared_key"]), _card("t", ["shared_key"])]).df


def test_a_card_written_while_the_cards_are_read_is_not_lost() -> None:
    cache = CardIndexes(LocationIndex, max_age_s=3600)

    def read_before_the_commit() -> list[dict]:
        # The write commits and is reported while this read runs, after it looked.
        cache.put("u", [_card("new", ["key_new"])])
        return [_card("old", ["key_old"])]

    assert set(cache.get("u", read_before_the_commit).scores(["key_new", "key_old"])) == {"new", "old"}
    assert set(cache.get("u", _Cards()).scores(["key_new"])) == {"new"}  # kept, not read again


def test_indexes_are_read_again_when_old_or_forgotten() -> None:
    now = [0.0]
    cards = _Cards(_card("a", ["x_y"]))
    cache = CardIndexes(LocationIndex, max_age_s=1.0, clock=lambda: now[0])
    cache.get("u", cards)
    now[0] = 0.5
    cache.get("u", cards)
    assert cards.reads == 1
    now[0] = 1.5  # another process may have written cards meanwhile
    cache.get("u", cards)
    assert cards.reads == 2
    cache.forget("u")  # rows were deleted
    cards.cards = []
    assert cache.get("u", cards).scores(["x_y"]) == {}
    assert cards.reads == 3


def test_an_index_read_at_the_store_s_version_stays_current_until_the_version_moves() -> None:
    now = [0.0]
    cards = _Cards(_card("a", ["x_y"]))
    cache = CardIndexes(LocationIndex, max_age_s=1.0, clock=lambda: now[0])
    cache.get("u", cards, version=7)
    now[0] = 100.0  # old, but nothing was written anywhere since: no read
    cache.get("u", cards, version=7)
    assert cards.reads == 1
    cache.get("u", cards, version=8)  # something was written, and the index is old: read again
    assert cards.reads == 2
    now[0] = 100.5
    cache.get("u", cards, version=9)  # young: this process's own cards were put in already
    assert cards.reads == 2


def test_a_users_index_is_not_read_again_when_another_user_writes(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[str] = []
    real = memory.store.user_rows

    def counted(user_key: str, kind: str, columns: list[str]) -> list[dict]:
        reads.append(user_key)
        return real(user_key, kind, columns)

    monkeypatch.setattr(memory.store, "user_rows", counted)
    monkeypatch.setattr(memory.indexes, "locations", CardIndexes(LocationIndex, max_age_s=3600))  # no re-read for age

    def add(user: str, session: str, path: str) -> None:
        msgs = [Message("user", f"Fix the crash in {path}"), Message("assistant", f"Edited {path}: fixed it")]
        memory.add(AddRequest(f"{user}-{session}", user, session, msgs))

    def location(user: str, path: str) -> dict[str, float]:
        hits = memory.search(SearchRequest(user_id=user, query=f"crash in {path}", top_k=5))
        return {h.session_id: h.metadata["signals"]["location"] for h in hits if "signals" in h.metadata}

    add("A", "a1", "pkg/alpha_mod.py")
    assert location("A", "pkg/alpha_mod.py")["a1"] > 0
    add("B", "b1", "pkg/alpha_mod.py")
    add("A", "a2", "pkg/beta_mod.py")  # A's own write updates its index in place
    assert location("A", "pkg/beta_mod.py")["a2"] > 0
    assert reads == [key_of("A")]


def test_the_indexes_held_stay_within_their_bytes_least_recently_searched_out_first() -> None:
    users = {u: _Cards(*(_card(f"{u}{i}", [f"key_{u}{i}"]) for i in range(4))) for u in "abc"}
    one = sum(len(v) for card in users["a"].cards for v in card.values() if isinstance(v, str))
    cache = CardIndexes(LocationIndex, max_bytes=2 * one, max_age_s=3600)
    cache.get("a", users["a"])
    cache.get("b", users["b"])
    assert cache.held_bytes == 2 * one
    cache.get("a", users["a"])  # a searched again: b is now the least recent
    cache.get("c", users["c"])  # past the bound: b goes
    assert cache.held_bytes == 2 * one
    cache.get("a", users["a"])
    cache.get("b", users["b"])
    assert [cards.reads for cards in users.values()] == [1, 2, 1]
    # A session's card rewritten again and again counts once.
    for _ in range(5):
        cache.put("b", [_card("b0", ["key_b0"])])
    assert cache.held_bytes == 2 * one
    cache.forget()
    assert cache.held_bytes == 0
