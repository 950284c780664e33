"""An imported git history on the pages, in a real browser (Debian's Chromium driven by
Playwright, as test_browser.py): listed newest first by the commits' own dates, each headed
by its subject with its sha, author and date below, a commit's steps labelled as its diff, a
merge found for one of its commits naming it, counts with thousands separators and a user id
field that shows the whole id.

Also takes the README's screenshot of the history (docs/screenshots/history.png with
UPDATE_SCREENSHOTS=1, else into a temporary folder)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import git
import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from codemem.config import Settings
from codemem.contract.types import AddRequest, Message
from codemem.encoders import ShippedEmbedder
from codemem.git.repo_id import repo_user_id
from codemem.importers.git import ingest_git
from codemem.memory import Memory
from tests.history import AUTHORS, SUBJECT_TWICE, History, build_history
from tests.ui.live import serving
from tests.ui.test_browser import CHROMIUM, DOCS_SCREENSHOTS, _chromium

REPO = "repo:github.com/acme/flask-maintenance-history"
BUSY = "eval:run_abc123:cambench:task-7"  # a memory of 1,200 messages
BUSY_MESSAGES = 1_200


class Served:
    def __init__(self, url: str, history: History, user_id: str) -> None:
        self.url, self.history, self.user_id = url, history, user_id

    def listing(self) -> str:
        return f"{self.url}/ui/search?user_id={quote(self.user_id)}"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, embedder: ShippedEmbedder) -> Iterator[Served]:
    _chromium()
    root = tmp_path_factory.mktemp("ui-history")
    history = build_history(root / "flask")
    with git.Repo(history.path) as repo:
        repo.create_remote("origin", "git@github.com:acme/flask-maintenance-history.git")
    user_id = repo_user_id(history.path)  # a long id, as real ones are
    assert user_id == REPO
    settings = Settings().replace({"storage.data_dir": str(root / "data"), "maintenance.interval_s": 0})
    memory = Memory(settings, embedder=embedder)
    ingest_git(memory, str(history.path), user_id, progress=False)
    memory.add(AddRequest(request_id="busy-1", user_id=BUSY, session_id="busy", messages=[
        Message(role="user" if i % 2 == 0 else "assistant", content=f"Ran pytest tests/test_m{i}.py: 1 passed")
        for i in range(BUSY_MESSAGES)]))
    with serving(settings, memory) as url:
        yield Served(url, history, user_id)
    memory.close()


@pytest.fixture(scope="module")
def browser(served: Served) -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    pg = context.new_page()
    yield pg
    context.close()


def _texts(page: Page, selector: str) -> list[str]:
    return [t.strip() for t in page.locator(selector).all_inner_texts()]


def _font_px(page: Page, selector: str) -> float:
    return float(page.locator(selector).first.evaluate("e => parseFloat(getComputedStyle(e).fontSize)"))


def test_the_history_is_listed_newest_first_by_its_own_dates(served: Served, page: Page, tmp_path: Path) -> None:
    page.goto(served.listing())
    headlines = _texts(page, "li.result a.headline")
    assert headlines == ["Drop support for Python 3.7", "Merge remote-tracking branch 'origin/2.0.x' into main",
                         "Start version 2.1", "Document the config loader", "Add blueprints", "Initial checkin"]
    dates = _texts(page, "li.result .byline .date")
    assert [d[:10] for d in dates] == ["2023-06-30", "2021-05-21", "2021-05-10", "2015-03-14", "2012-07-01",
                                       "2010-04-06"]
    first = page.locator("li.result .byline").first.inner_text()
    assert first.startswith(f"commit {served.history.shas['py37'][:10]} · by {AUTHORS['david']} · 1 file, +2 -0")
    assert page.locator("li.result .byline").nth(1).inner_text().startswith("merge ")
    assert _font_px(page, "li.result a.headline") > _font_px(page, "li.result .byline")  # the subject leads
    assert "session " not in page.locator("ol.results").inner_text()
    shots = DOCS_SCREENSHOTS if os.environ.get("UPDATE_SCREENSHOTS") == "1" else tmp_path
    shots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shots / "history.png"))
    assert (shots / "history.png").stat().st_size > 10_000


def test_a_commits_steps_are_its_diff_and_a_merges_its_merge_diff(served: Served, page: Page) -> None:
    page.goto(served.listing())
    page.get_by_role("link", name="Add blueprints").click()
    page.wait_for_url("**/ui/experience?**")
    assert page.locator("h1").inner_text() == "Add blueprints"
    assert _texts(page, "ol.timeline .pos") == ["the commit's diff"]
    assert "message 0" not in page.content() and "2012-07-01 09:30:00 UTC" in page.locator("p.byline").inner_text()
    page.goto(served.listing())
    page.get_by_role("link", name="Merge remote-tracking branch 'origin/2.0.x' into main").click()
    page.wait_for_url("**/ui/experience?**")
    assert set(_texts(page, "ol.timeline .pos")) == {"the merge's diff"}


def test_a_merge_found_for_an_inner_commit_names_it(served: Served, page: Page, tmp_path: Path) -> None:
    page.goto(f"{served.listing()}&q={quote('registering a blueprint twice')}")
    merge = page.locator(f"li.result[data-session='git:{served.history.shas['merge']}']")
    assert merge.locator("a.headline").inner_text() == "Merge remote-tracking branch 'origin/2.0.x' into main"
    assert merge.locator(".matched li").all_inner_texts() == [f"{served.history.shas['twice'][:7]} {SUBJECT_TWICE}"]
    assert merge.locator(".byline .date").inner_text() == "2021-05-21 18:00:00 UTC"  # not the import's minute
    shots = DOCS_SCREENSHOTS if os.environ.get("UPDATE_SCREENSHOTS") == "1" else tmp_path
    shots.mkdir(parents=True, exist_ok=True)
    merge.screenshot(path=str(shots / "history-merge.png"))


def test_counts_have_separators_and_the_user_id_field_shows_the_whole_id(served: Served, page: Page) -> None:
    page.goto(f"{served.url}/ui/")
    row = page.locator("table.users tr", has=page.locator("code", has_text=BUSY))
    assert row.locator("td.num").nth(1).inner_text() == "1,200"
    page.goto(served.listing())
    field = page.locator("select[name=user_id]")  # the picker of the memories stored
    assert field.input_value() == served.user_id
    assert field.evaluate("e => e.scrollWidth <= e.clientWidth"), "the user id is cut off"
