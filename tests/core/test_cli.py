"""The `codemem` command: search prints readable results, purge and delete-user erase."""

from __future__ import annotations

import json
import os
from pathlib import Path

import git
import pytest

from cli import subcommands
from cli.main import build_parser, main, parse_age
from codemem.config import Settings
from codemem.contract.types import AddRequest, Message
from codemem.encoders import ShippedEmbedder
from codemem.memory import Memory
from tests import coding_memory


@pytest.fixture
def filled(tmp_path: Path, embedder: ShippedEmbedder) -> str:
    data = str(tmp_path / "data")
    m = Memory(Settings().replace({"storage.data_dir": data, "maintenance.interval_s": 0}), embedder=embedder)
    m.add(AddRequest("r1", "dev", "sess-1", [
        Message("user", "Fix the crash in parsers/diff.py when a hunk header has no context"),
        Message("assistant", "The crash came from an IndexError in parse_hunk_header; I guarded the split."),
    ]))
    m.add(AddRequest("r2", "dev", "sess-2", [Message("user", "Bump the docs theme version")]))
    m.close()
    return data


def test_search_prints_ranked_readable_results(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "--data-dir", filled, "--user-id", "dev", "IndexError in parse_hunk_header"]) == 0
    out = capsys.readouterr().out
    first = out.split("\n#2")[0]
    assert "from the memory of dev" in out.splitlines()[0]
    assert first.splitlines()[2].startswith("#1  Fix the crash in parsers/diff.py")
    assert "session sess-1" in first and "outcome: " in first
    assert "guarded the split" in first  # the evidence
    assert "{" not in first


def test_search_json_is_the_contract_shape(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    main(["search", "--data-dir", filled, "--user-id", "dev", "--top-k", "2", "--json", "docs theme"])
    body = json.loads(capsys.readouterr().out)
    assert 1 <= len(body["data"]) <= 2
    best = body["data"][0]
    # One experience per item: the card, with the matching message inlined as evidence.
    assert best["metadata"]["kind"] == "card" and len(best["metadata"]["evidence"]) >= 1
    assert "Bump the docs theme version" in best["content"].split("Evidence from this session:")[1]


def test_search_of_unknown_user_says_so(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    main(["search", "--data-dir", filled, "--user-id", "stranger", "anything"])
    out = capsys.readouterr().out.strip()
    assert out.startswith("The memory of stranger is empty") and "codemem memories" in out


def test_search_suggests_the_name_meant(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    main(["search", "--data-dir", filled, "--user-id", "DEV", "crash"])
    assert "Did you mean --user-id dev?" in capsys.readouterr().out


def test_memories_lists_users_with_counts(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memories", "--data-dir", filled]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"1 memory in {filled}"
    assert out[2].split()[:3] == ["dev", "2", "3"]  # 2 experiences, 3 messages


@pytest.mark.parametrize("argv", [["search", "q"], ["memories"], ["delete-user", "--user-id", "u"],
                                  ["purge", "--older-than", "1d"]])
def test_read_only_commands_create_no_data_directory(
        argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nowhere"
    code = main([*argv[:1], "--data-dir", str(missing), *argv[1:]])
    assert code == (1 if argv[0] in ("search", "memories") else 0)
    assert not missing.exists()
    assert f"no memory at {missing}" in capsys.readouterr().err


def test_nothing_to_show_exits_1_however_it_comes_about(filled: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    # One rule, as grep's: 0 when something is shown, 1 when nothing is, whatever the reason.
    assert main(["search", "--data-dir", filled, "--user-id", "dev", "IndexError in parse_hunk_header"]) == 0
    assert main(["search", "--data-dir", filled, "--user-id", "stranger", "anything"]) == 1  # an empty memory
    assert main(["search", "--data-dir", filled, "--user-id", "stranger", "--json", "anything"]) == 1
    assert main(["search", "--data-dir", str(tmp_path / "nowhere"), "--user-id", "dev", "q"]) == 1  # none at all
    assert main(["memories", "--data-dir", filled]) == 0
    assert main(["delete-user", "--data-dir", filled, "--user-id", "dev"]) == 0
    assert main(["delete-user", "--data-dir", filled, "--user-id", "dev"]) == 0  # nothing left to delete
    assert main(["memories", "--data-dir", filled]) == 1  # the directory is there, holding nothing
    assert main(["search", "--data-dir", filled, "--user-id", "dev", "crash"]) == 1
    out = capsys.readouterr().out
    assert '{"data":[]}' in out and "0 memories in" in out and "The memory of dev is empty" in out


def _merged_history(path: Path) -> git.Repo:
    """main: two commits, then a branch of two commits merged with --no-ff."""
    repo = git.Repo.init(path, initial_branch="main")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "Dev")
        cw.set_value("user", "email", "dev@example.com")
    (path / "pkg").mkdir()
    for name, message in [("pkg/a.py", "Add a"), ("pkg/b.py", "Add b")]:
        (path / name).write_text(f"# {message}\n")
        repo.git.add(name)
        repo.git.commit("-m", message)
    repo.git.checkout("-b", "feature")
    for name, message in [("pkg/c.py", "Add c"), ("pkg/d.py", "Add d")]:
        (path / name).write_text(f"# {message}\n")
        repo.git.add(name)
        repo.git.commit("-m", message)
    repo.git.checkout("main")
    repo.git.merge("--no-ff", "feature", "-m", "Merge pull request #1 from dev/feature")
    return repo


def test_ingest_git_counts_changes_and_commits_and_works_from_a_subdirectory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    repo = tmp_path / "repo"
    _merged_history(repo)
    monkeypatch.chdir(repo / "pkg")  # inside the work tree, not at its top
    assert main(["ingest-git", "--data-dir", str(tmp_path / "data"), "."]) == 0
    out, err = capsys.readouterr()
    # 3 changes on the first-parent line (a, b, the merge with c and d) of 5 commits.
    assert out.startswith("Read 3 changes of 5 commits (the first-parent line: 1 merge, each one change "
                          "with the commits it brought in): 3 added, 0 already stored.")
    assert f"importing {repo.resolve()} into the memory of repo:{repo.resolve()}" in err


def test_ingest_git_outside_a_repository_says_so_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "plain").mkdir()
    assert main(["ingest-git", "--data-dir", str(tmp_path / "data"), str(tmp_path / "plain")]) == 2
    assert main(["ingest-git", "--data-dir", str(tmp_path / "data"), str(tmp_path / "missing")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "importing" not in err
    assert err.splitlines() == [f"codemem: not a git repository (nor inside one): {tmp_path / 'plain'}",
                                f"codemem: no such directory: {tmp_path / 'missing'}"]
    assert not (tmp_path / "data").exists()


def test_user_id_defaults_to_the_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    repo = tmp_path / "repo"
    git.Repo.init(repo).create_remote("origin", "git@github.com:acme/widgets.git")
    monkeypatch.chdir(repo)
    main(["search", "--data-dir", str(tmp_path / "data-missing"), "q"])  # resolves the id, then stops
    args = build_parser().parse_args(["ingest-git", str(repo)])
    assert args.user_id is None and subcommands._user_id(args, args.repo) == "repo:github.com/acme/widgets"
    assert subcommands._user_id(build_parser().parse_args(["search", "q"])) == "repo:github.com/acme/widgets"


def test_ingest_git_of_a_repository_with_no_commits_and_no_remote_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = tmp_path / "repo"
    git.Repo.init(repo)
    assert main(["ingest-git", "--data-dir", str(tmp_path / "data"), str(repo)]) == 0
    out, err = capsys.readouterr()
    assert out == f"No commits to import: {repo} has none.\n"
    assert f"into the memory of repo:{repo.resolve()} in" in err  # no remote: named by its path


def test_ingest_git_says_when_git_can_read_none_of_the_commits_and_when_some(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo_dir = tmp_path / "repo"
    repo = git.Repo.init(repo_dir)
    (repo_dir / "a.py").write_text("def f():\n    return 1\n")
    repo.git.add("-A")
    repo.git.commit("-m", "Add f", "--author", "Dev <dev@example.com>")
    blob = repo.git.rev_parse("HEAD:a.py")
    loose = repo_dir / ".git" / "objects" / blob[:2] / blob[2:]
    kept = loose.read_bytes()
    loose.unlink()  # a broken clone: git cannot diff the one commit
    first = repo.head.commit.hexsha
    data = str(tmp_path / "data")
    assert main(["ingest-git", "--data-dir", data, str(repo_dir)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "imported nothing" in err and first[:12] in err and "--unshallow" in err

    loose.write_bytes(kept)  # a second commit that does not touch a.py, then the blob is lost again
    (repo_dir / "b.py").write_text("def g():\n    return 0\n")
    repo.git.add("b.py")
    repo.git.commit("-m", "Add g", "--author", "Dev <dev@example.com>")
    loose.unlink()
    assert main(["ingest-git", "--data-dir", data, str(repo_dir)]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("Read 1 commit: 1 added") and f"skipped 1 commit whose git objects are missing ({first[:12]})" in err


def test_purge_removes_only_older_memories(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    main(["purge", "--data-dir", filled, "--older-than", "30d"])
    out = capsys.readouterr().out
    assert out.startswith(f"Nothing in {filled} was stored more than 30 days ago (before 20") and "nothing removed" in out
    main(["purge", "--data-dir", filled, "--older-than", "0s"])
    assert capsys.readouterr().out.startswith("Removed 5 memories stored more than 0 seconds ago")  # 3 messages, 2 cards
    main(["search", "--data-dir", filled, "--user-id", "dev", "crash"])
    assert "The memory of dev is empty" in capsys.readouterr().out


def test_root_is_refused_a_data_directory_another_user_owns(
        filled: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A service's memory written by root would hold files the service can no longer write."""
    if os.geteuid() == 0:
        os.chown(filled, 65534, 65534)  # as the service's user would own it
    else:
        monkeypatch.setattr(os, "geteuid", lambda: 0)  # root, over a directory this user owns
    for argv in (["purge", "--older-than", "30d"], ["memories"], ["search", "--user-id", "dev", "crash"]):
        with pytest.raises(SystemExit) as refused:
            main([argv[0], "--data-dir", filled, *argv[1:]])
        assert f"{filled} belongs to " in str(refused.value) and "sudo -u " in str(refused.value)


def test_delete_user(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    main(["delete-user", "--data-dir", filled, "--user-id", "dev"])
    assert "Removed 5 memories of user 'dev'" in capsys.readouterr().out


@pytest.mark.parametrize("text, seconds", [("30d", 30 * 86400), ("12h", 43200), ("90m", 5400), ("2w", 1209600)])
def test_parse_age(text: str, seconds: int) -> None:
    assert parse_age(text).total_seconds() == seconds


def test_parse_age_rejects_nonsense() -> None:
    with pytest.raises(Exception, match="not an age"):
        parse_age("soon")


def test_search_shows_each_experience_in_brief_and_says_how_many_more_matched(
        tmp_path: Path, embedder: ShippedEmbedder, capsys: pytest.CaptureFixture[str]) -> None:
    data = str(tmp_path / "data")
    with Memory(Settings().replace({"storage.data_dir": data, "maintenance.interval_s": 0}), embedder=embedder) as m:
        for n in range(4):
            m.add(AddRequest(f"r{n}", "dev", f"sess-{n}", [
                Message("user", f"The parser crashes on hunk header variant {n} in parsers/diff.py"),
                Message("assistant", f"Guarded parse_hunk_header for variant {n}. " + "Read the hunk header code. " * 200),
            ]))
    assert main(["search", "--data-dir", data, "--user-id", "dev", "--top-k", "2", "parser crashes on a hunk header"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("2 results from the memory of dev")
    assert out.count("\n#") == 2 and out.count("    matched (") == 2  # each with the evidence that matched best
    assert "2 more matched: --top-k 4 shows them; --json prints the whole answer." in out


def test_search_says_when_nothing_in_the_memory_is_closely_related(filled: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "--data-dir", filled, "--user-id", "dev", "Plombrix quervane stollicut yarbenthal"]) == 0
    out = capsys.readouterr().out
    assert "(none stands out as the one this query is about: these are the nearest)" in out and "\n#" in out


def test_a_search_nothing_in_a_larger_memory_relates_to_exits_1_and_a_real_question_still_answers(
        tmp_path: Path, embedder: ShippedEmbedder, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    data = str(tmp_path / "data")
    with Memory(Settings().replace({"storage.data_dir": data, "maintenance.interval_s": 0}), embedder=embedder) as m:
        coding_memory.fill(m)
    assert main(["search", "--data-dir", data, "--user-id", "dev", coding_memory.INVENTED]) == 1
    assert capsys.readouterr().out.startswith("Nothing closely related in the memory of dev")
    question, session = coding_memory.RELATED
    assert main(["search", "--data-dir", data, "--user-id", "dev", "--json", question]) == 0
    assert json.loads(capsys.readouterr().out)["data"][0]["session_id"] == session
    monkeypatch.setenv("CODEMEM_EMPTY_WHEN_UNRELATED", "false")  # the nearest, said to be so
    assert main(["search", "--data-dir", data, "--user-id", "dev", coding_memory.INVENTED]) == 0
    assert "(none stands out as the one this query is about: these are the nearest)" in capsys.readouterr().out


def test_version_is_the_packages_and_the_changelogs(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    printed = capsys.readouterr().out.strip()
    assert printed == f"codemem {version('codemem')}"
    changelog = (Path(__file__).resolve().parents[2] / "CHANGELOG.md").read_text()
    assert f"\n## {printed.split()[1]} (" in changelog
