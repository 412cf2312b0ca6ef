"""A library's index shared on a real PostgreSQL server (#92), through the real CLI and MCP:
members indexing at once (each book written once, a second member's copy at another path
writing nothing), a search during a build, books changed, removed and added, a build killed
with SIGKILL, the server stopped under a search, hostile titles and queries, bad URLs and
credentials (the password never printed), another cwread's schema. No mock of the database:
tests/postgres_server.py starts one."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES
from tests.postgres_server import MEMBER_PASSWORD, remove_server, start_server

pytestmark = pytest.mark.slow
psycopg = pytest.importorskip("psycopg")  # the dev install (the slow lane's) holds the postgres extra

BOOKS = 6
TABLES = {"cwread_schema", "cwread_libraries", "cwread_books", "cwread_paragraphs", "cwread_terms"}


@pytest.fixture(scope="module")
def server():
    started = start_server()
    yield started
    remove_server(started)


@pytest.fixture(scope="module")
def shelf(tmp_path_factory):
    """Six copies of the Hound, each with a word of its own inside the story."""
    folder = tmp_path_factory.mktemp("shelf") / "hounds"
    folder.mkdir()
    paragraphs = (EXAMPLES / "the_hound_of_the_baskervilles.txt").read_text(encoding="utf-8").split("\n\n")
    for i in range(1, BOOKS + 1):
        text = [*paragraphs[:200], f"The word of this copy is zyzzyva{i}.", *paragraphs[200:]]
        (folder / f"hound{i}.txt").write_text("\n\n".join(text), encoding="utf-8")
    return folder


def spawn(cache: Path, *args: str, **env: str) -> subprocess.Popen:
    environment = {key: value for key, value in os.environ.items() if key != "CWREAD_LIBRARY_URL"}
    environment |= {"CWREAD_CACHE_DIR": str(cache), **env}
    return subprocess.Popen(
        [sys.executable, "-m", "cwread", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=environment,
    )  # fmt: skip


def cwread(cache: Path, *args: str, **env: str) -> tuple[int, str, str]:
    done = spawn(cache, *args, **env)
    out, err = done.communicate(timeout=600)
    assert "Traceback" not in err, err
    return done.returncode, out, err


def hit_books(out: str) -> list[str]:
    return [hit["book"] for hit in json.loads(out)["hits"]]


def held(server, library: str) -> dict[str, tuple[int, int]]:
    """Each book the server holds of `library`: (rows it says it has, rows it has)."""
    rows = server.sql(
        "SELECT b.name, b.rows, count(p.id) FROM cwread_books b JOIN cwread_libraries l ON l.id = b.library "
        "LEFT JOIN cwread_paragraphs p ON p.book = b.id WHERE l.name = %s GROUP BY b.id",
        arguments=(library,),
    )
    return {name: (said, found) for name, said, found in rows}


def test_a_shared_index_finds_what_the_local_one_finds(server, shelf, tmp_path):
    url = server.url() + "?library=parity"
    code, out, err = cwread(tmp_path / "a", "index", str(shelf), "--library-url", url, "--json")
    assert code == 0, err
    built = json.loads(out)
    assert built["books"] == BOOKS and built["read"] == BOOKS and built["paragraphs"] > 1000 * BOOKS
    assert "library parity" in built["index"] and MEMBER_PASSWORD not in out + err
    for i in (1, 4, 6):
        shared = cwread(tmp_path / "a", "search", str(shelf), f"zyzzyva{i}", "--json", "--library-url", url)
        local = cwread(tmp_path / "b", "search", str(shelf), f"zyzzyva{i}", "--json")
        assert hit_books(shared[1]) == hit_books(local[1]) == [f"hound{i}.txt"]
    query = "the hound on the moor at night"
    shared = json.loads(cwread(tmp_path / "a", "search", str(shelf), query, "--json", "--limit", "5", "--library-url", url)[1])
    local = json.loads(cwread(tmp_path / "b", "search", str(shelf), query, "--json", "--limit", "5")[1])
    assert [h["id"] for h in shared["hits"]][:3] == [h["id"] for h in local["hits"]][:3]  # BM25 as FTS5 ranks
    books = held(server, "parity")
    assert sorted(books) == [f"hound{i}.txt" for i in range(1, BOOKS + 1)]
    assert all(said == found for said, found in books.values())


def test_members_indexing_at_once_write_each_book_once(server, shelf, tmp_path):
    """Two members at once on one library; a third whose copy lies at another path (another
    machine's) finds every book held and writes none."""
    url = server.url() + "?library=together"
    from cwread.library.postgres import PostgresStore, library_url

    PostgresStore(library_url(url, "unused")).close()  # the tables, for the test's log of writes
    server.sql(
        "CREATE TABLE put_log (name text); "
        "CREATE FUNCTION log_put() RETURNS trigger SECURITY DEFINER LANGUAGE plpgsql AS "
        "$$ BEGIN INSERT INTO put_log VALUES (NEW.name); RETURN NEW; END $$; "
        "CREATE TRIGGER log_put AFTER INSERT ON cwread_books FOR EACH ROW EXECUTE FUNCTION log_put()"
    )
    try:
        running = [spawn(tmp_path / f"member{i}", "index", str(shelf), "--library-url", url) for i in (1, 2)]
        for done in running:
            _, err = done.communicate(timeout=600)
            assert done.returncode == 0 and "Traceback" not in err, err
        elsewhere = tmp_path / "another machine" / shelf.name
        shutil.copytree(shelf, elsewhere)
        code, out, err = cwread(tmp_path / "member3", "index", str(elsewhere), "--library-url", url, "--json")
        assert code == 0 and json.loads(out)["read"] == 0, err
        writes = server.sql("SELECT name, count(*) FROM put_log GROUP BY name")
        assert sorted(writes) == [(f"hound{i}.txt", 1) for i in range(1, BOOKS + 1)]
        assert all(said == found for said, found in held(server, "together").values())
    finally:
        server.sql("DROP TRIGGER log_put ON cwread_books; DROP FUNCTION log_put(); DROP TABLE put_log")


def test_a_search_during_a_build_finds_whole_books(server, shelf, tmp_path):
    url = server.url() + "?library=during"
    builder = spawn(tmp_path / "builder", "index", str(shelf), "--library-url", url)
    time.sleep(1.0)
    searches = [spawn(tmp_path / "reader", "search", str(shelf), f"zyzzyva{i}", "--json", "--library-url", url) for i in (2, 5)]
    for number, done in zip((2, 5), searches, strict=True):
        out, err = done.communicate(timeout=600)
        assert done.returncode == 0 and "Traceback" not in err, err
        assert hit_books(out) == [f"hound{number}.txt"]
    _, err = builder.communicate(timeout=600)
    assert builder.returncode == 0, err
    assert len(held(server, "during")) == BOOKS and all(s == f for s, f in held(server, "during").values())


def test_a_search_sees_one_version_of_a_book_while_a_member_replaces_it(server, monkeypatch):
    """A search of several statements (the counts, then the MaxScore passes) reads one snapshot:
    a member replacing the book between two passes changes nothing it returns."""
    from cwread.library import postgres
    from cwread.library.postgres import PostgresStore, library_url
    from cwread.library.store import HeldBook

    url = server.url() + "?library=versions"
    writer, reader = (PostgresStore(library_url(url, "unused")) for _ in range(2))

    def version(word: str) -> list[tuple[int, None, str]]:
        # the second version's first paragraphs say "mid" ten times: they would rank first
        kinds = ["rare"] * 3 if word == "one" else [" ".join(["mid"] * 10)] * 3
        kinds += ["mid"] * 10 + ["filler"] * 87
        return [(i, None, f"A {kind} paragraph, version {word}.") for i, kind in enumerate(kinds, start=1)]

    writer.put(HeldBook("a.txt", "one", (), 100, {}), version("one"))
    passes = []
    original = postgres._Search.run

    def run(self, *args, **kwargs):
        hits = original(self, *args, **kwargs)
        if not passes:  # between the first pass and the next, the book is replaced
            writer.put(HeldBook("a.txt", "two", (), 100, {}), version("two"))
        passes.append(len(hits))
        return hits

    monkeypatch.setattr(postgres._Search, "run", run)
    hits = reader.search("rare mid", 3)
    assert len(passes) >= 2, passes  # the test's point: more than one pass
    assert len({h.id for h in hits}) == len(hits) == 3
    assert {h.text.rsplit(" ", 1)[-1] for h in hits} == {"one."}
    assert {h.text.rsplit(" ", 1)[-1] for h in reader.search("rare mid", 3)} == {"two."}


def test_bm25_is_what_the_stored_rows_give(server, shelf, tmp_path, monkeypatch):
    """The search's scores against BM25 computed here from the paragraphs' own terms and counts
    taken afresh (FTS5's formula), and a member that does not own the tables reads and writes."""
    import math

    monkeypatch.setenv("CWREAD_CACHE_DIR", str(tmp_path / "cache"))
    from cwread.library.catalog import Library

    server.sql("CREATE ROLE visitor LOGIN PASSWORD 'visitor-pass-1'", "postgres")
    server.sql("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO visitor")
    server.sql("GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO visitor")
    url = f"postgresql://visitor:visitor-pass-1@127.0.0.1:{server.port}/team?library=formula"
    library = Library((shelf,), url=url)
    library.sync()
    where = "JOIN cwread_books b ON b.id = p.book JOIN cwread_libraries l ON l.id = b.library WHERE l.name = 'formula'"
    total, words = server.sql(f"SELECT count(*), sum(p.words) FROM cwread_paragraphs p {where}")[0]
    for question in ("Why did Sir Henry's boot go missing at the hotel?", "zyzzyva5 moor convict"):
        hits = library.store().search(question, 8)
        lexemes = [r[0] for r in server.sql("SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', %s))", arguments=(question,))]
        holding = {
            lexeme: server.sql(f"SELECT count(*) FROM cwread_paragraphs p {where} AND p.terms @@ %s::tsquery",
                               arguments=(f"'{lexeme}'",))[0][0]
            for lexeme in lexemes
        }  # fmt: skip
        for hit in hits:
            row = server.sql(
                "SELECT p.words, u.lexeme, cardinality(u.positions) FROM cwread_paragraphs p JOIN cwread_books b "
                "ON b.id = p.book JOIN cwread_libraries l ON l.id = b.library, unnest(p.terms) u "
                "WHERE l.name = 'formula' AND b.name = %s AND p.id = %s",
                arguments=(hit.book, hit.id),
            )
            expected = 0.0
            for length, lexeme, tf in row:
                if holding.get(lexeme):
                    idf = max(math.log((total - holding[lexeme] + 0.5) / (holding[lexeme] + 0.5)), 1e-6)
                    expected += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / (words / total)))
            assert abs(hit.score - expected) < 1e-6 * max(1.0, expected), (question, hit, expected)


def test_a_phrase_of_stop_words_is_found_in_the_text(server, tmp_path):
    shelf = tmp_path / "play"
    shelf.mkdir()
    (shelf / "hamlet.txt").write_text("To be, or not to be: that is the question.\n\nTo sleep.\n", encoding="utf-8")
    code, out, err = cwread(
        tmp_path / "c", "search", str(shelf), '"to be or not to be"', "--json", "--library-url", server.url() + "?library=play"
    )
    assert code == 0 and [h["id"] for h in json.loads(out)["hits"]] == [1], err


def test_books_changed_removed_and_added_between_searches(server, tmp_path):
    shelf = tmp_path / "changing"
    shelf.mkdir()
    (shelf / "a.txt").write_text("The quokka sat on the wall.\n\nNothing else.\n", encoding="utf-8")
    (shelf / "b.txt").write_text("A wombat dug under the fence.\n", encoding="utf-8")
    url = server.url() + "?library=changing"

    def found(word: str) -> list[str]:
        code, out, err = cwread(tmp_path / "cache", "search", str(shelf), word, "--json", "--library-url", url)
        assert code in (0, 4), err
        return hit_books(out) if out.strip() else []

    assert found("quokka") == ["a.txt"] and found("wombat") == ["b.txt"]
    (shelf / "a.txt").write_text("The numbat sat on the wall.\n", encoding="utf-8")
    assert found("numbat") == ["a.txt"] and found("quokka") == []
    (shelf / "b.txt").unlink()
    assert found("wombat") == []
    (shelf / "c.txt").write_text("Another wombat, in another book.\n", encoding="utf-8")
    assert found("wombat") == ["c.txt"]
    assert sorted(held(server, "changing")) == ["a.txt", "c.txt"]
    counted = server.sql(  # the term counts BM25 reads, kept through the changes, against a recount
        "SELECT t.lexeme, t.paragraphs FROM cwread_terms t JOIN cwread_libraries l ON l.id = t.library "
        "WHERE l.name = 'changing' AND t.paragraphs > 0 ORDER BY 1"
    )
    recounted = server.sql(
        "SELECT u.lexeme, count(*) FROM cwread_paragraphs p JOIN cwread_books b ON b.id = p.book "
        "JOIN cwread_libraries l ON l.id = b.library, unnest(p.terms) u WHERE l.name = 'changing' GROUP BY 1 ORDER BY 1"
    )
    assert counted == recounted and ("numbat", 1) in counted


def test_the_best_hits_are_those_of_every_match_ranked(server, shelf, tmp_path, monkeypatch):
    """A search for the best few skips the rows that cannot reach them (MaxScore): the same
    hits, in the same order, as every match ranked."""
    monkeypatch.setenv("CWREAD_CACHE_DIR", str(tmp_path / "cache"))
    from cwread.library.catalog import Library

    store = Library((shelf,), url=server.url() + "?library=maxscore")
    store.sync()
    questions = [
        "Why did Sir Henry's boot go missing at the hotel?", "the hound on the moor at night",
        "Dr. Mortimer's stick and the curse of the Baskervilles", '"Sir Henry" boot', "zyzzyva2 moor",
    ]  # fmt: skip
    for question in questions:
        every = [(h.book, h.id) for h in store.store().search(question, 0)]
        for limit in (1, 5, 40):
            assert [(h.book, h.id) for h in store.store().search(question, limit)] == every[:limit], (question, limit)


@pytest.mark.parametrize("after", [0.8, 2.5])
def test_a_build_killed_with_sigkill_is_finished_by_the_next_search(server, shelf, tmp_path, after):
    url = server.url() + f"?library=killed{after}"
    first = spawn(tmp_path / "cache", "index", str(shelf), "--library-url", url)
    time.sleep(after)
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=60)
    for name, (said, found) in held(server, f"killed{after}").items():  # no book half written
        assert said == found, name
    code, out, err = cwread(tmp_path / "cache", "search", str(shelf), "zyzzyva3", "--json", "--library-url", url)
    assert code == 0 and hit_books(out) == ["hound3.txt"], err
    assert len(held(server, f"killed{after}")) == BOOKS


def test_the_server_stopped_under_a_search_is_one_line_and_exit_3(server, tmp_path, monkeypatch):
    shelf = tmp_path / "small"
    shelf.mkdir()
    shutil.copy(EXAMPLES / "the_selfish_giant.txt", shelf / "giant.txt")
    url = server.url() + "?library=stopped"
    monkeypatch.setenv("CWREAD_CACHE_DIR", str(tmp_path / "in-process"))
    from cwread.errors import CacheError
    from cwread.library.catalog import Library

    library = Library((shelf,), url=url)  # a server's connection held open, as MCP's is
    assert [h.book for h in library.search("giant wall", 3).hits][:1] == ["giant.txt"]
    server.stop("immediate")
    try:
        with pytest.raises(CacheError) as raised:
            library.search("giant wall", 3)
        assert "cannot be" in str(raised.value) and MEMBER_PASSWORD not in str(raised.value)
        code, out, err = cwread(tmp_path / "cli", "search", str(shelf), "giant", "--library-url", url, "--json")
        assert code == 3 and len(err.strip().splitlines()) == 1 and "cannot be reached" in err
        assert json.loads(out)["error"]["code"] == 3 and MEMBER_PASSWORD not in out + err
    finally:
        server.start()
    assert [h.book for h in library.search("giant wall", 3).hits][:1] == ["giant.txt"]  # connected again


def test_hostile_titles_and_queries_are_data(server, tmp_path):
    shelf = tmp_path / "hostile"
    shelf.mkdir()
    title = "O'Brien \"Notes\"; DROP TABLE cwread_books; --.txt"
    (shelf / title).write_text("The aardvark's ledger; SELECT * FROM pg_user; -- closed.\n", encoding="utf-8")
    (shelf / "plain.txt").write_text("Nothing to see.\n", encoding="utf-8")
    url = server.url() + "?library=it's%20hostile"
    cache = tmp_path / "cache"
    code, out, err = cwread(cache, "search", str(shelf), "aardvark", "--json", "--library-url", url)
    assert code == 0 and hit_books(out) == [title], err
    code, out, err = cwread(cache, "search", str(shelf), "ledger", "--json", "--books", "O'Brien*", "--library-url", url)
    assert code == 0 and hit_books(out) == [title], err
    for query in ["'; DROP TABLE cwread_books; --", "a & b | !c :* \\ '' \"", "%s %(x)s {} $1", '"unclosed ledger']:
        code, out, err = cwread(cache, "search", str(shelf), query, "--json", "--library-url", url)
        assert code in (0, 2, 4) and "Traceback" not in err, (query, err)
    tables = {row[0] for row in server.sql("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
    assert tables >= TABLES and held(server, "it's hostile")[title][0] == 1


def test_bad_urls_and_credentials_are_one_line_and_never_show_the_password(server, tmp_path):
    shelf = tmp_path / "one"
    shelf.mkdir()
    shutil.copy(EXAMPLES / "the_selfish_giant.txt", shelf / "giant.txt")
    cache = tmp_path / "cache"
    wrong = "Wrong-Pass-9876"
    cases = [
        (server.url(password=wrong), 2, "refused"),
        (server.url(database="nowhere"), 2, "refused"),
        ("mysql://member@127.0.0.1/team", 2, "postgresql://"),
        (server.url() + "?sslmode=nonsense", 2, ""),
        (f"postgresql://member:{MEMBER_PASSWORD}@127.0.0.1:9/team", 3, "cannot be reached"),
    ]
    for url, exit_code, said in cases:
        for extra in ([], ["--json"]):
            code, out, err = cwread(cache, "search", str(shelf), "giant", "--library-url", url, *extra)
            assert code == exit_code and said in err and len(err.strip().splitlines()) == 1, (url, err)
            assert MEMBER_PASSWORD not in out + err and wrong not in out + err
    # the environment and the settings file take it too, and neither shows it
    settings = tmp_path / "settings.toml"
    code, out, err = cwread(cache, "search", str(shelf), "giant", "--json", CWREAD_LIBRARY_URL=server.url() + "?library=env")
    assert code == 0 and hit_books(out)[:1] == ["giant.txt"] and "env" in {n for (n,) in server.sql("SELECT name FROM cwread_libraries")}
    code, out, err = cwread(cache, "config", "set", "library_url", server.url(), CWREAD_CONFIG=str(settings))
    assert code == 0 and MEMBER_PASSWORD not in out + err
    code, out, err = cwread(cache, "config", "show", CWREAD_CONFIG=str(settings))
    assert code == 0 and "member:***@127.0.0.1" in out and MEMBER_PASSWORD not in out + err


def test_another_cwreads_schema_is_refused_with_a_line(server, tmp_path):
    shelf = tmp_path / "one"
    shelf.mkdir()
    shutil.copy(EXAMPLES / "the_selfish_giant.txt", shelf / "giant.txt")
    server.sql("CREATE DATABASE old OWNER member", "postgres")
    url = server.url(database="old")
    assert cwread(tmp_path / "c", "search", str(shelf), "giant", "--library-url", url)[0] == 0
    for version, said in ((0, "older cwread"), (99, "newer cwread")):
        server.sql(f"UPDATE cwread_schema SET version = {version}", "old")
        code, _out, err = cwread(tmp_path / "c", "search", str(shelf), "giant", "--library-url", url)
        assert code == 3 and said in err and len(err.strip().splitlines()) == 1, err


def test_mcp_and_find_and_ask_read_the_shared_index(server, tmp_path):
    mcp = pytest.importorskip("mcp")
    from tests.test_mcp import call
    from tests.test_mcp import server as mcp_server

    shelf = tmp_path / "shared"
    shelf.mkdir()
    for name in ("the_selfish_giant.txt", "the_hound_of_the_baskervilles.txt"):
        shutil.copy(EXAMPLES / name, shelf / name)
    url = server.url() + "?library=faces"
    params = mcp_server(tmp_path, str(shelf))
    params.args = [*params.args, "--library-url", url]
    _, results, _ = call(params, ("search", {"query": "giant garden wall", "limit": 2}))
    assert not results[0].is_error and "the_selfish_giant.txt" in str(results[0].structured_content)
    assert sorted(held(server, "faces")) == ["the_hound_of_the_baskervilles.txt", "the_selfish_giant.txt"]
    code, out, err = cwread(
        tmp_path / "c", "find", str(shelf), "Why did the Giant build a high wall?", "--library", "--json",
        "--library-url", url,
    )
    assert code == 0 and "the_selfish_giant.txt" in out, err
    code, out, err = cwread(
        tmp_path / "c", "ask", str(shelf), "Why did the Giant build a high wall?", "--library", "--json",
        "--library-url", url, OLLAMA_HOST="http://127.0.0.1:9",
    )
    assert code in (0, 4) and json.loads(out)["document"]["path"].endswith("the_selfish_giant.txt"), err
    assert mcp is not None


def test_the_reading_room_searches_the_shared_index(server, tmp_path, monkeypatch):
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from cwread import api
    from cwread.web.app import Room, make_app

    monkeypatch.setenv("CWREAD_CACHE_DIR", str(tmp_path / "cache"))
    shelf = tmp_path / "room"
    shelf.mkdir()
    for name in ("the_selfish_giant.txt", "the_hound_of_the_baskervilles.txt"):
        shutil.copy(EXAMPLES / name, shelf / name)
    room = Room([shelf], api.SessionSettings(library_url=server.url() + "?library=room"))
    page = TestClient(make_app(room), base_url="http://127.0.0.1:8765").get("/search", params={"q": "giant garden"})
    assert page.status_code == 200 and "giant" in page.text.lower()
    assert sorted(held(server, "room")) == ["the_hound_of_the_baskervilles.txt", "the_selfish_giant.txt"]
