"""The store's reads: one user's rows only, filtered before ranking; this process's writes
seen at once (the reads run on the table handle the writes go through), another's at the
next read, and no version check when nobody else committed."""

from pathlib import Path

import numpy as np
import pytest

from codemem.store.lance import Store
from codemem.store.schema import Row

A, B = "a" * 32, "b" * 32


def _row(user_key: str, i: int, text: str, vector: list[float]) -> Row:
    v = np.asarray(vector, dtype=np.float32)
    return Row(id=f"m_{user_key[0]}{i}", user_key=user_key, user_id=user_key[0], session_key=user_key[0] * 32,
               session_id="s", request_key=f"r{user_key[0]}{i}", kind="message", position=i, role="user",
               text=text, refs=f"pkg/mod_{i}.py", content="", metadata="{}", created_at=i, timestamp=None,
               vector=v / np.linalg.norm(v))


def test_reads_filter_by_user_before_ranking_and_see_own_writes_at_once(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "data"), "test-model", 4)
    query = np.asarray([1, 0, 0, 0], dtype=np.float32)
    # B's 20 rows rank above A's on both retrievers: a filter applied after a limit of 3
    # would leave A with nothing.
    store.append([_row(B, i, "flaky migration test fails again", [1, 0.01 * i, 0, 0]) for i in range(20)])
    store.append([_row(A, 0, "flaky migration", [0, 1, 0, 0]), _row(A, 1, "the migration", [0.1, 1, 0, 0])])

    lexical = store.fts("flaky migration test", A, 3)
    assert [c.id for c in lexical] == ["m_a0", "m_a1"]  # BM25 order: both terms, then one
    assert lexical[0].score > lexical[1].score > 0
    dense = store.nearest(query, A, 3)
    assert [c.id for c in dense] == ["m_a1", "m_a0"]  # cosine order
    assert dense[0].score > dense[1].score
    assert [c.id for c in store.fts("pkg/mod_1.py", A, 3, column="refs")] == ["m_a1"]
    assert {r["id"] for r in store.rows(f"user_key = '{A}'", columns=["id"])} == {"m_a0", "m_a1"}
    assert store.exists(f"user_key = '{A}' AND request_key = 'ra1'")
    assert not store.exists(f"user_key = '{A}' AND request_key = 'rb1'")
    assert [c.fields["text"] for c in store.by_ids(["m_a0", "m_b3"])] in (
        ["flaky migration", "flaky migration test fails again"], ["flaky migration test fails again", "flaky migration"])


def test_a_commit_by_another_process_is_read_at_once_and_none_costs_a_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Two handles on one data directory, as two workers: each counts its commits in the
    # shared lock file, and the other's next read checks the latest version out.
    mine, theirs = Store(str(tmp_path / "data"), "test-model", 4), Store(str(tmp_path / "data"), "test-model", 4)
    checkouts = []
    original = mine.table.checkout_latest
    monkeypatch.setattr(mine.table, "checkout_latest", lambda: (checkouts.append(1), original())[1])

    mine.append([_row(A, 0, "flaky migration", [1, 0, 0, 0])])
    assert mine.count() == 1 and checkouts == []  # its own commit: current without a checkout
    theirs.append([_row(B, 0, "flaky migration", [0, 1, 0, 0])])
    assert [c.id for c in mine.fts("flaky migration", B, 3)] == ["m_b0"]  # the next read sees it
    assert checkouts == [1]
    assert mine.count() == 2 and checkouts == [1]  # nothing new since: no second checkout
    theirs.delete_ids(["m_b0"])
    assert not mine.exists(f"user_key = '{B}'")
    assert mine.version() == theirs.version()


def test_rows_tied_at_a_retrievers_cut_are_chosen_and_ordered_by_id(tmp_path: Path) -> None:
    # The same reply stored 30 times, in three fragments written highest ids first: a top-5
    # taken as LanceDB scans would keep whichever tied rows it met first, in any order, and
    # one query could answer differently from one process to the next.
    store = Store(str(tmp_path / "data"), "test-model", 4)
    for part in (range(20, 30), range(10, 20), range(0, 10)):
        store.append([_row(A, i, "all tests pass", [1, 0, 0, 0]) for i in reversed(part)])
    store.append([_row(A, 99, "the tests pass after the fix", [1, 1, 0, 0])])
    ids = sorted(f"m_a{i}" for i in range(30))

    for _ in range(3):
        assert [c.id for c in store.fts("all tests pass", A, 5)] == ids[:5]
        assert [c.id for c in store.nearest(np.asarray([1, 0, 0, 0], dtype=np.float32), A, 5)] == ids[:5]
    # A tie group longer than the rows first fetched past the cut is read to its end.
    assert [c.id for c in store.fts("all tests pass", A, 29)] == ids[:29]
