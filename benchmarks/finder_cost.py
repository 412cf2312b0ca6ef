"""Where a Finder call's time goes, per backend: prefill, decode, and the quote grammar.

On segments the pipeline reads on the dev anthology (FairytaleQA val), each segment is judged
three ways, each prompt made new to the server's prompt cache (`fresh`):
- quote-first (today's reply): the clue's quote under a grammar that allows only the
  segment's sentences, then YES/NO;
- the same reply with no grammar (the quote checked after the reply, as every quote is);
- decision-first: YES/NO alone (its score at the first token), then, for a YES, the quote
  asked on the same conversation, whose prompt the server has cached.

The server's own timings split each call into prefill (prompt tokens it processed) and decode;
the grammar's cost is the decode time per token with it minus without it. Also: whether the
decision-first labels agree with quote-first's, and how often a quote written without the
grammar is verbatim.

    python benchmarks/finder_cost.py [--gguf PATH] [--records 6] [--read 4] [--out FILE]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

from cwread.agents.finder import clue_request, finder_request, parse_finder_reply

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data" / "fairytale" / "fairytale.jsonl"


def fresh(request, nonce: str):
    """The request with a nonce before its system prompt: llama.cpp keeps past prompts (in the
    slot and in its host-memory prompt cache), so an identical prompt would not be read again."""
    (role, system), *rest = request.messages
    return replace(request, messages=((role, f"({nonce}) {system}"), *rest))


def judge(backend, case) -> dict:
    from cwread.agents import shared
    from cwread.book import grounding

    document, record, segment = case
    paragraphs = [(pid, document.paragraph(pid).text) for pid in segment.ids]
    text = document.span_text(segment.start, segment.end)
    out = {}
    for name, request in (
        ("quote-first", finder_request(record.question, segment.start, segment.end, text, paragraphs=paragraphs)),
        ("no-grammar", None),
        ("decision-first", finder_request(record.question, segment.start, segment.end, text, paragraphs=paragraphs, decision_first=True)),
    ):
        if request is None:
            request = replace(out["quote-first"]["request"], grammar=None)
        request = fresh(request, f"{name} {time.time_ns()}")
        t0 = time.perf_counter()
        first = backend.generate(request)
        parsed = parse_finder_reply(first.text)
        calls = [first]
        if name == "decision-first" and parsed.answer != "NO":
            calls.append(backend.generate(clue_request(request, first.text, paragraphs)))
            reason = parse_finder_reply(calls[-1].text + "<answer>YES</answer>").reason
        else:
            reason = parsed.reason
        shown = dict(shared.shown_evidence(paragraphs))
        quotes, forged = grounding.find_quotes(reason, shown, dict(paragraphs))
        out[name] = {
            "request": request,
            "answer": parsed.answer,
            "seconds": time.perf_counter() - t0,
            "prefill_tokens": sum(c.prefill_tokens for c in calls),
            "prefill": sum(c.prefill_seconds for c in calls),
            "decode": sum(c.decode_seconds for c in calls),
            "decode_tokens": sum(c.completion_tokens for c in calls),
            "other": sum(c.seconds - c.prefill_seconds - c.decode_seconds for c in calls),
            "verbatim": bool(quotes) and not forged,
        }
    return out


def mean(values) -> float:
    values = list(values)
    return statistics.fmean(values) if values else 0.0


def report(model: str, rows: list[dict]) -> list[str]:
    lines = [f"model {model}: {len(rows)} segments, greedy, each prompt new to the server's prompt cache"]
    lines.append(
        f"{'reply':15s} {'s/segment':>9s} {'prefill s':>9s} {'prefill tok':>11s} {'decode s':>8s} "
        f"{'decode tok':>10s} {'s/decode tok':>12s} {'other s':>7s} {'verbatim quote':>14s}"
    )
    for name in ("quote-first", "no-grammar", "decision-first"):
        cells = [r[name] for r in rows]
        tokens = sum(c["decode_tokens"] for c in cells)
        per_token = sum(c["decode"] for c in cells) / tokens if tokens else 0.0
        quoted = [c for c in cells if c["answer"] != "NO" or name != "decision-first"]
        lines.append(
            f"{name:15s} {mean(c['seconds'] for c in cells):9.2f} {mean(c['prefill'] for c in cells):9.2f} "
            f"{mean(c['prefill_tokens'] for c in cells):11.0f} {mean(c['decode'] for c in cells):8.2f} "
            f"{mean(c['decode_tokens'] for c in cells):10.1f} {per_token:12.3f} {mean(c['other'] for c in cells):7.2f} "
            f"{sum(c['verbatim'] for c in quoted):>6d}/{len(quoted):<7d}"
        )
    with_g = [r["quote-first"] for r in rows]
    without = [r["no-grammar"] for r in rows]
    per = [sum(c["decode"] for c in cs) / max(1, sum(c["decode_tokens"] for c in cs)) for cs in (with_g, without)]
    grammar = (per[0] - per[1]) * mean(c["decode_tokens"] for c in with_g)
    grammar += mean(c["other"] for c in with_g) - mean(c["other"] for c in without)
    share = grammar / mean(c["seconds"] for c in with_g) if with_g else 0.0
    lines.append(
        f"grammar: {grammar:.2f} s of a quote-first call ({100 * share:.0f}%): its decode time per token "
        "and time outside prefill and decode (parsing it), against the reply without it"
    )
    agree = sum(r["quote-first"]["answer"] == r["decision-first"]["answer"] for r in rows)
    yes = [sum(r[n]["answer"] == "YES" for r in rows) for n in ("quote-first", "decision-first")]
    lines.append(
        f"labels: decision-first agrees with quote-first on {agree}/{len(rows)}; YES {yes[0]} quote-first, "
        f"{yes[1]} decision-first"
    )
    ratio = mean(r["quote-first"]["seconds"] for r in rows) / max(1e-9, mean(r["decision-first"]["seconds"] for r in rows))
    lines.append(f"decision-first is {ratio:.2f}x as fast as quote-first per segment (quotes written for its YES only)")
    return lines


def main() -> None:
    from cwread import api
    from cwread.backends.embedded import EmbeddedBackend
    from cwread.eval.dataset import load_records, spread_sample
    from cwread.retrieval.segments import make_budget

    parser = argparse.ArgumentParser()
    parser.add_argument("--gguf", help="a GGUF model (default: the embedded SmolLM2-135M)")
    parser.add_argument("--records", type=int, default=6)
    parser.add_argument("--read", type=int, default=4)
    parser.add_argument("--out", help="also append the report to this file")
    args = parser.parse_args()
    records = spread_sample(load_records(str(DATA)), args.records)
    cases = []
    for record in records:
        document = api.open_document(record.doc)
        found = api.find(document, record.question, api.Settings(run=api.RunSettings(make_budget("focused"))))
        cases += [(document, record, s) for s in found.segments[: args.read]]
    backend = EmbeddedBackend(gguf=args.gguf)
    rows = []
    for i, case in enumerate(cases, start=1):
        rows.append(judge(backend, case))
        print(f"segment {i}/{len(cases)}", file=sys.stderr)
    lines = [f"$ python benchmarks/finder_cost.py {' '.join(sys.argv[1:])}", *report(backend.model, rows), ""]
    print("\n".join(lines))
    if args.out:
        with open(args.out, "a", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
