"""Session fixture: the history repository described in git_helpers."""

from __future__ import annotations

from datetime import timedelta

import pytest
from git_helpers import (
    BASE,
    DATES_JS,
    DATES_JS_2,
    SERVICE_V1,
    SERVICE_V2,
    SERVICE_V3,
    STORE_JS,
    STORE_JS_2,
    UTIL_JS,
    HistoryRepo,
    commit,
    commit_raw,
    init_repo,
    write,
)


@pytest.fixture(scope="session")
def history_repo(tmp_path_factory: pytest.TempPathFactory) -> HistoryRepo:
    root = tmp_path_factory.mktemp("history")
    repo = init_repo(root)
    shas: dict[str, str] = {}

    write(root, "app/service.py", SERVICE_V1)
    write(root, "web/util.js", UTIL_JS)
    write(root, "web/store.js", STORE_JS)
    write(root, "README.md", "# demo\n")
    repo.git.add("-A")
    shas["c1"] = commit(repo, "Initial import of service and web utils", 0)

    write(root, "app/service.py", SERVICE_V2)
    repo.git.add("-A")
    shas["c2"] = commit(
        repo,
        "Fix KeyError in Service.save when the cache is empty\n\n"
        "Saving before any load raised KeyError: 'user' because the cache\n"
        "was never read from disk.\n\nSigned-off-by: Ada Lovelace <ada@example.com>\n",
        1,
    )

    repo.git.mv("web/util.js", "web/dates.js")
    write(root, "web/dates.js", DATES_JS)
    repo.git.add("-A")
    shas["c3"] = commit(repo, "Rename util.js to dates.js and fix month off-by-one", 2)

    write(root, "assets/logo.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4)
    repo.git.add("-A")
    shas["c4"] = commit(repo, "Add logo", 3)

    write(root, "README.md", b"# demo\n\nCaf\xe9 edition.\n")  # latin-1 content too
    repo.git.add("-A")
    shas["c5"] = commit_raw(repo, b"Caf\xe9 readme update in latin-1\n", 4)

    repo.git.checkout("-q", "-b", "feature")
    write(root, "app/service.py", SERVICE_V3)
    repo.git.add("-A")
    shas["c6"] = commit(repo, "Return None from Service.load for missing keys", 5)

    repo.git.checkout("-q", "main")
    write(root, "web/dates.js", DATES_JS_2)
    write(root, "web/store.js", STORE_JS_2)
    repo.git.add("-A")
    shas["c7"] = commit(repo, "Parse dates with Date.parse", 6)

    when = (BASE + timedelta(days=7)).isoformat()
    repo.git.merge(
        "-q", "--no-ff", "-m", "Merge branch 'feature'", "feature",
        env={"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when},
    )  # fmt: skip
    shas["c8"] = repo.head.commit.hexsha
    repo.close()
    return HistoryRepo(path=root, shas=shas)
