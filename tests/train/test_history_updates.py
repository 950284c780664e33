"""train.ranker.history_updates on a tiny real git history: a dependency bumped twice, a commit
that mentions it without changing it, and a revert that brings the older value back."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from train.ranker import history_updates as hu

DAY = 86400
T0 = 1_700_000_000  # 2023-11-14


def _git(work: Path, *args: str, t: int | None = None) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.org",
           "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.org"}
    if t is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"@{t} +0000"
    return subprocess.run(["git", "-C", str(work), *args], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def _commit(work: Path, files: dict[str, str], msg: str, t: int) -> str:
    for name, text in files.items():
        (work / name).write_text(text)
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", msg, t=t)
    return _git(work, "rev-parse", "HEAD")


def _cargo(serde: str) -> str:
    return f'[package]\nname = "demo"\nversion = "0.1.0"\n\n[dependencies]\nserde = "{serde}"\nlog = "0.4"\n'


@pytest.fixture()
def history(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    work = tmp_path / "work"
    work.mkdir()
    _git(work, "init", "-q", "-b", "main")
    shas = {
        "intro": _commit(work, {"Cargo.toml": _cargo("1.0.100"), "README.md": "demo\n"}, "Start demo", T0),
        "bump1": _commit(work, {"Cargo.toml": _cargo("1.0.150")}, "Bump serde", T0 + 10 * DAY),
        "other": _commit(work, {"README.md": "demo\nserde is used for config files\n"},
                         "Document how serde reads the config", T0 + 20 * DAY),
        "bump2": _commit(work, {"Cargo.toml": _cargo("1.0.190")}, "Update serde to 1.0.190", T0 + 30 * DAY),
    }
    _git(work, "revert", "--no-edit", "HEAD", t=T0 + 40 * DAY)
    shas["revert"] = _git(work, "rev-parse", "HEAD")
    return work / ".git", shas


def test_sessions_dates_and_labels(history: tuple[Path, dict[str, str]]) -> None:
    git_dir, shas = history
    project, summary = hu.build_project(git_dir, "demo/demo", seed=1)
    assert project["split"] == "train" and project["style"] == "commits"
    ids = {s["messages"][0]["content"].split("\n")[0].split()[1]: s["id"] for s in project["sessions"]}
    # Every value-setting commit and the distractor are sessions, in time order s01..s05.
    assert ids == {shas["intro"]: "s01", shas["bump1"]: "s02", shas["other"]: "s03",
                   shas["bump2"]: "s04", shas["revert"]: "s05"}
    s = {x["id"]: x for x in project["sessions"]}
    assert s["s02"]["messages"][0]["timestamp"] == (T0 + 10 * DAY) * 1000
    assert s["s02"]["date"] == "2023-11-24T22:13:20Z"
    assert '+serde = "1.0.150"' in s["s02"]["messages"][0]["content"]
    assert "This reverts commit" in s["s05"]["messages"][0]["content"]
    assert '+serde = "1.0.150"' in s["s05"]["messages"][0]["content"]
    (row,) = summary["subjects"]
    assert row["values"] == ["1.0.100", "1.0.150", "1.0.190", "1.0.150"] and row["reverts"] == 1
    by_kind: dict[str, list[dict]] = {}
    for q in project["questions"]:
        by_kind.setdefault(q["kind"], []).append(q)
    for q in by_kind["update"]:
        assert q["sessions"] == ["s05"] and q["related"] == ["s01", "s02", "s04", "s05"]
        assert "s03" not in q["related"]
    dates = {"s01": "2023-11-14", "s02": "2023-11-24", "s04": "2023-12-14", "s05": "2023-12-24"}
    for q in by_kind["when"]:
        assert q["date"] == dates[q["sessions"][0]]
    for q in by_kind["before"]:
        assert (q["sessions"], q["values"]) in [(["s01", "s02"], ["1.0.100", "1.0.150"]),
                                                (["s02", "s04"], ["1.0.150", "1.0.190"]),
                                                (["s04", "s05"], ["1.0.190", "1.0.150"])]
    for q in by_kind["asof"]:
        prev = max(k for k, d in dates.items() if d <= q["date"])
        assert q["sessions"] == [prev]
    assert by_kind["multi"][0]["sessions"] == ["s01", "s02", "s04", "s05"]
    # Deterministic.
    assert hu.build_project(git_dir, "demo/demo", seed=1)[0] == project


def test_main_missing_mirror(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert hu.main(["--mirrors", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "missing mirror" in err[0]
    assert not (tmp_path / "out").exists()


def test_templates_are_many_and_no_training_repo_is_held_out() -> None:
    for pool in (hu.UPDATE_DEP, hu.UPDATE_SETTING, hu.WHEN, hu.BEFORE, hu.ASOF, hu.MULTI):
        assert len(set(pool)) >= 12
    assert sum("now" in t or "current" in t for t in hu.UPDATE_DEP + hu.UPDATE_SETTING) < 3
    from train.data import is_never_repo
    assert not any(is_never_repo(r) for r in hu.REPOS)


def test_states_parses_manifest_lines() -> None:
    ctx: dict[str, str] = {}
    assert hu.states("Cargo.toml", 'tokio = { version = "1.2", features = ["rt"] }', ctx)[1] == "1.2"  # type: ignore[index]
    assert hu.states("Cargo.toml", 'tracing-core = { path = "../core", version = "0.1" }', ctx) is None
    assert hu.states("go.mod", "go 1.21", ctx)[0].key == "go-directive"  # type: ignore[index]
    assert hu.states("requirements.txt", "numpy>=1.21", ctx)[1] == ">=1.21"  # type: ignore[index]
    assert hu.states(".github/workflows/ci.yml", "      - uses: actions/checkout@v4", ctx)[1] == "v4"  # type: ignore[index]
    hu.states(".pre-commit-config.yaml", "-   repo: https://github.com/astral-sh/ruff-pre-commit", ctx)
    subj, rev = hu.states(".pre-commit-config.yaml", "    rev: v0.4.1", ctx)  # type: ignore[misc]
    assert subj.short == "ruff hook" and rev == "v0.4.1"
    assert json.dumps(ctx)
