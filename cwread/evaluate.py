"""The eval harness: the pipeline, its ablations and simple baselines on benchmark records.

Every method answers with the same Interpreter prompt, parser and model, so differences come
from the evidence each method shows it:

- pipeline: the full method; no-self-check: without the Interpreter's second pass;
- no-finder: every anchor segment goes to the Interpreter (budgets permitting);
- direct: the text from its start, cut where the model's context ends, in one call;
- bm25-rag / dense-rag: top paragraphs of one retriever, in story order, under B_c;
- closed-book: no text at all (what the model knows of a famous book);
- finder: the Finder alone on the segments the pipeline reads, scored against gold evidence
  (YES-recall, precision, keep rate); no Interpreter, so no answer;
- retrieval: no model; where anchors and segments fall against gold evidence.

Rows are appended to a JSONL file as each record finishes, so an interrupted run loses
nothing scored and `--resume` continues it.
"""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from cwread import api, metrics, pipeline
from cwread.backends.select import Selection
from cwread.document import Document
from cwread.errors import InputError
from cwread.packing import Packet, PacketItem, Verdict
from cwread.retrieval import build_queries, open_index, paragraph_scores
from cwread.segments import Budget

METHODS = (
    "pipeline",
    "no-self-check",
    "no-finder",
    "direct",
    "bm25-rag",
    "dense-rag",
    "closed-book",
    "finder",
    "retrieval",
)
MODEL_METHODS = tuple(m for m in METHODS if m != "retrieval")
KINDS = ("mcq", "claim", "open")


def load_records(path: str) -> list[dict]:
    """Records from a JSONL file (format in ../shared/data/README.md), validated."""
    source = Path(path)
    if not source.is_file():
        raise InputError(f"{path}: no such file")
    records = []
    seen = set()
    for lineno, line in enumerate(source.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{lineno}: not JSON ({exc.msg})") from None
        for key in ("id", "doc", "kind", "question"):
            if key not in record:
                raise InputError(f"{path}:{lineno}: record has no {key!r}")
        if record["kind"] not in KINDS:
            raise InputError(f"{path}:{lineno}: kind must be one of {', '.join(KINDS)}")
        if record["kind"] == "mcq" and not record.get("options"):
            raise InputError(f"{path}:{lineno}: an mcq record needs options")
        if record["id"] in seen:
            raise InputError(f"{path}:{lineno}: duplicate id {record['id']!r}")
        seen.add(record["id"])
        doc = (source.parent / record["doc"]).resolve()
        if not doc.is_file():
            raise InputError(f"{path}:{lineno}: document {record['doc']} not found")
        record["_doc_path"] = str(doc)
        records.append(record)
    if not records:
        raise InputError(f"{path} holds no records")
    return records


@dataclass
class EvalContext:
    selection: Selection | None  # None when only `retrieval` runs
    budget: Budget
    embedder: str
    permute_options: bool = False
    documents: dict[str, Document] = field(default_factory=dict)
    _last_find: tuple[str, api.FindResult] | None = None

    def document(self, path: str) -> Document:
        if path not in self.documents:
            self.documents[path] = api.open_document(path)
        return self.documents[path]

    def find(self, record: dict) -> api.FindResult:
        """Retrieval for `record`, shared by the methods that run on it one after another
        (rows are produced record by record, so one remembered result is enough)."""
        if self._last_find is None or self._last_find[0] != record["id"]:
            document = self.document(record["_doc_path"])
            options = record.get("options") or None
            self._last_find = (
                record["id"],
                api.find(document, record["question"], options, self.budget, self.embedder),
            )
        return self._last_find[1]


def spread_sample(records: list[dict], n: int) -> list[dict]:
    """`n` records evenly spaced through the file (benchmark files run story by story, so
    the first `n` would cover one or two stories), in file order."""
    if n >= len(records):
        return list(records)
    return [records[(i * len(records)) // n] for i in range(n)]


def rotations(options: dict[str, str]) -> list[tuple[dict[str, str], dict[str, str]]]:
    """Each rotation of the option texts over the same labels, with the map from shown label
    back to original label: ({"A": text of B, ...}, {"A": "B", ...})."""
    labels = list(options)
    out = []
    for r in range(len(labels)):
        back = {labels[i]: labels[(i + r) % len(labels)] for i in range(len(labels))}
        out.append(({shown: options[orig] for shown, orig in back.items()}, back))
    return out


def _evidence_fields(record: dict, found: api.FindResult | None, trace: pipeline.Trace | None) -> dict:
    gold = [int(g) for g in record.get("evidence") or []]
    if not gold:
        return {}
    out: dict = {"evidence_gold": len(gold)}
    if found is not None:
        anchors = [s for s in found.segments if s.source == "anchor"]
        read = found.segments[: found.budget.read]
        out["evidence_anchor_hits"] = metrics.recall(gold, {p for s in anchors for p in s.ids})[0]
        out["evidence_read_hits"] = metrics.recall(gold, {p for s in read for p in s.ids})[0]
    if trace is not None:
        if trace.verdicts:
            yes = {p for v in trace.verdicts if v.decision == "YES" for p in v.segment.ids}
            out["evidence_yes_hits"] = metrics.recall(gold, yes)[0]
        out["evidence_packet_hits"] = metrics.recall(gold, set(trace.packet.ids))[0]
    return out


def _score(record: dict, answer: str | None) -> dict:
    kind = record["kind"]
    if kind == "open":
        refs = record.get("answers") or [record.get("answer", "")]
        return {
            "f1": metrics.best_over_references(metrics.token_f1, answer, refs),
            "rouge_l": metrics.best_over_references(metrics.rouge_l, answer, refs),
        }
    gold = str(record.get("answer", "")).upper()
    return {"correct": None if not gold else answer == gold}


def _finder_fields(record: dict, document: Document, found: api.FindResult, ctx: EvalContext) -> dict:
    """The Finder's verdicts on the read segments against gold evidence: how many segments
    hold gold and were kept (YES-recall), how many kept ones hold gold (precision), and
    whether the ids it cites are gold ones."""
    read = found.segments[: ctx.budget.read]
    verdicts = pipeline.run_finder(
        ctx.selection.finder, document, read, record["kind"], record["question"], record.get("options") or {}
    )
    gold = {int(g) for g in record.get("evidence") or []}
    yes = [v for v in verdicts if v.decision == "YES"]
    out = {
        **_verdict_counts(verdicts),
        "finder_kept_unparsed": sum(v.kept_on_failure for v in verdicts),  # counted as YES (recall first)
        "model_calls": len(verdicts),
        "cached_calls": sum(v.cached for v in verdicts),
        "prompt_tokens": sum(v.prompt_tokens for v in verdicts),
    }
    if gold:
        out["segments_gold"] = sum(bool(gold & set(v.segment.ids)) for v in verdicts)
        out["yes_gold"] = sum(bool(gold & set(v.segment.ids)) for v in yes)
        out["finder_cited"] = sum(len(v.cited) for v in yes)
        out["finder_cited_gold"] = sum(len(gold & set(v.cited)) for v in yes)
        out.update(_evidence_fields(record, found, None))
        out["evidence_yes_hits"] = metrics.recall(gold, {p for v in yes for p in v.segment.ids})[0]
    return out


def _verdict_counts(verdicts: list[Verdict]) -> dict:
    return {
        "finder_calls": len(verdicts),
        "finder_parsed_first_try": sum(v.parsed_first_try for v in verdicts),
        "finder_yes": sum(v.decision == "YES" for v in verdicts),
    }


def _trace_fields(trace: pipeline.Trace) -> dict:
    final = trace.final
    return {
        "answer": trace.answer,
        "parsed": trace.answer is not None,
        "parsed_first_try": bool(trace.interpreter and trace.interpreter.parsed_first_try),
        "citations": list(final.cited) if final else [],
        "invalid_citations": list(final.dropped) if final else [],
        **_verdict_counts(trace.verdicts),
        "self_checked": trace.self_check is not None,
        "prompt_tokens": trace.tokens()["prompt"],
        "packet_paragraphs": len(trace.packet.items),
        # calls answered by the call cache (e.g. shared with an earlier method): they cost ~0 s
        "model_calls": len(trace.verdicts)
        + sum(c is not None for c in (trace.interpreter, trace.self_check)),
        "cached_calls": sum(v.cached for v in trace.verdicts)
        + sum(bool(c and c.cached) for c in (trace.interpreter, trace.self_check)),
    }


def _packet_of(document: Document, ids: list[int]) -> Packet:
    return Packet(
        items=tuple(PacketItem(pid, document.paragraph(pid).text, "") for pid in sorted(ids)),
        fallback=False,
        segments=(),
        left_out=(),
    )


def _baseline_packet(method: str, document: Document, record: dict, ctx: EvalContext, found) -> Packet | None:
    """The evidence a baseline shows the Interpreter (None: the pipeline decides)."""
    interpreter = ctx.selection.interpreter
    kind, question, options = record["kind"], record["question"], record.get("options") or {}
    if method == "closed-book":
        return _packet_of(document, [])
    if method == "direct":
        # the text from its start, as much as fits the context (truncated from the end)
        ids = [p.id for p in document.paragraphs]
        lo, hi = 0, len(ids)
        while lo < hi:  # the largest prefix that fits
            mid = (lo + hi + 1) // 2
            evidence = [(p.id, p.text) for p in document.paragraphs[:mid]]
            request = pipeline.agents.interpreter_request(kind, question, options, evidence)
            if pipeline.prompt_fits(interpreter, request):
                lo = mid
            else:
                hi = mid - 1
        return _packet_of(document, ids[:lo])
    if method in ("bm25-rag", "dense-rag"):
        retriever = "bm25" if method == "bm25-rag" else "dense"
        embedder = api.load_embedder("none" if retriever == "bm25" else ctx.embedder)
        index = open_index(document, embedder)
        scores = paragraph_scores(index, build_queries(question, options or None), retriever)
        chosen, used = [], 0
        for i in sorted(range(len(scores)), key=lambda i: (-scores[i], i)):
            length = len(document.paragraphs[i].text)
            if used + length > ctx.budget.b_c:
                continue
            chosen.append(i + 1)
            used += length
            if len(chosen) >= 4 * ctx.budget.n_e:
                break
        while chosen and not pipeline.packet_fits(
            interpreter, kind, question, options, [(p, document.paragraph(p).text) for p in chosen]
        ):
            chosen.pop()
        return _packet_of(document, chosen)
    return None


def run_record(record: dict, method: str, ctx: EvalContext) -> dict:
    """One record through one method: a JSON-ready row of what happened and its scores."""
    t0 = time.perf_counter()
    document = ctx.document(record["_doc_path"])
    kind, question = record["kind"], record["question"]
    options = record.get("options") or {}
    row: dict = {"id": record["id"], "method": method, "kind": kind, "gold": record.get("answer")}
    if record.get("pair") is not None:
        row["pair"] = record["pair"]
    found = ctx.find(record)
    if method == "retrieval":
        row.update(_evidence_fields(record, found, None))
        row["seconds"] = round(time.perf_counter() - t0, 3)
        return row

    if method == "finder":
        row.update(_finder_fields(record, document, found, ctx))
        row["seconds"] = round(time.perf_counter() - t0, 3)
        return row

    def one(shown_options: dict[str, str]) -> pipeline.Trace:
        packet = _baseline_packet(method, document, record, ctx, found)
        verdicts = None
        if method == "no-finder":
            anchors = [s for s in found.segments if s.source == "anchor"]
            verdicts = [Verdict(s, "YES", "(no Finder: retrieved segment)", (), (), True) for s in anchors]
        budget = replace(ctx.budget, n_e=max(ctx.budget.n_e, len(verdicts or [])))
        checks = None if method in ("pipeline", "no-finder") else False
        sel = ctx.selection
        return pipeline.answer(
            document,
            question,
            kind,
            shown_options,
            found.segments,
            budget,
            sel.finder,
            sel.interpreter,
            embedder=found.embedder,
            self_check=checks,
            verdicts=verdicts,
            packet=packet,
        )

    if kind == "mcq" and ctx.permute_options:
        answers = []
        traces = []
        for shown, back in rotations(options):
            trace = one(shown)
            traces.append(trace)
            answers.append(back.get(trace.answer) if trace.answer else None)
        trace = traces[0]
        row.update(_trace_fields(trace))
        row["rotation_answers"] = answers
        row["answer"] = answers[0] if len(set(answers)) == 1 else None
        row["correct"] = all(a == str(record.get("answer", "")).upper() for a in answers)
        row["prompt_tokens"] = sum(t.tokens()["prompt"] for t in traces)
        row["finder_calls"] = sum(len(t.verdicts) for t in traces)
    else:
        trace = one(options)
        row.update(_trace_fields(trace))
        row.update(_score(record, trace.answer))
    if method == "no-finder":  # its verdicts were stand-ins, not model calls
        row["model_calls"] -= len(trace.verdicts)
        row["finder_calls"] = row["finder_parsed_first_try"] = row["finder_yes"] = 0
    row.update(_evidence_fields(record, found, trace))
    row["seconds"] = round(time.perf_counter() - t0, 3)
    return row


def done_keys(out: Path) -> set[tuple[str, str]]:
    """(record id, method) pairs already in a results file (a torn last line is ignored)."""
    keys = set()
    if out.is_file():
        for line in out.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
                keys.add((row["id"], row["method"]))
            except (json.JSONDecodeError, KeyError, TypeError):
                continue
    return keys


def run_eval(
    records: list[dict],
    methods: list[str],
    ctx: EvalContext,
    out: Path | None = None,
    resume: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
) -> Iterator[dict]:
    """Yield a row per (record, method), appending each to `out` as soon as it is scored."""
    skip = done_keys(out) if (out and resume) else set()
    if out and not resume and out.exists():
        raise InputError(f"{out} exists: pass --resume to continue it, or choose another --out")
    todo = [(r, m) for r in records for m in methods if (r["id"], m) not in skip]
    handle = open(out, "a", encoding="utf-8") if out else None  # noqa: SIM115 (kept open across yields)
    if handle and not _ends_with_newline(out):
        handle.write("\n")  # a torn last line from a killed run must not swallow the next row
    try:
        for i, (record, method) in enumerate(todo, start=1):
            if progress:
                progress(f"eval {method}", i - 1, len(todo))
            row = run_record(record, method, ctx)
            if handle:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
                handle.flush()
            yield row
        if progress:
            progress("eval", len(todo), len(todo))
    finally:
        if handle:
            handle.close()


def _ends_with_newline(path: Path) -> bool:
    if path.stat().st_size == 0:
        return True
    with open(path, "rb") as f:
        f.seek(-1, 2)
        return f.read(1) == b"\n"


def read_rows(out: Path) -> list[dict]:
    rows = []
    for line in out.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def _ratio(num: int, den: int) -> float | None:
    return None if den == 0 else num / den


def summarize(rows: list[dict]) -> dict:
    """Per-method metrics with 95% intervals, answer distributions and constant baselines."""
    by_method: dict[str, list[dict]] = {}
    for row in rows:
        by_method.setdefault(row["method"], []).append(row)
    summary: dict = {"methods": {}, "baselines": {}}
    for method, group in by_method.items():
        scored = [r for r in group if r.get("correct") is not None]
        right = sum(bool(r["correct"]) for r in scored)
        opens = [r for r in group if r["kind"] == "open" and "f1" in r]
        answered = [r for r in group if r.get("parsed")]
        cited_ids = sum(len(r.get("citations", [])) + len(r.get("invalid_citations", [])) for r in group)
        valid_ids = sum(len(r.get("citations", [])) for r in group)
        gold = sum(r.get("evidence_gold", 0) for r in group)
        entry = {
            "records": len(group),
            "accuracy": _ratio(right, len(scored)),
            "accuracy_ci": metrics.wilson_interval(right, len(scored)) if scored else None,
            "scored": len(scored),
        }
        pairs_right, pairs = metrics.pair_accuracy(group)
        if pairs:
            entry["pair_accuracy"] = pairs_right / pairs
            entry["pair_accuracy_ci"] = metrics.wilson_interval(pairs_right, pairs)
            entry["pairs"] = pairs
        if opens:
            f1s = [r["f1"] for r in opens]
            entry["f1"] = sum(f1s) / len(f1s)
            entry["f1_ci"] = metrics.bootstrap_interval(f1s)
            entry["rouge_l"] = sum(r["rouge_l"] for r in opens) / len(opens)
        if gold:
            entry["evidence_recall"] = {
                stage: _ratio(sum(r.get(f"evidence_{stage}_hits", 0) for r in group), gold)
                for stage in ("anchor", "read", "yes", "packet")
                if any(f"evidence_{stage}_hits" in r for r in group)
            }
        if method not in ("retrieval", "finder"):  # these two give no answer
            entry["citation_validity"] = _ratio(valid_ids, cited_ids)
            entry["cite_share"] = _ratio(sum(bool(r.get("citations")) for r in answered), len(answered))
            entry["format_first_try"] = _ratio(
                sum(bool(r.get("parsed_first_try")) for r in group), len(group)
            )
            entry["format_after_retry"] = _ratio(len(answered), len(group))
            calls = sum(r.get("finder_calls", 0) for r in group)
            entry["finder_format_first_try"] = _ratio(
                sum(r.get("finder_parsed_first_try", 0) for r in group), calls
            )
            labelled = [r for r in group if r["kind"] in ("mcq", "claim")]
            entry["answer_distribution"] = metrics.answer_distribution([r.get("answer") for r in labelled])
        if method != "retrieval":
            entry["finder_calls_per_record"] = sum(r.get("finder_calls", 0) for r in group) / len(group)
            entry["prompt_tokens_per_record"] = sum(r.get("prompt_tokens", 0) for r in group) / len(group)
        if method == "finder":
            judged = sum(r.get("finder_calls", 0) for r in group)
            labelled = [r for r in group if "segments_gold" in r]  # records with gold evidence
            judged_l = sum(r["finder_calls"] for r in labelled)
            kept = sum(r["finder_yes"] for r in labelled)
            with_gold = sum(r["segments_gold"] for r in labelled)
            kept_gold = sum(r["yes_gold"] for r in labelled)
            entry["finder"] = {
                "segments": judged,
                "segments_with_gold": with_gold,
                "yes_recall": _ratio(kept_gold, with_gold),
                "precision": _ratio(kept_gold, kept),
                "no_on_non_gold": _ratio(judged_l - with_gold - (kept - kept_gold), judged_l - with_gold),
                "keep_rate": _ratio(sum(r.get("finder_yes", 0) for r in group), judged),
                "cited_gold_share": _ratio(
                    sum(r.get("finder_cited_gold", 0) for r in group),
                    sum(r.get("finder_cited", 0) for r in group),
                ),
                "format_first_try": _ratio(sum(r.get("finder_parsed_first_try", 0) for r in group), judged),
                "kept_unparsed": _ratio(sum(r.get("finder_kept_unparsed", 0) for r in group), judged),
            }
        entry["seconds_per_record"] = sum(r.get("seconds", 0) for r in group) / len(group)
        calls = sum(r.get("model_calls", 0) for r in group)
        if calls:
            entry["cached_call_share"] = sum(r.get("cached_calls", 0) for r in group) / calls
        summary["methods"][method] = entry
    any_group = next(iter(by_method.values()), [])
    for kind in ("mcq", "claim"):
        golds = [str(r["gold"]).upper() for r in any_group if r["kind"] == kind and r.get("gold")]
        if golds:
            summary["baselines"][kind] = metrics.constant_baselines(golds)
    return summary


def _fmt(value, pct: bool = True) -> str:
    if value is None:
        return "–"
    return f"{100 * value:.1f}" if pct else f"{value:.1f}"


def _ci(ci) -> str:
    return "" if not ci else f" [{100 * ci[0]:.0f}–{100 * ci[1]:.0f}]"


def report_markdown(summary: dict, meta: dict) -> str:
    """A Markdown report: machine, models, date, the method table with 95% intervals."""
    lines = [
        f"# cwread eval: {meta.get('data', '')}",
        "",
        f"- date: {meta.get('date', datetime.now(UTC).isoformat(timespec='seconds'))}",
        f"- machine: {meta.get('machine', machine_description())}",
        f"- models: {meta.get('models', '')}",
        f"- settings: {meta.get('settings', '')}",
        "",
        "Accuracy with 95% Wilson intervals; F1 with a 95% bootstrap interval. Evidence recall is the",
        "share of gold paragraphs inside anchor segments / segments read / Finder-YES segments / the packet.",
        "Methods run in turn on each record and share the model-call cache: a call another method already",
        "made costs ~0 s, so compare seconds together with the share of calls served from the cache.",
        "",
        "| method | n | accuracy % | pair acc % | F1 % | ROUGE-L % | evidence recall % (anchor/read/yes/packet) "
        "| citation validity % | answers citing % | format 1st/after retry % | Finder calls | prompt tokens | s/record "
        "| calls from cache % |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for method, e in summary["methods"].items():
        rec = e.get("evidence_recall") or {}
        recall = "/".join(_fmt(rec.get(k)) for k in ("anchor", "read", "yes", "packet")) if rec else "–"
        lines.append(
            f"| {method} | {e['records']} | {_fmt(e['accuracy'])}{_ci(e.get('accuracy_ci'))} "
            f"| {_fmt(e.get('pair_accuracy'))}{_ci(e.get('pair_accuracy_ci'))} "
            f"| {_fmt(e.get('f1'))}{_ci(e.get('f1_ci'))} | {_fmt(e.get('rouge_l'))} | {recall} "
            f"| {_fmt(e.get('citation_validity'))} | {_fmt(e.get('cite_share'))} "
            f"| {_fmt(e.get('format_first_try'))}/{_fmt(e.get('format_after_retry'))} "
            f"| {_fmt(e.get('finder_calls_per_record'), False)} | {_fmt(e.get('prompt_tokens_per_record'), False)} "
            f"| {_fmt(e.get('seconds_per_record'), False)} | {_fmt(e.get('cached_call_share'))} |"
        )
    finders = {m: e["finder"] for m, e in summary["methods"].items() if e.get("finder")}
    if finders:
        lines += [
            "",
            "## The Finder against gold evidence (segments the pipeline reads)",
            "",
            "YES-recall: segments holding a gold paragraph that the Finder kept; precision: kept segments",
            "holding one; NO on non-gold: segments without gold it dropped; cited gold: cited ids that are gold;",
            "unparsed: replies unreadable after a retry, kept as YES (recall first) and counted in the above.",
            "",
            "| method | segments | with gold | YES-recall % | precision % | NO on non-gold % | keep rate % "
            "| cited gold % | format 1st try % | unparsed % |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for method, f in finders.items():
            lines.append(
                f"| {method} | {f['segments']} | {f['segments_with_gold']} | {_fmt(f['yes_recall'])} "
                f"| {_fmt(f['precision'])} | {_fmt(f['no_on_non_gold'])} | {_fmt(f['keep_rate'])} "
                f"| {_fmt(f['cited_gold_share'])} | {_fmt(f['format_first_try'])} | {_fmt(f['kept_unparsed'])} |"
            )
    dists = {
        m: e["answer_distribution"] for m, e in summary["methods"].items() if e.get("answer_distribution")
    }
    if dists or summary["baselines"]:
        lines += ["", "## Answer distributions and constant baselines", ""]
        for method, dist in dists.items():
            lines.append(f"- {method}: " + ", ".join(f"{k} {v}" for k, v in dist.items()))
        for kind, base in summary["baselines"].items():
            lines.append(
                f"- baselines ({kind}): " + ", ".join(f"{k} {100 * v:.1f}%" for k, v in base.items())
            )
    return "\n".join(lines) + "\n"


def machine_description() -> str:
    import os

    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    )
