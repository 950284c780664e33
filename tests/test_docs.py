"""The README documents every CLI command, every setting and every endpoint; docs/results.md
is what the result files give; the eval commands the docs name exist."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from api.app import create_app
from api.memoryarena import env_names as memoryarena_env_names
from cli.main import build_parser
from codemem.config import env_names

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def _commands() -> list[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sorted(sub.choices)  # type: ignore[arg-type]


@pytest.mark.parametrize("command", _commands())
def test_every_cli_command_is_in_the_readme(command: str) -> None:
    assert f"codemem {command}" in README


@pytest.mark.parametrize("name", env_names() + memoryarena_env_names())
def test_every_setting_is_in_the_readme(name: str) -> None:
    assert f"`{name}`" in README


def _paths() -> list[str]:
    app = create_app()
    return sorted({r.path for r in app.routes if not r.path.startswith("/schema")})


@pytest.mark.parametrize("path", _paths())
def test_every_endpoint_is_in_the_readme(path: str) -> None:
    assert path.replace("{user_id:path}", "{user_id}") in README


ROOT = Path(__file__).resolve().parents[1]
EVAL_DOCS = ("README.md", "eval/README.md", "Makefile", "train/ranker/README.md")


def test_the_results_page_is_what_the_result_files_give() -> None:
    from eval.render import PAGE, render_results, results_part

    assert results_part(PAGE.read_text()) == results_part(render_results()), (
        "docs/results.md is out of date: run python -m eval.render")


def test_every_result_file_and_figure_has_a_known_label() -> None:
    from eval.figures import FIGURES, FILE_LABELS, LABELS
    from eval.render import result_files

    assert {p.name for p in result_files()} == set(FILE_LABELS)
    assert {f.label_of() for f in FIGURES} | set(FILE_LABELS.values()) <= set(LABELS)


def test_the_readme_points_at_the_generated_results() -> None:
    assert "docs/results.md" in README


@pytest.mark.parametrize("doc", EVAL_DOCS)
def test_every_eval_command_in_the_docs_names_a_module(doc: str) -> None:
    import importlib.util
    import re

    modules = set(re.findall(r"python -m (eval(?:\.\w+)+)", (ROOT / doc).read_text()))
    assert [m for m in sorted(modules) if importlib.util.find_spec(m) is None] == []


def test_every_result_file_the_readme_names_exists() -> None:
    import re

    named = set(re.findall(r"eval/results/([\w./-]+\.(?:json|md|png))", README))
    assert [n for n in sorted(named) if not (ROOT / "eval" / "results" / n).exists()] == []


def test_the_readme_stays_a_users_guide() -> None:
    # What a user needs fits in ~300 lines; measurements live in docs/results.md and eval/README.md.
    assert len(README.splitlines()) <= 300


def test_the_changelog_opens_this_version_with_what_it_does_to_the_store() -> None:
    """docs/deploy.md's upgrade step reads CHANGELOG.md for whether a release changes the store."""
    root = Path(__file__).resolve().parents[1]
    version = tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"]
    changelog = (root / "CHANGELOG.md").read_text()
    sections = changelog.split("\n## ")[1:]
    assert sections and sections[0].startswith(f"{version} ("), "the newest entry is the version pyproject.toml names"
    assert all("\n**Store: " in section for section in sections), "every release says what it does to the store"
