"""A working directory's memory is named after its repository: remote, else path."""

from __future__ import annotations

from pathlib import Path

import git
import pytest

from cli.main import build_parser
from codemem.config import Settings, agent_defaults, default_data_dir
from codemem.git.repo_id import normalise_remote, repo_user_id


@pytest.mark.parametrize("url, name", [
    ("git@github.com:Owner/Name.git", "github.com/Owner/Name"),
    ("https://github.com/Owner/Name", "github.com/Owner/Name"),
    ("https://x-token:s3cret@GitHub.com/Owner/Name.git/", "github.com/Owner/Name"),
    ("ssh://git@host.example:2222/team/proj.git", "host.example/team/proj"),
    ("github.com:owner/name", "github.com/owner/name"),
    ("https://gitlab.com/group/sub/proj.git", "gitlab.com/group/sub/proj"),
    ("file:///srv/git/tool.git", "/srv/git/tool"),
    ("/srv/git/tool.git", "/srv/git/tool"),
])
def test_remote_urls_of_one_repository_normalise_alike(url: str, name: str) -> None:
    assert normalise_remote(url) == name


def test_credentials_never_reach_the_user_id() -> None:
    assert "s3cret" not in normalise_remote("https://bot:s3cret@github.com/o/n.git")


def test_a_clone_is_named_by_its_origin_from_any_subdirectory(tmp_path: Path) -> None:
    repo = git.Repo.init(tmp_path / "clone")
    repo.create_remote("upstream", "https://github.com/other/fork.git")
    repo.create_remote("origin", "git@github.com:acme/widgets.git")
    (tmp_path / "clone" / "src").mkdir()
    assert repo_user_id(tmp_path / "clone" / "src") == "repo:github.com/acme/widgets"


def test_without_origin_the_first_remote_names_it(tmp_path: Path) -> None:
    repo = git.Repo.init(tmp_path / "r")
    repo.create_remote("zeta", "https://example.org/z/last.git")
    repo.create_remote("alpha", "https://example.org/a/first.git")
    assert repo_user_id(tmp_path / "r") == "repo:example.org/a/first"


def test_a_repository_without_remote_is_named_by_its_top_level(tmp_path: Path) -> None:
    git.Repo.init(tmp_path / "local")
    (tmp_path / "local" / "pkg").mkdir()
    assert repo_user_id(tmp_path / "local" / "pkg") == f"repo:{(tmp_path / 'local').resolve()}"


def test_a_directory_outside_git_is_named_by_its_path(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    assert repo_user_id(plain) == f"dir:{plain.resolve()}"


def test_every_command_keeps_one_memory_per_person_unless_told_otherwise() -> None:
    env = {"XDG_DATA_HOME": "/x/share"}
    assert default_data_dir(env) == "/x/share/codemem"
    assert Settings.from_env(env).storage.data_dir == "/x/share/codemem"
    assert Settings.from_env(env | {"CODEMEM_DATA_DIR": "/d"}).storage.data_dir == "/d"
    flag = Settings.from_env(env | {"CODEMEM_DATA_DIR": "/d"}, overrides={"storage.data_dir": "/flag"})
    assert flag.storage.data_dir == "/flag"
    agent = Settings.from_env(env, defaults=agent_defaults())
    assert agent.storage.data_dir == "/x/share/codemem"
    assert agent.search.config().answer.budget_tokens == 10_000


@pytest.mark.parametrize("argv, agent", [
    (["mcp"], True), (["hook", "claude-code"], True), (["serve"], False), (["search", "q"], False),
])
def test_only_the_agent_commands_take_the_agent_defaults(argv: list[str], agent: bool) -> None:
    assert getattr(build_parser().parse_args(argv), "agent", False) is agent
