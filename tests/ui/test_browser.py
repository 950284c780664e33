"""The pages in a real browser: Debian's headless Chromium driven by Playwright (never
Playwright's own browser download). One server and one browser for the module, over a
memory of real trajectories (../shared/data/swe-contextbench-lite) and a hostile session.

The tests also take the README's screenshots: into docs/screenshots/ with
UPDATE_SCREENSHOTS=1 (then commit them), else into a temporary folder, so that a test run
leaves the tree clean."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from codemem.config import Settings
from codemem.contract.types import AddRequest, Message
from codemem.encoders import ShippedEmbedder
from codemem.memory import Memory
from eval.replay.data import Trajectory, iter_trajectories
from tests.conftest import needs_swe_lite
from tests.shared_data import SWE_LITE, in_ci
from tests.ui.live import serving

CHROMIUM = Path("/usr/bin/chromium")
DOCS_SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
# The first trajectories of the archive (read without streaming all of it).
MINE = ("sympy__sympy-24213", "sphinx-doc__sphinx-8713", "sympy__sympy-12171")
THEIRS = "django__django-14411"
ALICE, BOB = "repo:github.com/acme/sympy-work", "repo:github.com/other/django-work"
XSS_SESSION = "hostile-session"
XSS = ('<script>window.__pwned = "script"</script><img src=x onerror="window.__pwned = \'onerror\'">'
       '<svg onload="window.__pwned = \'svg\'"></svg>')

pytestmark = needs_swe_lite


def _chromium() -> Path:
    if CHROMIUM.exists():
        return CHROMIUM
    msg = f"no Chromium at {CHROMIUM} (apt-get install chromium; .ci/run installs it)"
    if in_ci():
        pytest.fail(f"CI=true and {msg}", pytrace=False)
    pytest.skip(msg)


def _trajectories() -> dict[str, Trajectory]:
    wanted = {*MINE, THEIRS}
    found: dict[str, Trajectory] = {}
    for t in iter_trajectories(SWE_LITE, "default", wanted):
        found[t.instance_id] = t
        if len(found) == len(wanted):
            break
    return found


def _add(memory: Memory, user_id: str, session_id: str, messages: list[Message]) -> None:
    memory.add(AddRequest(request_id=f"{session_id}-1", user_id=user_id, session_id=session_id, messages=messages))


def task_of(t: Trajectory) -> str:
    """The problem statement the trajectory was solving (its first user message says it)."""
    first = next(m.content for m in t.messages if m.role == "user")
    return first.split("problem_statement:", 1)[-1].strip()[:400]


class Served:
    def __init__(self, url: str, trajectories: dict[str, Trajectory]) -> None:
        self.url, self.trajectories = url, trajectories


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, embedder: ShippedEmbedder) -> Iterator[Served]:
    _chromium()
    trajectories = _trajectories()
    settings = Settings().replace({"storage.data_dir": str(tmp_path_factory.mktemp("ui") / "data"), "maintenance.interval_s": 0})
    memory = Memory(settings, embedder=embedder)
    for iid in MINE:
        _add(memory, ALICE, iid, [Message(role=m.role, content=m.content, timestamp=m.timestamp)
                                  for m in trajectories[iid].messages])
    _add(memory, BOB, THEIRS, [Message(role=m.role, content=m.content) for m in trajectories[THEIRS].messages])
    _add(memory, ALICE, XSS_SESSION, [Message(role="user", content=f"Fix the title rendering {XSS}"),
                                       Message(role="assistant", content=f"Edited page.html to show {XSS}")])
    with serving(settings, memory) as url:
        yield Served(url, trajectories)
    memory.close()


@pytest.fixture(scope="module")
def browser(served: Served) -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    yield pg
    context.close()


def _search_url(served: Served, user_id: str, query: str = "") -> str:
    return f"{served.url}/ui/search?user_id={quote(user_id)}" + (f"&q={quote(query)}" if query else "")


def _sessions(page: Page) -> list[str]:
    return page.locator("li.result").evaluate_all("els => els.map(e => e.dataset.session)")


def test_each_page_loads_and_is_photographed(served: Served, page: Page, tmp_path: Path) -> None:
    shots = DOCS_SCREENSHOTS if os.environ.get("UPDATE_SCREENSHOTS") == "1" else tmp_path
    shots.mkdir(parents=True, exist_ok=True)
    pg = page
    pg.goto(f"{served.url}/ui/")
    assert pg.locator("table.users code", has_text=ALICE).count() == 1
    assert pg.get_by_text("unindexed rows").count() == 1
    pg.screenshot(path=str(shots / "memories.png"))

    pg.locator("table.users tr", has=pg.locator("code", has_text=ALICE)).get_by_role("link", name="search").click()
    pg.wait_for_url(re.compile(r"/ui/search\?user_id="))  # Memories opens the search of one memory
    pg.goto(f"{served.url}/ui/search")  # as the nav opens it: the form picks a memory, no id to type
    pg.locator("select[name=user_id]").select_option(ALICE)
    pg.locator("textarea[name=q]").fill(task_of(served.trajectories[MINE[0]]))
    pg.get_by_role("button", name="Search").click()
    pg.wait_for_url(re.compile(r"/ui/search\?user_id=.*&q="))
    assert _sessions(pg)[0] == MINE[0]
    pg.screenshot(path=str(shots / "search.png"))

    pg.locator("li.result a.open").first.click()
    pg.wait_for_url(re.compile(r"/ui/experience\?"))
    assert pg.locator("ol.timeline li.step").count() > 0
    assert pg.locator("details.diff .highlight .gd, details.diff .highlight .gi").count() > 0
    pg.screenshot(path=str(shots / "experience.png"))
    assert all((shots / f"{name}.png").stat().st_size > 10_000 for name in ("memories", "search", "experience"))
    pg.get_by_text(re.compile(r"Show the \d+ raw messages")).click()
    assert pg.locator("ol.messages li.message").count() == len(served.trajectories[MINE[0]].messages)


def test_search_matches_the_api_and_shows_no_other_user(served: Served, page: Page) -> None:
    query = task_of(served.trajectories[MINE[1]])
    page.goto(_search_url(served, ALICE, query))
    api = httpx.post(f"{served.url}/search", json={"user_id": ALICE, "query": query, "top_k": 30}).json()["data"]
    shown = _sessions(page)
    assert shown[0] == MINE[1] and shown == [h["session_id"] for h in api][: len(shown)]
    # Bob's task, searched in Alice's memory, finds nothing of Bob's; his experience is not
    # reachable from Alice's pages either.
    page.goto(_search_url(served, ALICE, task_of(served.trajectories[THEIRS])))
    assert THEIRS not in _sessions(page) and THEIRS not in page.content()
    page.goto(f"{served.url}/ui/experience?user_id={quote(ALICE)}&session_id={THEIRS}")
    assert page.get_by_role("alert").count() == 1 and BOB not in page.content()


def test_hostile_content_stays_text(served: Served, browser: Browser) -> None:
    # The page's Content-Security-Policy would stop inline scripts anyway: bypass it, so
    # that this checks the escaping itself.
    context = browser.new_context(bypass_csp=True)
    pg = context.new_page()
    dialogs: list[str] = []
    pg.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    for path in (_search_url(served, ALICE), _search_url(served, ALICE, "title rendering page.html"),
                 f"{served.url}/ui/experience?user_id={quote(ALICE)}&session_id={XSS_SESSION}&messages=true",
                 f"{served.url}/ui/delete?user_id={quote(ALICE)}&session_id={XSS_SESSION}"):
        pg.goto(path)
        pg.wait_for_load_state("load")
        assert pg.evaluate("window.__pwned") is None, path
        assert pg.locator("img[src='x'], svg[onload]").count() == 0, path
        assert pg.get_by_text('<script>window.__pwned = "script"</script>').count() > 0, path
    assert dialogs == []
    context.close()


def test_an_experience_is_deleted_after_confirmation_and_gone_everywhere(served: Served, page: Page) -> None:
    victim = MINE[2]
    query = task_of(served.trajectories[victim])
    page.goto(_search_url(served, ALICE, query))
    assert _sessions(page)[0] == victim
    page.locator(f"li.result[data-session='{victim}'] a.open").first.click()
    page.get_by_role("link", name="delete…").click()
    page.wait_for_url(re.compile(r"/ui/delete\?"))
    page.get_by_role("button", name="Delete").click()
    page.wait_for_url(re.compile(r"/ui/search\?.*deleted="))
    assert page.get_by_role("status").count() == 1
    assert victim not in _sessions(page) and MINE[0] in _sessions(page)
    page.goto(_search_url(served, ALICE, query))
    assert victim not in _sessions(page)
    for asked in (query, task_of(served.trajectories[MINE[0]])):  # its task (may find nothing now), another's
        api = httpx.post(f"{served.url}/search", json={"user_id": ALICE, "query": asked, "top_k": 30}).json()["data"]
        assert victim not in {h["session_id"] for h in api}
    assert api and api[0]["session_id"] == MINE[0]

