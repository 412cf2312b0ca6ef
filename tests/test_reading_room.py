"""The reading room (`cwread serve`): its pages through Starlette's test client (the browser
itself drives it in test_reading_room_browser.py, in the slow lane), and the server through the
real CLI: its URL first on stdout, a port in use one line and exit 2."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from urllib.parse import quote

import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient

from cwread import api
from cwread.web.app import Room, make_app
from tests.conftest import EXAMPLES, REPO
from tests.test_passages import ANSWER, novel  # noqa: F401  (the fixture)

HOSTILE = (
    "THE TRAP\n\nThe page said <script>alert(1)</script> and then <img src=x onerror=alert(1)> "
    "and <a href=\"javascript:alert(1)\">a link</a> &amp; an \u202eevil\u202c turn.\n\n"
    "The keeper read it twice and laughed.\n"
)


@pytest.fixture
def room(tmp_path, novel, cache_dir):  # noqa: F811
    trap = tmp_path / "trap.txt"
    trap.write_text(HOSTILE, encoding="utf-8")
    served = Room([EXAMPLES / "the_selfish_giant.txt", novel, trap], api.SessionSettings())
    return TestClient(make_app(served), base_url="http://127.0.0.1:8765")


def test_the_shelf_a_book_and_its_pages(room):
    shelf = room.get("/")
    assert shelf.status_code == 200 and "the_selfish_giant.txt" in shelf.text and "keeper.txt" in shelf.text
    assert "script-src 'self'" in shelf.headers["content-security-policy"]
    contents = room.get("/book/2")
    assert "CHAPTER VII. THE CHAPEL" in contents.text and 'name="q"' in contents.text
    page = room.get("/book/2/read?at=684")
    assert page.status_code == 200 and 'id="p684" class="paragraph at"' in page.text
    assert len(re.findall(r'<p id="p\d+"', page.text)) <= 250  # a page, never the whole book
    assert 'rel="next"' in page.text and 'rel="prev"' in page.text


def test_a_question_shows_its_passages_each_linked_into_the_book(room, novel):  # noqa: F811
    asked = room.get(f"/book/2/ask?q={quote('Where did Silas hide the brass key?')}")
    assert asked.status_code == 200 and ANSWER in asked.text
    first = re.search(r'<section class="passage" id="passage-1">\s*<h3><a href="([^"]+)">#1', asked.text)
    assert first and "CHAPTER VII. THE CHAPEL" in asked.text
    opened = room.get(first.group(1).replace("&amp;", "&"))
    assert opened.status_code == 200 and 'class="paragraph at"' in opened.text
    assert "No answer given" in asked.text and "where the book answers it" in asked.text.lower()
    told = room.get(f"/book/1/ask?q={quote('Why did the Giant build a high wall round his garden?')}")
    assert "Answer:" in told.text and "<mark>" in told.text  # a short text's answer, its quote marked


def test_the_readers_limit_bounds_the_question_and_the_cast(room):
    bounded = room.get(f"/book/2/ask?q={quote('Where did Silas hide the brass key?')}&upto=ch6")
    assert bounded.status_code == 200 and ANSWER not in bounded.text and "Read up to ch6" in bounded.text
    shown = [int(n) for n in re.findall(r'class="id" href="[^"]*">\[(\d+)\]', bounded.text)]
    assert shown and max(shown) <= 632  # the end of chapter VI
    cast = room.get("/book/2/cast?upto=ch1")
    firsts = [int(n) for n in re.findall(r"first <a [^>]*>\[(\d+)\]", cast.text)]
    assert firsts and max(firsts) <= 107
    bad = room.get("/book/2/ask?q=key&upto=ch40")
    assert bad.status_code == 400 and "the reading limit" in bad.text
    for said in ("abc", "", "%ff"):  # Python's own words were shown: "invalid literal for int() ..."
        bad = room.get(f"/book/2/read?page={said}")
        assert bad.status_code == 400 and "no page " in bad.text and "number, 1 to " in bad.text
        assert "invalid literal" not in bad.text


def test_the_book_is_data_and_the_server_serves_only_its_books(room):
    page = room.get("/book/3/read?page=1")
    assert "<script>alert" not in page.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert "<img" not in page.text and 'href="javascript' not in page.text and "\u202e" not in page.text
    assert room.get("/", headers={"host": "rebinding.example"}).status_code == 400
    for path in ("/static/../app.py", "/static/%2e%2e/app.py", "/book/9", "/book/0/read", "/etc/passwd"):
        response = room.get(path)
        assert response.status_code in (400, 404) and "def make_app" not in response.text, path
    search = room.get(f"/search?q={quote('brass key')}")
    assert search.status_code == 200 and "keeper.txt [684]" in search.text


def test_serve_prints_its_url_first_and_a_port_in_use_is_one_line(tmp_path):
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    env = {"CWREAD_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "cwread", "serve", str(EXAMPLES / "the_selfish_giant.txt"), "--port", str(port)],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=60, check=False,
    )  # fmt: skip
    busy.close()
    assert done.returncode == 2 and done.stderr.strip() == f"cwread: error: port {port} is in use on 127.0.0.1: give another with --port (0: any free one)"
    server = subprocess.Popen(
        [sys.executable, "-m", "cwread", "serve", str(EXAMPLES / "the_selfish_giant.txt"), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO,
    )  # fmt: skip
    try:
        url = server.stdout.readline().strip()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", url)
        import httpx

        for _ in range(50):
            try:
                shelf = httpx.get(url, timeout=5)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        assert shelf.status_code == 200 and "the_selfish_giant.txt" in shelf.text
    finally:
        server.send_signal(2)  # Ctrl-C
        server.wait(timeout=10)


def test_a_shelf_given_puts_each_of_its_books_on_the_shelf(tmp_path, cache_dir):
    from tests.test_shelving import _gutenberg, _write

    shelf = _write(tmp_path / "novels", {
        "lamp.txt": _gutenberg("The Lamp", "A. Keeper"), "tide.txt": _gutenberg("The Tide", "A. Keeper"),
    })  # fmt: skip
    client = TestClient(make_app(Room([shelf], api.SessionSettings())), base_url="http://127.0.0.1:8765")
    listed = client.get("/").text
    assert "lamp.txt" in listed and "tide.txt" in listed and "/book/2" in listed
    found = client.get(f"/search?q={quote('the keeper climbed the stair')}").text
    assert "lamp.txt [" in found and "tide.txt [" in found
