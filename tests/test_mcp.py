"""`cwread mcp` for real: the server as a subprocess over stdio, driven by the MCP SDK's own
client, on the embedded default (extractive answers: no model call)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import sys

import pytest

mcp = pytest.importorskip("mcp")
from mcp import Client, StdioServerParameters  # noqa: E402

from tests.conftest import EXAMPLES  # noqa: E402

GIANT = "the_selfish_giant.txt"
WALL = "Why did the Giant build a high wall round his garden?"


def server(tmp_path, *roots: str) -> StdioServerParameters:
    env = {
        **os.environ,
        "CWREAD_CACHE_DIR": str(tmp_path / "cache"),
        "OLLAMA_HOST": "http://127.0.0.1:9",  # nothing listens: auto picks the embedded default
    }
    env.pop("CWREAD_BACKEND", None)
    args = ["-m", "cwread", "mcp", *(a for r in roots for a in ("--root", r))]
    return StdioServerParameters(command=sys.executable, args=args, env=env)


def call(params: StdioServerParameters, *calls: tuple[str, dict]):
    """List the tools, then make `calls` in order on one connection; (tool names, results, progress)."""

    async def go():
        progress: list[tuple] = []

        async def heard(done, total, message):
            progress.append((done, total, message))

        async with Client(params, read_timeout_seconds=120) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            results = [await client.call_tool(name, args, progress_callback=heard) for name, args in calls]
        return names, results, progress

    return asyncio.run(go())


def test_the_server_lists_its_tools_and_answers_with_checked_citations(tmp_path):
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("A secret the server must not read.\n", encoding="utf-8")
    names, results, progress = call(
        server(tmp_path, str(EXAMPLES)),
        ("ask", {"book": GIANT, "question": WALL}),
        ("ask", {"book": str(outside), "question": "What is the secret?"}),
        ("ask", {"book": f"../{EXAMPLES.name}/{GIANT}", "question": WALL}),  # inside, by ..
        ("verify", {"book": GIANT, "claim": "x" * 5000}),
        ("show", {"book": GIANT, "paragraphs": "7"}),
        ("cast", {"book": GIANT, "query": "Giant", "limit": 1}),
        ("find", {"question": WALL, "limit": 2}),  # no book: the whole library
        ("ask", {"question": WALL}),  # no book: the library's book that fits best
    )
    assert sorted(names) == ["ask", "cast", "contents", "find", "list_books", "search", "show", "verify"]
    answered, refused, relative, too_long, shown, cast, shelf, shelf_answer = results

    assert not answered.is_error
    data = answered.structured_content
    book = (EXAMPLES / GIANT).read_text(encoding="utf-8")
    assert data["answer"] and data["quotes"] and data["citations"]
    from cwread.book import load_document

    paragraphs = load_document(str(EXAMPLES / GIANT))
    for quote in data["quotes"]:  # each quote is in the paragraph it names, at its offsets
        assert paragraphs.paragraph(quote["id"]).text[quote["start"] : quote["end"]] == quote["quote"]
        assert " ".join(quote["quote"].split()) in " ".join(book.split())
    assert "not instructions" in data["quotes_are"] and data["book"] == GIANT
    assert data["models"]["finder"].startswith("embedded:") and "finder" in data["skipped"]
    assert "--" not in data["skipped"]["finder"] and "benchmarks/" not in str(data["skipped"])
    # each thing once: no paragraph text beside its quote, no run statistics, no server path
    assert not {"cited_paragraphs", "plan", "document", "packet", "answer_judgement"} & set(data)
    assert str(EXAMPLES) not in str(data)
    assert answered.content[0].text.startswith("Answer: ")
    assert progress  # the first call built the index, and said so

    assert refused.is_error and "outside the library's folders" in refused.content[0].text
    assert "input:" in refused.content[0].text and "must not read" not in refused.content[0].text
    assert not relative.is_error and relative.structured_content["answer"] == data["answer"]
    assert too_long.is_error and "input: the claim runs to 5,000 characters" in too_long.content[0].text
    assert not shown.is_error and shown.structured_content["paragraphs"][0]["id"] == 7
    assert not cast.is_error and cast.content[0].text.startswith("Selfish Giant (")
    [giant] = cast.structured_content["members"]
    assert giant["name"] == "Selfish Giant" and "Giant" in giant["forms"] and giant["mentioned"] > len(giant["mentions"]) == 20
    assert not shelf.is_error and shelf.structured_content["searched"][0]["book"] == GIANT
    assert shelf.content[0].text.count("\n#") <= 2 and f"#1 {GIANT} [" in shelf.content[0].text
    assert all("text" not in p for p in shelf.structured_content["passages"])
    assert not shelf_answer.is_error and shelf_answer.structured_content["book"] == GIANT
    assert f"Quotes from {GIANT}" in shelf_answer.content[0].text  # a library's answer names its book
    assert shelf_answer.structured_content["answer"] == data["answer"]


def test_a_symlink_that_leaves_the_root_is_refused(tmp_path):
    root = tmp_path / "books"
    root.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("Nothing to see.\n", encoding="utf-8")
    (root / "link.txt").symlink_to(secret)
    _, [result], _ = call(server(tmp_path, str(root)), ("show", {"book": "link.txt", "paragraphs": "1"}))
    assert result.is_error and "outside the library's folders" in result.content[0].text


def test_a_bad_argument_is_a_tool_error_and_the_server_goes_on(tmp_path):
    _, results, _ = call(
        server(tmp_path, str(EXAMPLES)),
        ("show", {"book": GIANT}),  # no paragraphs
        ("show", {"book": GIANT, "paragraphs": "9999"}),
        ("find", {"book": GIANT, "question": WALL, "limit": 2}),
    )
    missing, out_of_range, found = results
    assert missing.is_error and out_of_range.is_error and "input:" in out_of_range.content[0].text
    assert not found.is_error
    assert sorted(rank for p in found.structured_content["passages"] for rank in p["ranks"]) == [1, 2]
    # arguments of the wrong kind and a tool that is none: a usage error as the CLI's JSON error,
    # one line of text with no validator's web address (the SDK gave pydantic's text alone)
    _, results, _ = call(
        server(tmp_path, str(EXAMPLES)),
        ("show", {"book": 5, "paragraphs": 3}),
        ("shwo", {"book": GIANT}),
        ("cast", {"book": GIANT, "name": "Giant"}),  # the SDK dropped an argument it does not take
        ("ask", {"book": GIANT, "question": "  "}),  # read before the guarded work: no reason given
    )
    said_of = (
        "show's arguments: book: Input should be a valid string",
        "no tool 'shwo'",
        "cast's arguments: no argument 'name'; it takes book, query",
        "the question is empty",
    )
    for refused, said in zip(results, said_of, strict=True):
        kind = "input" if said == "the question is empty" else "usage"
        assert refused.is_error and refused.structured_content["error"]["kind"] == kind
        assert refused.structured_content["error"]["code"] == 2 and said in refused.content[0].text
        assert "pydantic" not in refused.content[0].text and "\n" not in refused.content[0].text


def test_the_mcp_command_refuses_a_root_that_is_not_a_folder(capsys, tmp_path):
    from tests.conftest import run

    code, _, err = run(capsys, "mcp", "--root", str(tmp_path / "nope"))
    assert code == 2 and "no such folder" in err


def test_the_roots_hold_against_every_way_out(tmp_path):
    """Books.resolve, the one gate every tool goes through: standard input, `..`, an absolute
    path elsewhere, a symlink out (of a file or of a folder), a FIFO; a folder is a book."""
    from cwread import api
    from cwread.errors import InputError
    from cwread.mcp.books import Books, ServerSettings

    root, elsewhere = tmp_path / "books", tmp_path / "elsewhere"
    (root / "sub").mkdir(parents=True)
    elsewhere.mkdir()
    (root / "sub" / "ok.txt").write_text("A book.\n", encoding="utf-8")
    (elsewhere / "secret.txt").write_text("Not yours.\n", encoding="utf-8")
    (root / "door").symlink_to(elsewhere, target_is_directory=True)
    os.mkfifo(root / "pipe")
    books = Books(ServerSettings((root,), api.SessionSettings("minilm-static")))

    assert books.resolve("sub/ok.txt") == (root / "sub" / "ok.txt").resolve()
    assert books.resolve("sub/../sub/ok.txt") == (root / "sub" / "ok.txt").resolve()
    assert books.resolve("sub") == (root / "sub").resolve()  # a folder is a book
    for bad, why in [
        ("-", "standard input"),
        ("", "standard input"),
        ("../elsewhere/secret.txt", "outside"),
        (str(elsewhere / "secret.txt"), "outside"),
        ("door/secret.txt", "outside"),
        ("pipe", "not a file or a folder"),
        ("missing.txt", "no such book"),
    ]:
        with pytest.raises(InputError, match=why):
            books.resolve(bad)


def test_a_folder_under_the_root_is_a_book_cited_by_file(tmp_path):
    root = tmp_path / "books"
    novel = root / "novel"
    novel.mkdir(parents=True)
    giant = (EXAMPLES / GIANT).read_text(encoding="utf-8").split("\n\n")
    (novel / "part1.txt").write_text("\n\n".join(giant[:4]), encoding="utf-8")
    (novel / "part2.txt").write_text("\n\n".join(giant[4:]), encoding="utf-8")
    secret = tmp_path / "secret.txt"
    secret.write_text("A secret the server must not read.\n", encoding="utf-8")
    (novel / "secret.txt").symlink_to(secret)
    _, results, _ = call(
        server(tmp_path, str(root)),
        ("ask", {"book": "novel", "question": WALL}),
        ("show", {"book": "novel", "paragraphs": "part1:1"}),
    )
    answer, shown = (r.structured_content for r in results)
    assert not results[0].is_error and answer["quotes"]
    for quote in answer["quotes"]:
        assert (
            quote["id"].split(":")[0] in ("part1", "part2") and quote["id"].split(":")[1].isdigit()
        )
    assert shown["paragraphs"][0]["id"] == "part1:1"
    assert "secret.txt: a link out of the folder, not followed" in shown["skipped"]
    assert "secret the server" not in str(answer) + str(shown)


def test_every_parameter_says_what_it_takes_and_no_verdict_says_what_a_client_can_do(tmp_path):
    async def tools():
        async with Client(server(tmp_path, str(EXAMPLES)), read_timeout_seconds=120) as client:
            return (await client.list_tools()).tools

    for tool in asyncio.run(tools()):
        for name, schema in tool.input_schema["properties"].items():
            assert schema.get("description"), f"{tool.name}.{name} has no description"
    _, results, _ = call(
        server(tmp_path, str(EXAMPLES)),
        ("verify", {"book": GIANT, "claim": "The Giant built a high wall round his garden."}),
    )
    verdict = results[0].structured_content
    assert verdict["verdict"] is None and "judge_anyway" in verdict["why"]
    assert "--judge-anyway" not in verdict["why"]


def test_the_tool_list_an_agent_reads_once_fits_6000_characters(tmp_path):
    """#88: the list with its schemas, as the client receives it, in at most 6,000 characters:
    no pydantic titles, an optional argument as its type; a client that sends null for one, or
    a string where a number is wanted, is still answered (validation keeps the full signature)."""
    import json

    async def go():
        async with Client(server(tmp_path, str(EXAMPLES)), read_timeout_seconds=120) as client:
            listed = (await client.list_tools()).tools
            sent_null = await client.call_tool("find", {"book": GIANT, "question": WALL, "expand": None, "limit": 1})
            wrong = await client.call_tool("show", {"book": GIANT, "paragraphs": "7", "around": "many"})
            return listed, sent_null, wrong

    listed, sent_null, wrong = asyncio.run(go())
    wire = json.dumps([t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listed])
    assert len(wire) <= 6000 and '"title"' not in wire and '"anyOf"' not in wire
    find = next(t for t in listed if t.name == "find").input_schema["properties"]
    assert find["expand"] == {"type": "string", "description": find["expand"]["description"]}
    assert find["max_chars"]["default"] == 7000 and find["limit"]["type"] == "integer"
    assert not sent_null.is_error and "[" in sent_null.content[0].text
    assert wrong.is_error


def test_a_cancelled_call_frees_its_book_at_once(tmp_path):
    """A model call that hangs (a server that never answers): the client gives up on `ask`,
    and the next `ask` on the same book reaches the model at once, not after the first
    call's timeout (the book is held while a question is answered)."""
    import time

    import anyio

    from tests.test_faults import _HangingServer

    hanging = _HangingServer()
    try:
        params = server(tmp_path, str(EXAMPLES))
        params.args += ["--base-url", hanging.url, "--no-cache", "--timeout", "120"]

        async def go():
            async with Client(params, read_timeout_seconds=120) as client:
                with anyio.move_on_after(4):  # cancelled: the SDK tells the server
                    await client.call_tool("ask", {"book": GIANT, "question": WALL})
                first = hanging.calls
                start = time.monotonic()
                with anyio.move_on_after(15):
                    while hanging.calls == first:  # the second ask, on a task of its own
                        async with anyio.create_task_group() as group:
                            group.start_soon(
                                client.call_tool, "ask", {"book": GIANT, "question": "Who is the Giant?"}
                            )
                            while hanging.calls == first and time.monotonic() - start < 15:
                                await anyio.sleep(0.1)
                            group.cancel_scope.cancel()
                return first, time.monotonic() - start

        first, waited = asyncio.run(go())
        assert first >= 1  # the first ask reached the model and hung there
        assert hanging.calls > first and waited < 10, f"the book stayed busy {waited:.1f} s after the cancel"
    finally:
        hanging.close()


def test_a_client_that_goes_away_mid_call_ends_the_server_at_once(tmp_path):
    """stdin closed while a model call hangs: the server exits, not after the call's timeout."""
    import json
    import subprocess
    import time

    from tests.test_faults import _HangingServer

    hanging = _HangingServer()
    params = server(tmp_path, str(EXAMPLES))
    args = [*params.args, "--base-url", hanging.url, "--timeout", "120", "--no-cache"]
    proc = subprocess.Popen(
        [params.command, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=params.env,
    )
    try:

        def send(message: dict) -> None:
            proc.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
            proc.stdin.flush()

        send({"id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"},
        }})  # fmt: skip
        assert b'"id":1' in proc.stdout.readline()
        send({"method": "notifications/initialized"})
        send(
            {
                "id": 2,
                "method": "tools/call",
                "params": {"name": "ask", "arguments": {"book": GIANT, "question": WALL}},
            }
        )
        deadline = time.monotonic() + 60
        while hanging.calls == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert hanging.calls > 0
        proc.stdin.close()
        gone = time.monotonic()
        code = proc.wait(timeout=30)
        assert time.monotonic() - gone < 10
        assert code == 0  # a client that leaves ends the session: no error, no exit 70
    finally:
        proc.kill()
        hanging.close()


def test_an_agent_lists_browses_and_searches_the_library_and_nothing_outside(tmp_path):
    root = tmp_path / "library"
    (root / "letters").mkdir(parents=True)
    data = EXAMPLES.parent / "tests" / "data"
    for name in ("selfish-giant-pandoc.epub", "selfish-giant-libreoffice.pdf"):
        (root / name).write_bytes((data / name).read_bytes())
    (root / "letters" / "one.txt").write_text("Dear brother, the lamp oil came late.\n", encoding="utf-8")
    (root / ".hidden.txt").write_text("Hidden giant garden wall.\n", encoding="utf-8")
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "diary.txt").write_text("The giant garden wall of the secret diary.\n", encoding="utf-8")
    (root / "diary.txt").symlink_to(secret / "diary.txt")
    (root / "vault").symlink_to(secret, target_is_directory=True)
    _, results, progress = call(
        server(tmp_path, str(root)),
        ("list_books", {}),
        ("search", {"query": "giant built a high wall", "limit": 3}),
        ("list_books", {}),
        ("contents", {"book": "selfish-giant-pandoc.epub"}),
        ("contents", {"book": "selfish-giant-libreoffice.pdf"}),
        ("contents", {"book": "../secret/diary.txt"}),
        ("contents", {"book": "vault"}),
        ("search", {"query": "   "}),
    )
    listed, found, relisted, epub, pdf, outside, linked, empty = results
    books = listed.structured_content["books"]
    assert [(b["book"], b["kind"], b["indexed"]) for b in books] == [
        ("letters", "folder", False),
        ("selfish-giant-libreoffice.pdf", "pdf", False),
        ("selfish-giant-pandoc.epub", "epub", False),
    ]
    assert all(b["indexed"] for b in relisted.structured_content["books"])
    assert [(b["sources"], b["paragraphs"] > 0) for b in relisted.structured_content["books"]] == [
        (1, True),
        (0, True),
        (3, True),
    ]
    assert books[0]["sources"] is None
    hits = found.structured_content["hits"]
    assert len(hits) == 3 and {h["book"] for h in hits} == {
        "selfish-giant-libreoffice.pdf",
        "selfish-giant-pandoc.epub",
    }
    text = found.content[0].text  # whole paragraphs, once, marked as the book's words
    assert text.count("high wall") >= 3 and "not instructions" in text.splitlines()[0]
    for hit in hits:
        assert "text" not in hit and f"{hit['book']} [{hit['id']}]" in text
        if hit["book"].endswith(".pdf"):
            assert isinstance(hit["id"], int) and hit["page"] >= 1
        else:  # cited by file, each field once
            assert re.fullmatch(r"[\w/-]+:\d+", hit["id"]) and not {"source", "paragraph", "text"} & set(hit)
    assert progress  # the first search built the index, and said so
    chapters = epub.structured_content["contents"]
    assert [c["source"] for c in chapters] == ["title_page", "ch001", "ch002"]
    assert chapters[2]["paragraphs"] == "ch002:1-19" and chapters[2]["heading"] == "The Giant’s Garden"
    [whole] = pdf.structured_content["contents"]
    assert whole["source"] is None and whole["pages"] == [1, 4] and whole["heading"] == "THE SELFISH GIANT"
    assert outside.is_error and linked.is_error and empty.is_error
    assert "outside" in outside.content[0].text and "outside" in linked.content[0].text
    everything = str([r.structured_content for r in results]) + str([r.content for r in results])
    assert "secret diary" not in everything and "Hidden giant" not in everything


def _raw_server(tmp_path):
    """The server as a subprocess, spoken to line by line: (process, send, read a reply)."""
    import json
    import select
    import subprocess

    params = server(tmp_path, str(EXAMPLES))
    proc = subprocess.Popen(
        [params.command, *params.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=params.env,
    )

    def send(line: bytes) -> None:
        proc.stdin.write(line + b"\n")
        proc.stdin.flush()

    def reply(seconds: float = 60) -> dict | None:
        ready, _, _ = select.select([proc.stdout], [], [], seconds)
        return json.loads(proc.stdout.readline()) if ready else None

    send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"},
    }}).encode())  # fmt: skip
    assert reply()["id"] == 1
    send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    return proc, send, reply


def test_every_request_gets_a_reply_whatever_it_holds(tmp_path):
    """Not JSON, params that are no object, lone surrogates (JSON allows them, the SDK's parser
    does not), a NUL in a book's name, a search limit of 10**12: each gets its reply, and the
    server goes on."""
    proc, send, reply = _raw_server(tmp_path)
    try:
        send(b'{"jsonrpc": "2.0", "id": 2,')
        assert reply(10)["error"]["code"] == -32700
        send(b'{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": "oops"}')
        assert reply(10)["error"]["code"] == -32600
        for n, (tool, arguments) in enumerate(
            [
                ("contents", '{"book": "\\ud800"}'),
                ("search", '{"query": "giant \\udfff wall"}'),
                ("ask", '{"book": "x", "question": "\\ud83d?"}'),
            ],
            start=4,
        ):
            send(
                f'{{"jsonrpc": "2.0", "id": {n}, "method": "tools/call", "params": {{"name": "{tool}", "arguments": {arguments}}}}}'.encode()
            )
            answered = reply()
            assert answered is not None and answered["id"] == n, tool
        send(
            b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "contents", "arguments": {"book": "a\\u0000b"}}}'
        )
        nul = reply()["result"]
        assert nul["isError"] and "input: a book's path holds no NUL character" in nul["content"][0]["text"]
        send(
            b'{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "search", "arguments": {"query": "giant wall garden", "limit": 1000000000000}}}'
        )
        found = reply()["result"]["structuredContent"]
        assert len(found["hits"]) <= 100 and found["capped"] == "limit 1000000000000 capped at 100 paragraphs"
        send(b'{"jsonrpc": "2.0", "id": 9, "method": "tools/list"}')
        assert len(reply()["result"]["tools"]) == 8
    finally:
        proc.kill()
        proc.wait()


def test_a_client_that_stops_reading_ends_the_session_with_no_error(tmp_path):
    """Its replies find no reader (a broken pipe): exit 0, not 70, and no traceback."""
    import time

    proc, send, _ = _raw_server(tmp_path)
    send(
        b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search", "arguments": {"query": "giant wall"}}}'
    )
    proc.stdout.close()
    time.sleep(1)
    with contextlib.suppress(BrokenPipeError):
        send(b'{"jsonrpc": "2.0", "id": 3, "method": "tools/list"}')
        proc.stdin.close()
    assert proc.wait(timeout=30) == 0
    assert b"internal error" not in proc.stderr.read()


def test_find_and_show_give_readable_text_once_within_a_bound(tmp_path):
    hound = "the_hound_of_the_baskervilles.txt"
    _, results, _ = call(
        server(tmp_path, str(EXAMPLES)),
        (
            "find",
            {"book": hound, "question": "What did Holmes deduce from the walking stick of the automobile?"},
        ),
        ("show", {"book": hound, "paragraphs": "1-300"}),
        ("show", {"book": hound, "paragraphs": "22", "around": 2}),
        ("find", {"book": hound, "question": "the walking stick", "limit": 20}),
        ("find", {"book": hound, "question": "the walking stick", "limit": 20, "max_chars": 0}),
        ("find", {"book": hound, "question": "the walking stick", "limit": 10, "compact": True}),
    )
    found, long, near, bounded, unbounded, compact = results
    listed = compact.content[0].text.splitlines()
    assert len(listed) == 11 and all(line.startswith(f"#{i} [") for i, line in enumerate(listed[1:], start=1))
    assert "*stick*" in compact.content[0].text and len(compact.content[0].text) < 2_500
    text = found.content[0].text
    assert text.startswith(f"{hound}: 1,546 paragraphs") and str(EXAMPLES) not in text  # as the client named it
    assert compact.content[0].text.startswith(f"{hound}: ")
    assert (
        "No paragraph holds: automobile" in text
        and "#1 [" in text
        and "Chapter 1. Mr. Sherlock Holmes" in text
    )
    assert len(text) <= 7_000 + 500  # passages up to the bound, and the line naming the rest
    # built from the passages the text prints, not the CLI's JSON: each head line is a passage's
    passages = found.structured_content["passages"]
    heads = [line for line in text.splitlines() if line.startswith("#")]
    assert [h.split(" [")[0] for h in heads] == ["+".join(f"#{r}" for r in p["ranks"]) for p in passages][: len(heads)]
    assert all("text" not in p and "chapter" in p for p in passages)
    assert not {"budget", "timings", "segments", "embedder"} & set(found.structured_content)
    assert "The next passages, a line each" in bounded.content[0].text  # the best whole, the next a line each
    assert "Left out past 7,000 characters (max_chars)" in bounded.content[0].text
    assert len(bounded.content[0].text) < 7_000 + 500
    assert "Left out" not in unbounded.content[0].text and len(unbounded.content[0].text) > 17_000
    shown = long.content[0].text
    assert len(shown) < 16_000 and "Left out past 15,000 characters" in shown
    assert "(Chapter 1. Mr. Sherlock Holmes)" in shown  # a chapter's title where it begins
    assert all("text" not in p for p in long.structured_content["paragraphs"])  # the text once
    assert [p["id"] for p in near.structured_content["paragraphs"]] == [20, 21, 22, 23, 24]


def test_a_search_cancelled_mid_build_leaves_the_index_whole(tmp_path):
    """The client cancels a first search at its first progress notification (the index half
    built): the next search answers right, with no transaction left open (#79)."""
    import anyio

    root = tmp_path / "shelf"
    root.mkdir()
    paragraphs = (
        (EXAMPLES / "the_hound_of_the_baskervilles.txt").read_text(encoding="utf-8").split("\n\n")[:400]
    )
    for i in range(1, 25):
        text = [*paragraphs[:200], f"The word of this copy is zyzzyva{i}.", *paragraphs[200:]]
        (root / f"hound{i}.txt").write_text("\n\n".join(text), encoding="utf-8")

    async def go():
        async with Client(server(tmp_path, str(root)), read_timeout_seconds=120) as client:
            heard = anyio.Event()

            async def progress(done, total, message):
                heard.set()

            async with anyio.create_task_group() as group:

                async def first():
                    await client.call_tool("search", {"query": "zyzzyva3"}, progress_callback=progress)

                group.start_soon(first)
                with anyio.fail_after(60):
                    await heard.wait()
                group.cancel_scope.cancel()  # the SDK tells the server
            return [await client.call_tool("search", {"query": f"zyzzyva{i}"}) for i in (17, 3)]

    for number, result in zip((17, 3), asyncio.run(go()), strict=True):
        assert not result.is_error, result.content[0].text
        assert [h["book"] for h in result.structured_content["hits"]] == [f"hound{number}.txt"]


def test_the_server_survives_any_line(tmp_path):
    """Lines no client should send, each answered with a JSON-RPC error or ignored, and the
    server goes on: 100,000 nested brackets (they overflowed the parser's stack and ended the
    server, exit 70), a line over the bound (never held whole), bytes that are no UTF-8, a NUL,
    a message sent in two writes, a message of 10,000 keys."""
    import time

    from cwread.mcp.stdio import LINE_MOST

    proc, send, reply = _raw_server(tmp_path)
    try:
        send(b"[" * 100_000)
        assert reply(30)["error"]["code"] == -32700
        send(b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"a": ' + b"[" * 200 + b"]" * 200 + b"}}")
        assert "nested deeper" in reply(30)["error"]["message"]
        proc.stdin.write(b'{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"x": "' + b"y" * (LINE_MOST + 10))
        proc.stdin.write(b'"}}\n')
        proc.stdin.flush()
        assert "a line over" in reply(60)["error"]["message"]
        send(b'{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "contents", "arguments": {"book": "\xff\xfe\xc3("}}}')
        assert reply(30)["id"] == 4  # the bad bytes read as U+FFFD: a book not found, said
        send(b"\x00\x00\x00")
        assert reply(30)["error"]["code"] == -32700
        proc.stdin.write(b'{"jsonrpc": "2.0", "id": 5, "met')
        proc.stdin.flush()
        time.sleep(0.5)
        send(b'hod": "tools/list"}')
        assert len(reply(30)["result"]["tools"]) == 8
        keys = ", ".join(f'"k{i}": {i}' for i in range(10_000))
        send(f'{{"jsonrpc": "2.0", "id": 6, "method": "ping", "params": {{{keys}}}}}'.encode())
        assert reply(30)["id"] == 6
        for bad_id in (b'{"a": 1}', b"1.5", b"true", b"[1]", b"null"):  # passed as notifications: no reply
            send(b'{"jsonrpc": "2.0", "id": ' + bad_id + b', "method": "ping"}')
            answered = reply(30)
            assert answered["id"] is None and answered["error"]["code"] == -32600, bad_id
        # a client's error response (id null) is never answered: two peers would echo for ever
        send(b'{"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}}')
        send(b'{"jsonrpc": "2.0", "id": 7, "method": "tools/list"}')
        assert len(reply(30)["result"]["tools"]) == 8
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


def test_no_tool_hands_a_client_the_books_control_characters_raw(tmp_path):
    """A book holding an escape sequence, BEL, the 8-bit CSI and bidi controls (RLO, LRI/PDI,
    RLM): every tool's text and structured content carry visible stand-ins instead (contents
    and search returned them raw)."""
    root = tmp_path / "books"
    root.mkdir()
    hostile = "\x1b]52;c;ZWNobw==\x07 \x1b[2J \x9b31m \u202eevil\u202c \u2066iso\u2069 \u200fmark"
    prose = "The Giant walked in his garden among the peach-trees and spoke of the high wall he built"
    paragraphs = [f"CHAPTER I. THE GARDEN {hostile}"] + [
        f"{prose}, day {n}." + (f" {hostile}" if n % 10 == 0 else "") for n in range(30)
    ]
    (root / "hostile.txt").write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")
    _, results, _ = call(
        server(tmp_path, str(root)),
        ("contents", {"book": "hostile.txt"}),
        ("search", {"query": "giant garden wall"}),
        ("show", {"book": "hostile.txt", "paragraphs": "1-3"}),
        ("find", {"book": "hostile.txt", "question": "What did the Giant say of the wall?"}),
        ("find", {"book": "hostile.txt", "question": "the wall", "compact": True}),
        ("find", {"question": "the Giant's garden wall"}),
        ("cast", {"book": "hostile.txt"}),
        ("ask", {"book": "hostile.txt", "question": "What did the Giant speak of?"}),
        ("list_books", {}),
    )
    raw = set("\x1b\x07\x9b\u202e\u202c\u2066\u2069\u200f")
    for result in results:
        everything = str(result.structured_content) + "".join(c.text for c in result.content)
        assert not raw & set(everything), (result.content[0].text[:200], raw & set(everything))
    assert "\u241b]52" in results[0].content[0].text  # the escape shown as ␛, the text kept


def test_the_docs_client_and_configuration_run_as_written(tmp_path):
    """docs/chat-and-mcp.md's client configuration names `cwread mcp --root`, and its Python
    client, run as a reader copies it, prints the passages and a cited answer."""
    import json
    import subprocess

    from tests.conftest import REPO

    page = (REPO / "docs" / "chat-and-mcp.md").read_text(encoding="utf-8")
    config = json.loads(page.split("```json\n", 1)[1].split("```", 1)[0])
    assert config["mcpServers"]["cwread"]["command"] == "cwread"
    assert config["mcpServers"]["cwread"]["args"][:2] == ["mcp", "--root"]
    client = page.split("```python\n", 1)[1].split("```", 1)[0]
    assert len([line for line in client.splitlines() if line.strip()]) <= 15
    env = {
        **os.environ,
        "CWREAD_CACHE_DIR": str(tmp_path / "cache"),
        "OLLAMA_HOST": "http://127.0.0.1:9",
        "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    env.pop("CWREAD_BACKEND", None)
    done = subprocess.run(
        [sys.executable, "-c", client], cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(r"^\[7\] \"My own garden is my own garden", done.stdout, re.M)
    assert re.search(r"\[7\]\]?$", done.stdout.strip()), done.stdout[-300:]


def test_a_readers_limit_bounds_find_cast_and_ask(tmp_path):
    _, results, _ = call(
        server(tmp_path, str(EXAMPLES)),
        ("find", {"book": GIANT, "question": WALL, "upto": "5", "limit": 8}),
        ("find", {"book": GIANT, "question": WALL, "limit": 8}),
        ("cast", {"book": GIANT, "upto": "3"}),
        ("find", {"question": WALL, "upto": "5"}),  # the whole library: no one book to limit
    )
    limited, whole, cast, library = results
    assert not limited.is_error and all(p["end"] <= 5 for p in limited.structured_content["passages"])
    assert "[7]" not in limited.content[0].text and "[7]" in whole.content[0].text
    assert not cast.is_error and all(max(m["mentions"]) <= 3 for m in cast.structured_content["members"])
    assert library.is_error and "give the book too" in library.content[0].text
