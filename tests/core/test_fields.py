"""Field-wise matches: a twin's title, a task's words, a diff's identifiers and an error line
each show in their own field, weighted by how rare they are among the candidates."""

from __future__ import annotations

import json

import pytest

from codemem.ranking.fields import FIELDS, CardFields, error_words, field_matches, words


def _card(task: str, diff: str = "", errors: tuple[str, ...] = (), read: str = "") -> CardFields:
    text = f"## Task\nFix this bug:\n{task}\n\n## Outcome\nEdited.\n\n## Also read\n{read}\n\n## Final diff\n```diff\n{diff}\n```"
    return CardFields.of(text, json.dumps({"errors": list(errors)}))


def _by_name(matches: dict[str, tuple[float, ...]], key: str) -> dict[str, float]:
    return dict(zip(FIELDS, matches[key], strict=True))


def test_words_split_identifiers_and_drop_function_and_template_words() -> None:
    assert words("The hist_kwargs is reset in Axes.hist") == {"hist_kwargs", "hist", "kwargs", "reset", "axes"}
    assert error_words("Some prose\nTypeError: unhashable type 'list'\nmore prose") == {"typeerror", "unhashable", "type", "list"}


def test_the_card_fields_come_from_their_sections_and_metadata() -> None:
    card = _card("hist() ignores range when density is set", diff="+    hist_kwargs['density'] = density",
                 errors=("ValueError: bins must increase",), read="lib/matplotlib/axes/_axes.py")
    assert card.title == {"hist", "ignores", "range", "density", "set"}  # the harness's preamble line is not the title
    assert "hist_kwargs" in card.diff and "valueerror" in card.errors and "_axes" in card.files
    assert "valueerror" not in card.task


def test_a_twin_title_matches_fully_and_a_stranger_not_at_all() -> None:
    query = "QuerySet.only() crashes after select_related() on a reverse relation\n\nDetails follow."
    cards = {"twin": _card("QuerySet.only() crashes after select_related() on a reverse relation"),
             "kin": _card("select_related() ignores the reverse relation"),
             "stranger": _card("Colour bar ticks overlap on a logarithmic axis")}
    m = field_matches(query, cards)
    assert _by_name(m, "twin")["title"] == pytest.approx(1.0)
    assert 0 < _by_name(m, "kin")["title"] < 1
    assert _by_name(m, "stranger")["title"] == 0.0


def test_rare_words_weigh_more_than_words_every_candidate_holds() -> None:
    query = "resolve_cache_key collides in the cache layer"
    common = "cache layer"
    cards = {"rare": _card(f"{common} problem", diff="-def resolve_cache_key(path):"),
             **{f"c{i}": _card(f"{common} slow {i}") for i in range(5)}}
    m = field_matches(query, cards)
    rare, other = _by_name(m, "rare"), _by_name(m, "c0")
    assert rare["diff"] > 0.5 and other["diff"] == 0.0
    assert rare["task"] == pytest.approx(other["task"])  # the same common words in both tasks
    assert rare["task"] < 0.5  # and they weigh less than the rare identifier the query names


def test_the_share_of_the_query_words_found_is_the_same_whatever_the_other_candidates() -> None:
    query = "Sparse matrix transpose loses its dtype"
    near, far = _card("Sparse matrix transpose keeps its dtype"), _card("Colour bar ticks overlap on a log axis")
    alone = {k: _by_name(field_matches(query, {k: c}), k) for k, c in (("near", near), ("far", far))}
    together = field_matches(query, {"near": near, "far": far})
    # Alone, each is the best (and only) candidate; the absolute share still tells them apart.
    assert alone["near"]["words"] == _by_name(together, "near")["words"] == pytest.approx(4 / 5)
    assert alone["far"]["words"] == _by_name(together, "far")["words"] == 0.0


def test_a_merge_matches_by_its_branch_commits_subjects() -> None:
    text = "## Task\nMerge pull request #12 from dev/branch\n\nCommits:\n- abc1234 printer: fix multiline replacement\n"
    merge = CardFields.of(text, json.dumps({"commit": "f00", "merged": [["abc1234", "printer: fix multiline replacement"]]}))
    plain = CardFields.of("## Task\nBump the crate version\n", json.dumps({"commit": "ba4"}))
    m = field_matches("Multiline replacement is wrong in the printer\n\nSteps.", {"merge": merge, "plain": plain})
    assert _by_name(m, "merge")["merged"] == pytest.approx(3 / 4)  # "wrong" is in no subject
    assert _by_name(m, "plain")["merged"] == 0.0


def test_errors_match_only_where_the_query_names_one() -> None:
    cards = {"a": _card("x", errors=("KeyError: 'tzinfo'",)), "b": _card("y")}
    named = field_matches("Serialising fails in to_iso:\nKeyError: 'tzinfo'", cards)
    assert _by_name(named, "a")["errors"] == 1.0 and _by_name(named, "b")["errors"] == 0.0
    unnamed = field_matches("Serialising is slow for tzinfo values", cards)
    assert _by_name(unnamed, "a")["errors"] == 0.0


def test_the_field_index_takes_a_sessions_new_card_in_place_of_its_old_one() -> None:
    from codemem.ranking.fields import FieldIndex

    def row(key: str, task: str) -> dict[str, object]:
        return {"session_key": key, "text": f"## Task\n{task} crashes on save", "metadata": "{}"}

    index = FieldIndex.of_cards([row("a", "Widget"), row("b", "Gadget")])
    later = index.with_cards([row("a", "Sprocket")])
    assert later.cards["a"].title == {"sprocket", "crashes", "save"} and "gadget" in later.cards["b"].title
    assert "widget" in index.cards["a"].title  # a Search reading the old index meanwhile sees it whole


def test_a_search_matches_a_card_added_after_its_memorys_fields_were_read(memory) -> None:  # type: ignore[no-untyped-def]
    from codemem.contract.types import AddRequest, Message, SearchRequest
    from codemem.ranking.recipes import DEFAULT_SEARCH
    from codemem.store.schema import key_of

    def add(sid: str, task: str) -> None:
        memory.add(AddRequest(f"{sid}:0", "u", sid, [Message("user", task), Message(
            "assistant", "Tool call Edit {\"file_path\": \"pkg/core.py\", \"old_string\": \"a\", \"new_string\": \"b\"}")]))

    add("s1", "Colour bar ticks overlap on a logarithmic axis")
    query = SearchRequest(user_id="u", query="Sparse matrix transpose loses its dtype\n\nA longer report.", top_k=5)
    memory.search(query)  # the fields are read now
    add("s2", "Sparse matrix transpose loses its dtype")
    hits = memory.search(query)
    assert hits[0].session_id == "s2"
    signals, _ = memory.signals("u", query.query, DEFAULT_SEARCH, 50)
    assert signals.fields[key_of("u", "s2")][FIELDS.index("title")] == pytest.approx(1.0)  # its twin title
