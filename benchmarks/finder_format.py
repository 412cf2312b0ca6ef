"""The Finder without its output grammar: how often the embedded model writes the
`<reason>/<answer>` format on its own, untrained vs with a trained LoRA adapter, on segments
of the dev anthology (FairytaleQA val stories; training used the train split).

cwread always sends the grammar to llama.cpp, so format is 100% in use; this measures what
training taught the model itself, which is what an Ollama serving of the adapter relies on.

    python benchmarks/finder_format.py --lora cwread/models/finder-smollm2-135m.lora.gguf [--records 12] [--read 4]
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from cwread.agents.finder import finder_request, parse_finder_reply

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data" / "fairytale" / "fairytale.jsonl"


def judge_all(backend, cases) -> list[dict]:
    from cwread.agents import shared

    out = []
    for document, record, segment in cases:
        text = document.span_text(segment.start, segment.end)
        request = finder_request(record.question, segment.start, segment.end, text)
        reply = backend.generate(replace(request, grammar=None))
        parsed = parse_finder_reply(reply.text)
        gold = set(record.evidence)
        out.append(
            {
                "parsed": parsed.ok,
                "yes": parsed.ok and parsed.answer == "YES",
                "gold": bool(gold & set(segment.ids)),
                "cites": bool(shared.extract_citations(parsed.reason or "")),
            }
        )
    return out


def summary(name: str, rows: list[dict]) -> str:
    n = len(rows)
    parsed = [r for r in rows if r["parsed"]]
    right = sum(r["yes"] == r["gold"] for r in parsed)
    return (
        f"{name:10s} format {len(parsed)}/{n} ({100 * len(parsed) / n:.0f}%), "
        f"YES {sum(r['yes'] for r in parsed)}/{len(parsed)}, "
        f"decision matches gold {right}/{len(parsed)}, reason cites an id {sum(r['cites'] for r in parsed)}/{len(parsed)}"
    )


def main() -> None:
    from cwread import api
    from cwread.backends.embedded import EmbeddedBackend
    from cwread.eval.dataset import load_records, spread_sample
    from cwread.retrieval.segments import make_budget

    parser = argparse.ArgumentParser()
    parser.add_argument("--lora", required=True, help="the trained Finder adapter (GGUF)")
    parser.add_argument("--records", type=int, default=12)
    parser.add_argument("--read", type=int, default=4)
    args = parser.parse_args()
    records = spread_sample(load_records(str(DATA)), args.records)
    budget = make_budget("focused")
    cases = []
    for record in records:
        document = api.open_document(record.doc)
        found = api.find(document, record.question, api.Settings(run=api.RunSettings(budget)))
        cases += [(document, record, s) for s in found.segments[: args.read]]
    print(f"{len(cases)} segments from {len(records)} questions, no grammar, greedy")
    print(summary("untrained", judge_all(EmbeddedBackend(), cases)))
    print(summary("trained", judge_all(EmbeddedBackend(lora=args.lora), cases)))


if __name__ == "__main__":
    main()
