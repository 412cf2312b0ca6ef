"""The summary of a run's rows: per method, its scores with 95% intervals, recall stage by
stage, the Finder's scores as a ranking, and each method paired with the pipeline."""

from __future__ import annotations

from cwread.eval import metrics


def paired_interval(differences: list[int]) -> tuple[float, float] | None:
    """95% bootstrap interval of the sum of per-record differences."""
    if not differences:
        return None
    low, high = metrics.bootstrap_interval([float(d) for d in differences])
    return low * len(differences), high * len(differences)


_NO_ANSWER = ("retrieval", "finder")  # methods that give no answer


def _ratio(num: int, den: int) -> float | None:
    return None if den == 0 else num / den


RECALL_STAGES = ("anchor", "read", "yes", "packet")


def recall_breakdown(group: list[dict]) -> dict:
    """Evidence recall per stage with a 95% interval (records resampled), for all records with
    gold evidence, then by question type and by hops: {"all" | "type why" | "hops 2": {...}}."""
    with_gold = [r for r in group if r.get("evidence_gold")]
    groups: dict[str, list[dict]] = {"all": with_gold}
    for r in with_gold:
        groups.setdefault(f"type {r.get('question_type', 'other')}", []).append(r)
    for r in with_gold:
        groups.setdefault(f"hops {r.get('hops', 1)}", []).append(r)
    out = {}
    for name, rows in groups.items():
        entry: dict = {"records": len(rows), "gold": sum(r["evidence_gold"] for r in rows)}
        for stage in RECALL_STAGES:
            if any(f"evidence_{stage}_hits" in r for r in rows):
                pairs = [(r.get(f"evidence_{stage}_hits", 0), r["evidence_gold"]) for r in rows]
                entry[stage] = _ratio(sum(h for h, _ in pairs), entry["gold"])
                entry[f"{stage}_ci"] = metrics.ratio_interval(pairs)
        out[name] = entry
    return out


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
                for stage in RECALL_STAGES
                if any(f"evidence_{stage}_hits" in r for r in group)
            }
            entry["evidence_recall_by"] = recall_breakdown(group)
        if method not in _NO_ANSWER:
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
            entry["grounding"] = _grounding(group, answered)
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
            rank_gold = sum(r.get("rank_yes_gold", 0) for r in labelled)
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
                "rank_yes_recall": _ratio(rank_gold, with_gold),
                "rank_precision": _ratio(rank_gold, kept),
                "gold_kept_minus_rank": kept_gold - rank_gold,
                "gold_kept_minus_rank_ci": paired_interval(
                    [r["yes_gold"] - r.get("rank_yes_gold", 0) for r in labelled]
                ),
                "score_ranking": _score_ranking(labelled),
            }
        entry["seconds_per_record"] = sum(r.get("seconds", 0) for r in group) / len(group)
        calls = sum(r.get("model_calls", 0) for r in group)
        if calls:
            entry["cached_call_share"] = sum(r.get("cached_calls", 0) for r in group) / calls
        summary["methods"][method] = entry
    summary["paired"] = _paired_with_pipeline(by_method)
    any_group = next(iter(by_method.values()), [])
    for kind in ("mcq", "claim"):
        golds = [str(r["gold"]).upper() for r in any_group if r["kind"] == kind and r.get("gold")]
        if golds:
            summary["baselines"][kind] = metrics.constant_baselines(golds)
    return summary


PAIRED_BASE = "pipeline"


def record_score(row: dict) -> float | None:
    """A record's score for paired comparison: 1/0 for a labelled answer, token-F1 for an open one."""
    if row["kind"] == "open":
        return row.get("f1")
    return None if row.get("correct") is None else float(bool(row["correct"]))


def _paired_with_pipeline(by_method: dict[str, list[dict]]) -> dict:
    """Each answering method against the pipeline on the records both scored: the pipeline's
    mean score, the method's, and their difference with a 95% paired bootstrap interval (the
    per-method intervals overlap far more than a paired difference does)."""
    base = {r["id"]: record_score(r) for r in by_method.get(PAIRED_BASE, [])}
    out = {}
    for method, group in by_method.items():
        if method in (PAIRED_BASE, *_NO_ANSWER):
            continue
        scores = {r["id"]: record_score(r) for r in group}  # a record run twice: its last row
        pairs = [
            (base[i], score) for i, score in scores.items() if score is not None and base.get(i) is not None
        ]
        if not pairs:
            continue
        n = len(pairs)
        differences = [a - b for a, b in pairs]
        out[method] = {
            "records": n,
            "pipeline": sum(a for a, _ in pairs) / n,
            "method": sum(b for _, b in pairs) / n,
            "difference": sum(differences) / n,
            "difference_ci": metrics.bootstrap_interval(differences),
        }
    return out


SCORE_TOP_K = (1, 2, 3)


def _score_ranking(labelled: list[dict]) -> dict:
    """The Finder's score used as a ranking, whatever its YES/NO bias: per record, the gold
    segments among the top k by score (ties in reading order) against the retriever's top k,
    for a few k. Only records whose every verdict has a score; {} when none has."""
    scored = [
        r
        for r in labelled
        if r.get("finder_scores") and all(s is not None for s in r["finder_scores"]) and r.get("segment_gold")
    ]
    if not scored:
        return {}
    out = {"records": len(scored), "with_gold": sum(sum(r["segment_gold"]) for r in scored)}
    # each record's segments by score, best first, reading order on ties
    orders = [
        sorted(range(len(r["finder_scores"])), key=lambda i, r=r: (-r["finder_scores"][i], i)) for r in scored
    ]
    for k in SCORE_TOP_K:
        by_score = [
            sum(r["segment_gold"][i] for i in order[:k]) for r, order in zip(scored, orders, strict=True)
        ]
        by_rank = [sum(r["segment_gold"][:k]) for r in scored]
        out[f"top{k}"] = {
            "score_gold": sum(by_score),
            "rank_gold": sum(by_rank),
            "ci": paired_interval([a - b for a, b in zip(by_score, by_rank, strict=True)]),
        }
    return out


def _grounding(group: list[dict], answered: list[dict]) -> dict:
    """Quote fidelity (shown quotes found verbatim in the book), quotes dropped as not in the
    book, cited-gold precision, supported-answer and abstention rates, claim-pair consistency."""
    with_gold = [r for r in group if "cited_gold" in r]
    pairs: dict = {}
    for r in group:
        if r["kind"] == "claim" and r.get("pair") is not None:
            pairs.setdefault(r["pair"], []).append(r.get("answer"))
    complete = [a for a in pairs.values() if len(a) == 2]
    return {
        "quote_fidelity": _ratio(
            sum(r.get("quotes_verbatim", 0) for r in group), sum(r.get("quotes_shown", 0) for r in group)
        ),
        "quotes_dropped_per_record": sum(r.get("quotes_dropped", 0) for r in group) / len(group),
        "cited_gold_precision": _ratio(
            sum(r["cited_gold"] for r in with_gold), sum(r.get("cited", 0) for r in with_gold)
        ),
        "supported_rate": _ratio(sum(bool(r.get("supported")) for r in answered), len(answered)),
        "abstention_rate": _ratio(sum(bool(r.get("abstained")) for r in group), len(group)),
        "claim_pair_consistency": _ratio(
            sum(a[0] is not None and a[1] is not None and a[0] != a[1] for a in complete), len(complete)
        ),
        "claim_pairs": len(complete),
    }
