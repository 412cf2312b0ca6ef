"""The reading room in a real browser: Playwright driving Debian's chromium (headless) against
`cwread serve` started through the real CLI. The slow lane (the README's slow-lane command
installs chromium where it is missing)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from urllib.parse import quote

import pytest

from tests.conftest import EXAMPLES, REPO
from tests.test_passages import ANSWER, novel  # noqa: F401  (the fixture)

pytestmark = pytest.mark.slow
playwright = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

HOSTILE = (
    "THE TRAP\n\nThe page said <script>alert(1)</script> and then <img src=x onerror=alert(1)> "
    "and it ended.\n\nThe keeper read it twice and laughed.\n"
)


@pytest.fixture
def served(tmp_path, novel, cache_dir):  # noqa: F811
    assert CHROMIUM, "chromium is not installed: the README's slow-lane command installs it"
    trap = tmp_path / "trap.txt"
    trap.write_text(HOSTILE, encoding="utf-8")
    server = subprocess.Popen(
        [sys.executable, "-m", "cwread", "serve", str(EXAMPLES / "the_selfish_giant.txt"), str(novel), str(trap),
         "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
    )  # fmt: skip
    url = server.stdout.readline().strip()
    try:
        yield url
    finally:
        server.send_signal(2)
        server.wait(timeout=10)


@pytest.fixture
def page(served):
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        tab = browser.new_page()
        dialogs: list[str] = []
        tab.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        tab.dialogs = dialogs
        tab.base = served
        yield tab
        browser.close()


def test_the_shelf_a_chapter_and_a_question_read_in_the_browser(page):
    page.goto(page.base)
    assert page.locator("ul.shelf li").count() == 3
    page.click("text=keeper.txt")
    page.click("text=CHAPTER VII. THE CHAPEL")
    assert page.locator("article.text p.paragraph").count() > 50
    assert page.locator("#p684").inner_text().startswith("[684]")
    page.keyboard.press("/")  # the keys: / to the question box
    page.keyboard.type("Where did Silas hide the brass key?")
    page.keyboard.press("Enter")
    page.wait_for_selector("section.passage")
    assert ANSWER in page.locator("section.passage").first.inner_text()
    page.keyboard.press("j")
    assert "current" in (page.locator("section.passage").first.get_attribute("class") or "")
    page.locator("section.passage h3 a").first.click()
    page.wait_for_selector(".paragraph.at")
    highlighted = page.locator(".paragraph.at")
    in_view = "e => { const r = e.getBoundingClientRect(); return r.bottom > 0 && r.top < innerHeight; }"
    assert highlighted.is_visible() and highlighted.evaluate(in_view)  # scrolled to, on screen


def test_the_readers_limit_is_kept_and_drops_what_lies_past_it(page):
    page.goto(f"{page.base}book/2")
    page.fill("#upto-field", "ch6")
    page.click("#limit button[type=submit]")
    page.goto(f"{page.base}book/2/ask?q={quote('Where did Silas hide the brass key?')}")
    page.wait_for_url("**upto=ch6**")  # the kept limit, sent with the question
    assert ANSWER not in page.content() and "Read up to ch6" in page.content()
    page.click("#forget")
    page.wait_for_load_state()
    assert ANSWER in page.content()


def test_a_hostile_book_runs_nothing_and_other_hosts_are_refused(page):
    page.goto(f"{page.base}book/3/read?page=1")
    text = page.locator("article.text").inner_text()
    assert "<script>alert(1)</script>" in text and "<img src=x onerror=alert(1)>" in text
    assert page.dialogs == [] and page.locator("article.text img, article.text script").count() == 0
    port = page.base.rsplit(":", 1)[1].strip("/")
    refused = page.request.get(f"http://127.0.0.1:{port}/", headers={"Host": "rebinding.example"})
    assert refused.status == 400
    outside = page.request.get(f"{page.base}static/..%2f..%2fapp.py")
    assert outside.status == 404
