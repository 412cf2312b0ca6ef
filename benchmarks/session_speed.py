"""Ten questions on one reading session against ten one-call asks, on The Moonstone.

One-call: each question opens the book and asks (`api.ask` on `api.open_document`), as a
script calling cwread per question does, in one warm Python process; session: the book is
opened once (`api.open`) and asked all ten. Both run the embedded default (its Finder is
skipped, answers are extractive, options and claims get the best evidence), the book's
index built beforehand, each from an empty call cache. The answers must be the same; the
table gives each run's seconds, the ratio, and each question's answer.

    python benchmarks/session_speed.py [--book PATH] [--out benchmarks/results/session_speed.txt]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from publish import publish  # benchmarks/, beside this script

REPO = Path(__file__).resolve().parent.parent
MOONSTONE = REPO.parent / "shared" / "data" / "novels" / "the_moonstone.txt"

# written for this benchmark (not from any dev set): what a reader of the novel might ask
QUESTIONS: list[tuple[str, list[str] | None, bool]] = [
    ("Who took the Moonstone from Rachel's cabinet?", None, False),
    ("Why did Rosanna Spearman hide the nightgown?", None, False),
    ("Where was the Diamond kept on the night it was lost?", None, False),
    ("What did Sergeant Cuff grow in his spare time?", None, False),
    ("Who are the three Indians following the Diamond?", None, False),
    ("What book does Gabriel Betteredge read for advice?", None, False),
    ("How did Colonel Herncastle get the Diamond?", None, False),
    ("Where did Rosanna Spearman hide the box?", ["A=in the Shivering Sand", "B=in the garden", "C=in the library"], False),
    ("Who painted the door of Rachel's sitting-room?", ["A=Franklin Blake and Rachel", "B=Betteredge", "C=Godfrey"], False),
    ("Franklin Blake took the Diamond while under the influence of opium.", None, True),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--book", default=str(MOONSTONE))
    parser.add_argument("--out", help="also write the table here")
    args = parser.parse_args()
    if not Path(args.book).is_file():
        print(f"no book at {args.book}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as cache:
        os.environ["CWREAD_CACHE_DIR"] = cache
        from cwread import api

        settings = api.BackendSettings(backend="embedded")
        questions = [api.make_question(t, o, claim=c) for t, o, c in QUESTIONS]
        api.index_document(api.open_document(args.book))  # both runs start from a built index

        def one_call(question):
            return api.ask(api.open_document(args.book), question, api.Settings(api.SessionSettings(backends=settings)))

        t0 = time.perf_counter()
        single = [(q, _timed(one_call, q)) for q in questions]
        t1 = time.perf_counter()
        session = api.open(args.book, api.Settings(api.SessionSettings(backends=settings)))
        held = [(q, _timed(session.ask, q)) for q in questions]
        t2 = time.perf_counter()

    lines = [
        f"python benchmarks/session_speed.py ({platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}; embedded default, index built beforehand)",
        "",
        "| # | question | one-call ask s | session s | same answer | answer [cited] |",
        "|---|---|---|---|---|---|",
    ]
    same = True
    for i, ((q, (a, sa)), (_, (b, sb))) in enumerate(zip(single, held, strict=True), start=1):
        equal = (a.answer, a.citations, a.outcome.mode) == (b.answer, b.citations, b.outcome.mode)
        same = same and equal
        shown = (b.answer or b.outcome.mode)[:40].replace("|", "/")
        lines.append(f"| {i} | {q.text[:50]} | {sa:.2f} | {sb:.2f} | {'yes' if equal else 'NO'} | {shown} {b.citations} |")
    total_single, total_session = t1 - t0, t2 - t1
    lines += [
        "",
        f"ten one-call asks: {total_single:.2f} s (median {statistics.median(s for _, (_, s) in single):.2f} s a question)",
        f"one session, ten questions: {total_session:.2f} s, opening the book included "
        f"(median {statistics.median(s for _, (_, s) in held):.2f} s a question)",
        f"session / one-call: {total_session / total_single:.2f} ({total_single / total_session:.1f}x faster); "
        f"answers {'all the same' if same else 'DIFFER'}",
    ]
    publish(lines, args.out)
    return 0 if same else 1


def _timed(call, question):
    t0 = time.perf_counter()
    trace = call(question)
    return trace, time.perf_counter() - t0


if __name__ == "__main__":
    raise SystemExit(main())
