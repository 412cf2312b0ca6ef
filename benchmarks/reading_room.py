"""The reading room's speed, warm, through its real server (`cwread serve`), and its screenshots.

Serves the dev novels (a shelf of three), on a cache of its own (a question asked before is
answered from the call cache in about 0.06 s), and times: a chapter's page (median of 10 pages), a
question's page on a novel (passages, and the default's answer where it gives one; median of the
questions, each asked once after a warm-up question), and the shelf of a 1,000-book library
(files made here; the server started on it, then its shelf page). Then Playwright, driving
Debian's chromium, takes the shelf, a question and a cast into docs/.

    python benchmarks/reading_room.py [--screenshots docs]
"""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import httpx

REPO = Path(__file__).resolve().parent.parent
NOVELS = REPO.parent / "shared" / "data" / "novels"
QUESTIONS = [  # written here for timing, not dev questions
    "Who came to the house at night?",
    "What was found in the garden?",
    "Why did the doctor leave in a hurry?",
    "Where was the letter hidden?",
    "What did the servant see from the window?",
]


CACHE = tempfile.mkdtemp(prefix="cwread-room-cache-")
atexit.register(shutil.rmtree, CACHE, ignore_errors=True)  # nothing left in /tmp


def serve(*paths: Path) -> tuple[subprocess.Popen, str]:
    server = subprocess.Popen(
        [sys.executable, "-m", "cwread", "serve", *map(str, paths), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPO,
        env={**os.environ, "CWREAD_CACHE_DIR": CACHE},
    )  # fmt: skip
    return server, server.stdout.readline().strip()


def timed(url: str) -> float:
    start = time.perf_counter()
    response = httpx.get(url, timeout=600)
    response.raise_for_status()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--screenshots", type=Path, default=None, help="write the screenshots here")
    options = parser.parse_args()
    server, url = serve(NOVELS)
    try:
        timed(url)
        timed(f"{url}book/1/read?page=3")  # the book opened, its indexes read
        pages = [timed(f"{url}book/1/read?page={n}") for n in range(4, 14)]
        timed(f"{url}book/1/ask?q={quote('Who is Franklin Blake?')}")  # the session warm
        asked = [timed(f"{url}book/1/ask?q={quote(q)}") for q in QUESTIONS]
        print(f"a chapter's page: median {1000 * statistics.median(pages):.0f} ms (target 150)")
        print(f"a question's page on a novel: median {statistics.median(asked):.2f} s, most {max(asked):.2f} s (target 1.5)")
        if options.screenshots:
            shots(url, options.screenshots)
    finally:
        server.send_signal(2)
        server.wait(timeout=30)
    with tempfile.TemporaryDirectory() as tmp:
        library = Path(tmp) / "library"
        library.mkdir()
        for n in range(1000):
            (library / f"book{n:04}.txt").write_text(
                f"Title: Book number {n}\n\nAuthor: A. Writer\n\nThe story of book {n} begins here.\n", encoding="utf-8"
            )
        start = time.perf_counter()
        big, big_url = serve(library)
        started = time.perf_counter() - start
        try:
            shelf = [timed(big_url) for _ in range(5)]
            print(f"a 1,000-book shelf: started in {started:.2f} s; its page median {1000 * statistics.median(shelf):.0f} ms (target 1 s)")
        finally:
            big.send_signal(2)
            big.wait(timeout=30)


def shots(url: str, folder: Path) -> None:
    """The shelf, a question and a cast, as a reader sees them, into `folder`."""
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1000, "height": 760})
        page.goto(url)
        page.screenshot(path=str(folder / "reading-room-shelf.png"))
        page.goto(f"{url}book/2/ask?q={quote('Who took the Moonstone from the cabinet?')}")
        page.screenshot(path=str(folder / "reading-room-question.png"))
        page.goto(f"{url}book/2/cast")
        page.screenshot(path=str(folder / "reading-room-cast.png"))
        browser.close()


if __name__ == "__main__":
    main()
