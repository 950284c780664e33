"""Sessions become experiences in the store; transcripts and git history import through Add."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import git
import numpy as np
import pytest

from cli.main import main
from codemem.config import Settings
from codemem.contract.types import AddRequest, SearchRequest
from codemem.encoders import ShippedEmbedder
from codemem.importers.claude_code import load_claude_code_jsonl
from codemem.importers.git import ingest_git
from codemem.importers.transcripts import ingest_transcripts, transcript_requests
from codemem.memory import Memory
from codemem.store.schema import CODE_WINDOW, key_of
from tests.conftest import needs_swe_lite as needs_data


@pytest.fixture(scope="module")
def transcript_file(tmp_path_factory: pytest.TempPathFactory, swe_lite_tar: Path) -> Path:
    """One real Claude Code transcript, extracted from the shared archive to a temp dir."""
    out = tmp_path_factory.mktemp("traj")
    with tarfile.open(swe_lite_tar) as tar:
        member = next(m for m in tar if m.name.endswith("02288eb6.jsonl"))  # django__django-12915
        path = out / "02288eb6.jsonl"
        path.write_bytes(tar.extractfile(member).read())  # type: ignore[union-attr]
    return path


def _cards(memory: Memory, user_id: str) -> list[dict]:
    from codemem.store.schema import key_of

    return memory.store.rows(f"user_key = '{key_of(user_id)}' AND kind = 'card'")


@needs_data
@pytest.mark.parametrize("chunk", [7, 200])
def test_a_session_in_any_chunk_size_yields_one_card(memory: Memory, transcript_file: Path, chunk: int) -> None:
    transcript = load_claude_code_jsonl(transcript_file)
    for req in transcript_requests("t", transcript, "dev", chunk):
        memory.add(req)
    cards = _cards(memory, "dev")
    assert len(cards) == 1
    assert "django/contrib/staticfiles/handlers.py" in cards[0]["text"]
    assert len(cards[0]["text"]) <= 4000


@needs_data
def test_card_is_the_same_whatever_the_chunking(tmp_path: Path, embedder: ShippedEmbedder, transcript_file: Path) -> None:
    transcript = load_claude_code_jsonl(transcript_file)
    texts = []
    for chunk in (5, 1000):
        m = Memory(Settings().replace({"storage.data_dir": str(tmp_path / f"d{chunk}"), "maintenance.interval_s": 0}), embedder=embedder)
        for req in transcript_requests("t", transcript, "dev", chunk):
            m.add(req)
        steps = m.store.rows(f"user_key = '{key_of('dev')}' AND kind = 'step'", columns=["id", "text", "refs", "position"])
        texts.append((_cards(m, "dev")[0]["text"], sorted((s["id"], s["text"], s["refs"], s["position"]) for s in steps)))
        m.close()
    # Chunk by chunk, a rebuild rewrites only the steps that changed: the same steps result.
    assert texts[0] == texts[1]


@needs_data
def test_a_rebuild_rewrites_only_the_steps_that_changed(memory: Memory, transcript_file: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    requests = transcript_requests("t", load_claude_code_jsonl(transcript_file), "dev", 5)
    for req in requests[:-1]:
        memory.add(req)
    written = []
    real_write = memory.writer.write
    monkeypatch.setattr(memory.writer, "write", lambda op: (written.append(op), real_write(op)))
    memory.add(requests[-1])
    steps = memory.store.rows(f"user_key = '{key_of('dev')}' AND kind = 'step'", columns=["id"])
    rewritten = [r for op in written for r in op.rows if r.kind == "step"]
    assert len(steps) > 2 and len(rewritten) < len(steps) / 2


@needs_data
def test_search_lists_the_card_first_with_its_evidence(memory: Memory, transcript_file: Path) -> None:
    transcript = load_claude_code_jsonl(transcript_file)
    for req in transcript_requests("t", transcript, "dev", 40):
        memory.add(req)
    memory.add(AddRequest("other", "dev", "other-session", [
        __import__("codemem.contract.types", fromlist=["Message"]).Message("user", "Please update the sympy printing docs"),
    ]))
    # No floor: the layout of an answer with a second, weakly related experience.
    hits = memory.search(SearchRequest(user_id="dev", query="ASGIStaticFilesHandler is missing get_response_async", top_k=10),
                         memory.search_config.replace({"calibration.relevance_floor": 0.0}))
    assert hits[0].metadata["kind"] == "card"
    assert hits[0].session_id == transcript.session_id
    # One item per experience: the card with its strongest evidence inlined.
    assert "Evidence from this session:" in str(hits[0].content) and hits[0].metadata["evidence"]
    # The next experience comes second, its card alone; nothing loose follows.
    assert hits[1].metadata["kind"] == "card" and hits[1].session_id == "other-session"
    assert not hits[1].metadata["evidence"] and len(hits) == 2
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


@needs_data
def test_ingest_transcripts_twice_adds_nothing_the_second_time(memory: Memory, transcript_file: Path) -> None:
    first = ingest_transcripts(memory, [str(transcript_file)], "dev", progress=False)
    assert first.sources == 1 and first.added > 0 and first.unchanged == 0
    count = memory.store.count()
    second = ingest_transcripts(memory, [str(transcript_file)], "dev", progress=False)
    assert second.added == 0 and second.unchanged == 1
    assert memory.store.count() == count


def test_ingest_transcripts_counts_lines_that_do_not_parse(memory: Memory, tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_text(
        '{"type": "user", "sessionId": "s-broken", "message": {"role": "user", "content": "Fix the flaky test in tests/test_io.py"}, "timestamp": "2025-01-01T00:00:00Z"}\n'
        '{"type": "assistant", "message": {"role": "assist\n'
        "not json at all\n"
    )
    report = ingest_transcripts(memory, [str(path)], "dev", progress=False)
    assert report.skipped_lines == 2
    assert report.skipped_where == [f"{path}:2", f"{path}:3"]  # named by file and line
    assert report.added == 1
    assert memory.compactor.runs == 1  # compacted once at the end, as after ingest_git
    assert memory.store.stats()["unindexed_rows"] == 0


def test_ingest_missing_path_is_a_clear_cli_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["ingest-transcripts", "--data-dir", str(tmp_path / "d"), "--user-id", "u", str(tmp_path / "nope.jsonl")])
    assert code == 2
    assert "no such file or directory" in capsys.readouterr().err


def _repo(path: Path) -> git.Repo:
    repo = git.Repo.init(path)
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "Dev")
        cw.set_value("user", "email", "dev@example.com")
    (path / "calc.py").write_text("def divide(a, b):\n    return a / b\n\n\ndef add(a, b):\n    return a + b\n")
    repo.index.add(["calc.py"])
    repo.index.commit("Add calculator")
    (path / "calc.py").write_text(
        "def divide(a, b):\n    if b == 0:\n        raise ValueError('division by zero')\n    return a / b\n\n\ndef add(a, b):\n    return a + b\n"
    )
    repo.index.add(["calc.py"])
    repo.index.commit("Fix ZeroDivisionError in divide when b is 0")
    (path / "README").write_text("docs\n")
    repo.index.add(["README"])
    repo.index.commit("Write the README")
    return repo


def test_ingest_git_makes_one_experience_per_commit_and_finds_the_fix(memory: Memory, tmp_path: Path) -> None:
    _repo(tmp_path / "repo")
    report = ingest_git(memory, str(tmp_path / "repo"), "dev", progress=False)
    assert (report.sources, report.added) == (3, 3)
    assert len(_cards(memory, "dev")) == 3
    hits = memory.search(SearchRequest(user_id="dev", query="ZeroDivisionError when dividing by zero", top_k=5))
    assert hits[0].metadata["kind"] == "card"
    assert "Fix ZeroDivisionError" in str(hits[0].content)
    assert "divide" in hits[0].metadata["edited_symbols"]
    again = ingest_git(memory, str(tmp_path / "repo"), "dev", progress=False)
    assert again.added == 0 and again.unchanged == 3


def test_ingest_git_embeds_cards_in_the_converting_process_as_this_one_would(
        memory: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A long history is converted and its cards embedded in a second process (here a short
    one), but for one chunk in three: each card's vector and fingerprint are those an import
    that embeds in this process stores."""
    from codemem.importers import git as git_import

    _repo(tmp_path / "repo")
    assert git_import.ingest_git(memory, str(tmp_path / "repo"), "here", progress=False).added == 3
    assert memory.embedder.query_path == "onnx"
    monkeypatch.setattr(git_import, "_PROCESS_FROM", 0)
    monkeypatch.setattr(git_import, "_CHUNK", 1)  # three conversion tasks: the third is embedded here
    embedded_here: list[str] = []
    real_embed = memory.embedder.embed
    monkeypatch.setattr(memory.embedder, "embed", lambda texts, n: embedded_here.extend(texts) or real_embed(texts, n))
    assert git_import.ingest_git(memory, str(tmp_path / "repo"), "aside", progress=False).added == 3
    assert len(embedded_here) == 2  # the third change's task, and its card's whole text
    def cards(user_id: str) -> list[dict]:
        return memory.store.user_rows(key_of(user_id), "card", ["session_id", "metadata", "vector"])

    here = {c["session_id"]: c for c in cards("here")}
    assert len(here) == 3
    for card in cards("aside"):
        twin = here[card["session_id"]]
        assert json.loads(card["metadata"])["vec"] == json.loads(twin["metadata"])["vec"]
        assert float(np.dot(card["vector"], twin["vector"])) > 0.99999
    def card_texts(user_id: str) -> dict[str, dict]:
        rows = memory.store.user_rows(key_of(user_id), CODE_WINDOW, ["session_id", "metadata", "vector"])
        return {r["session_id"]: r for r in rows}

    aside, here_texts = card_texts("aside"), card_texts("here")
    assert len(aside) == 3 and aside.keys() == here_texts.keys()
    for session_id, row in aside.items():
        assert json.loads(row["metadata"])["vec"] == json.loads(here_texts[session_id]["metadata"])["vec"]
        assert float(np.dot(row["vector"], here_texts[session_id]["vector"])) > 0.99999


def test_ingest_git_leaves_the_store_compacted_and_indexed(memory: Memory, tmp_path: Path) -> None:
    """A CLI or eval Memory runs no compactor thread: the import compacts once at its end, or
    every later Search scans a fragment per batch and the unindexed tail."""
    _repo(tmp_path / "repo")
    before = memory.store.version()
    ingest_git(memory, str(tmp_path / "repo"), "dev", progress=False, batch=1)  # a commit per change
    stats = memory.store.stats()
    assert memory.store.version() > before + 3  # three appends, then the compaction
    assert memory.compactor.runs == 1
    assert (stats["fragments"], stats["unindexed_rows"]) == (1, 0)
    ingest_git(memory, str(tmp_path / "repo"), "dev", progress=False)  # nothing new: nothing to compact
    assert memory.compactor.runs == 1


def test_ingest_git_reads_a_merge_as_one_change_and_counts_it(memory: Memory, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    repo = _repo(tmp_path / "repo")
    main_branch = repo.active_branch
    feature = repo.create_head("feature", repo.head.commit.parents[0])
    feature.checkout()
    (tmp_path / "repo" / "NOTES").write_text("notes\n")
    repo.index.add(["NOTES"])
    repo.index.commit("Add notes")
    main_branch.checkout()
    repo.git.merge("feature", "--no-ff", "-m", "Merge branch feature")
    report = ingest_git(memory, str(tmp_path / "repo"), "dev", progress=False)
    assert (report.sources, report.merges, report.commits) == (4, 1, 5)  # the merge brought "Add notes"
    # The newest two changes: the merge (with the commit it brought in) and the commit before it.
    code = main(["ingest-git", "--data-dir", str(tmp_path / "d"), "--max-commits", "2", str(tmp_path / "repo")])
    assert code == 0
    assert ("Read 2 changes of 3 commits (the first-parent line: 1 merge, each one change with the commits "
            "it brought in): 2 added, 0 already stored.") in capsys.readouterr().out


def test_ingest_git_adds_only_new_commits_and_every_item_names_its_commit(memory: Memory, tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    first = ingest_git(memory, str(tmp_path / "repo"), "dev", progress=False)
    assert (first.sources, first.added) == (3, 3)
    (tmp_path / "repo" / "calc.py").write_text("def divide(a, b):\n    return a // b\n")
    repo.index.add(["calc.py"])
    fix = repo.index.commit("Use floor division in divide (#7)\n\nFixes #6").hexsha
    again = ingest_git(memory, str(tmp_path / "repo"), "dev", progress=False)
    assert (again.sources, again.added, again.unchanged) == (4, 1, 3)
    hits = memory.search(SearchRequest(user_id="dev", query="divide uses floor division", top_k=10))
    assert hits and hits[0].metadata["commit"] == fix and hits[0].metadata["pr"] == 7
    shas = [c.hexsha for c in repo.iter_commits()]
    assert all(any(sha in str(h.metadata) for sha in shas) for h in hits)  # a user sees which commit
    assert all("commit" in h.metadata for h in hits if h.metadata.get("kind") in ("card", "step"))


def test_add_sessions_stores_each_new_session_once(memory: Memory, tmp_path: Path) -> None:
    from codemem.git.cards import commit_to_experience
    from codemem.git.log import iter_changes
    from codemem.importers.git import commit_request

    _repo(tmp_path / "repo")
    fix, readme = [(commit_request(r, "dev"), commit_to_experience(r)) for r in iter_changes(str(tmp_path / "repo"))][:2]
    results = memory.add_sessions([fix, fix, readme])
    assert [r.duplicate for r in results] == [False, True, False]  # in order; one session twice: once
    assert [r.request_id for r in results] == [fix[0].request_id, fix[0].request_id, readme[0].request_id]
    assert [r.duplicate for r in memory.add_sessions([readme])] == [True]
    assert len(_cards(memory, "dev")) == 2


def test_ingest_git_rejects_a_non_repository(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "plain").mkdir()
    code = main(["ingest-git", "--data-dir", str(tmp_path / "d"), "--user-id", "u", str(tmp_path / "plain")])
    assert code == 2
    assert "git" in capsys.readouterr().err.lower()


def test_long_sessions_rebuild_on_a_schedule_and_catch_up_when_quiet(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codemem.contract.types import Message
    from codemem.writing import derived_rows, session_state

    monkeypatch.setattr(derived_rows, "REBUILD_ALWAYS_UPTO", 10)
    built = []
    for i in range(8):
        msgs = [Message("user" if j % 2 == 0 else "assistant", f"step {i}.{j} edited src/app.py") for j in range(5)]
        memory.add(AddRequest(f"long-{i}", "dev", "long-session", msgs))
        now = session_state.state(memory.store, key_of("dev", "long-session"))
        built.append((now.messages, now.built))
    totals = [t for t, _ in built]
    assert totals == [5, 10, 15, 20, 25, 30, 35, 40]
    # Rebuilt on every Add up to 10 messages, then only after 25% growth: 10 -> 15 -> 20 -> 25 -> 35.
    assert [b for _, b in built] == [5, 10, 15, 20, 25, 25, 35, 35]
    memory.refresher.flush()
    after = session_state.state(memory.store, key_of("dev", "long-session"))
    assert (after.messages, after.built) == (40, 40)
    assert len(_cards(memory, "dev")) == 1


def test_a_card_without_a_task_keeps_its_vector_until_the_session_goes_quiet(memory: Memory) -> None:
    """A session that starts mid-stream (no user text yet) embeds its whole card, which every
    Add changes: it is embedded once per quiet spell, not once per Add."""
    from codemem.contract.types import Message

    session_key = key_of("dev", "mid-stream")

    def card() -> dict:
        return memory.store.session_rows(session_key, ["card"], columns=["text", "vector"])[0]

    memory.add(AddRequest("m-1", "dev", "mid-stream", [Message("assistant", "I opened src/app.py and ran the tests")]))
    first = card()
    cause = "The root cause is that parse_header drops the last byte, so I will fix it in src/app.py."
    memory.add(AddRequest("m-2", "dev", "mid-stream", [Message("assistant", cause)]))
    second = card()
    assert second["text"] != first["text"]
    assert second["vector"] == first["vector"]
    assert memory.refresher.pending == 1
    memory.refresher.flush()
    caught_up = card()
    assert caught_up["text"] == second["text"]
    expected = memory.embedder.embed([caught_up["text"]], memory.settings.embedding.max_tokens)[0]
    assert sum(a * b for a, b in zip(caught_up["vector"], expected, strict=True)) > 0.999
    # An Add that leaves the card's text as it was owes no refresh.
    memory.add(AddRequest("m-3", "dev", "mid-stream", [Message("assistant", "The root cause is the lexer.")]))
    assert memory.refresher.pending == 0
    # Deferred again, then the task arrives: that Add embeds it, and no refresh is owed.
    bug = "I think the bug is that the lexer skips tabs in src/lexer.py, which is why the header is cut."
    memory.add(AddRequest("m-3b", "dev", "mid-stream", [Message("assistant", bug)]))
    assert memory.refresher.pending == 1
    memory.add(AddRequest("m-4", "dev", "mid-stream", [Message("user", "Please fix the header parser crash")]))
    assert memory.refresher.pending == 0


def test_a_progress_bar_is_shown_only_while_there_is_work(memory: Memory, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    _repo(tmp_path / "repo")
    ingest_git(memory, str(tmp_path / "repo"), "dev")
    assert "3/3" in capsys.readouterr().err  # the first import shows its bar
    assert ingest_git(memory, str(tmp_path / "repo"), "dev").unchanged == 3
    assert "commit" not in capsys.readouterr().err  # a re-import with nothing new: no empty "0commit" bar
