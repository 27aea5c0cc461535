"""Quality and latency of the activation layer on the held-out evaluation set.

    OMP_NUM_THREADS=1 python bench/activation_bench.py [--runs 3]

Quality: save / recall detection precision and recall (full analysis vs. the phrase detector
alone, the 1.x approach, as baseline), intent accuracy (embedding+tfidf vs tfidf fallback),
entity F1 (spaCy+rules vs rules only), explicit-save misses and phrase false positives, and
short follow-ups analysed with their earlier turns (ConversationContext) vs alone.
Latency: analyze_message first call (model loads) and warm p50 / p95, against one bare MiniLM
embedding of the same message measured in the same run.
"""

from __future__ import annotations

import argparse
import re
import statistics
import time

from rich.console import Console
from rich.table import Table

from cortexgraph.activation import ActivationConfig, PhraseDetector, Recommendation, analyze_message
from cortexgraph.activation.entities import EntityExtractor
from cortexgraph.activation.followups import score_followups
from cortexgraph.activation.intent import IntentClassifier
from cortexgraph.activation.intent_data import load_eval_set
from cortexgraph.activation.resources import embedder, spacy_pipeline

EXPLICIT_SAVE = re.compile(
    r"\b(remember (this|that)|remember:|don't forget|keep in mind|make a note|never forget|"
    r"write this down|save this|store this|record this|please remember)\b",
    re.IGNORECASE,
)


def _pr(pred: list[bool], gold: list[bool]) -> tuple[float, float]:
    tp = sum(p and g for p, g in zip(pred, gold, strict=True))
    return (tp / max(1, sum(pred)), tp / max(1, sum(gold)))


def _f1(extracted: list[set[str]], gold: list[set[str]]) -> tuple[float, float, float]:
    tp = sum(len(e & g) for e, g in zip(extracted, gold, strict=True))
    p = tp / max(1, sum(len(e) for e in extracted))
    r = tp / max(1, sum(len(g) for g in gold))
    return p, r, 2 * p * r / (p + r) if p + r else 0.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3, help="warm passes over the eval set")
    args = parser.parse_args()
    console = Console()
    data = load_eval_set()
    texts = [m.text for m in data]

    t0 = time.perf_counter()
    analyze_message("Remember this: the bench starts now.")
    first_call = time.perf_counter() - t0

    analyses = [analyze_message(t) for t in texts]
    saving = {Recommendation.MUST_SAVE, Recommendation.SHOULD_SAVE}
    pred_save = [a.action_recommendation in saving for a in analyses]
    pred_search = [a.action_recommendation is Recommendation.SHOULD_SEARCH for a in analyses]
    detector = PhraseDetector()
    signals = [detector.detect(t) for t in texts]
    gold_save = [m.should_save for m in data]
    gold_search = [m.should_search for m in data]

    q = Table(title=f"activation quality on {len(data)} held-out messages")
    for col in ("metric", "activation", "baseline (phrases only)", "ratio"):
        q.add_column(col, justify="right" if col != "metric" else "left")

    def row(name: str, ours: float, base: float) -> None:
        q.add_row(name, f"{ours:.3f}", f"{base:.3f}", f"{ours / base:.2f}x" if base else "-")

    sp, sr = _pr(pred_save, gold_save)
    bp, br = _pr([s.save_request for s in signals], gold_save)
    row("save precision", sp, bp)
    row("save recall", sr, br)
    rp, rr = _pr(pred_search, gold_search)
    bp, br = _pr([s.recall_request for s in signals], gold_search)
    row("recall-request precision", rp, bp)
    row("recall-request recall", rr, br)

    full = IntentClassifier(embedder=embedder())
    tfidf = IntentClassifier(embedder=None)
    acc = sum(p.intent == m.intent for p, m in zip(full.predict_many(texts), data, strict=True))
    acc_t = sum(p.intent == m.intent for p, m in zip(tfidf.predict_many(texts), data, strict=True))
    row("intent accuracy (vs tfidf fallback)", acc / len(data), acc_t / len(data))
    gold_e = [set(m.entities) for m in data]
    e_spacy = _f1(
        [set(EntityExtractor(spacy_pipeline()).extract(t).entities) for t in texts], gold_e
    )
    e_rules = _f1([set(EntityExtractor(None).extract(t).entities) for t in texts], gold_e)
    row("entity F1 (vs rules only)", e_spacy[2], e_rules[2])
    row("entity precision (vs rules only)", e_spacy[0], e_rules[0])
    row("entity recall (vs rules only)", e_spacy[1], e_rules[1])
    console.print(q)

    explicit = [m for m in data if EXPLICIT_SAVE.search(m.text) and m.should_save]
    missed = [m.text for m in explicit if not detector.detect(m.text).save_request]
    negatives = [(m, s) for m, s in zip(data, signals, strict=True) if not m.should_save]
    false_pos = [m.text for m, s in negatives if s.save_request]
    p = Table(title="phrase detector")
    p.add_column("check")
    p.add_column("value", justify="right")
    p.add_row("explicit save requests in the set", str(len(explicit)))
    p.add_row("explicit save requests missed", str(len(missed)))
    p.add_row(
        "save-phrase false positives / non-save messages",
        f"{len(false_pos)} / {len(negatives)} ({len(false_pos) / len(negatives):.1%})",
    )
    console.print(p)
    for text in missed + false_pos:
        console.print(f"  [red]{text}[/red]")

    with_ctx, alone = score_followups(), score_followups(with_context=False)
    f = Table(
        title=f"short follow-ups ({with_ctx.saves + with_ctx.nones + with_ctx.searches} "
        "labelled, activation/data/followups.txt)"
    )
    for col in ("measure", "with ConversationContext", "message alone"):
        f.add_column(col, justify="right" if col != "measure" else "left")
    for name, key, total in (
        ("saves recommended", "saves_found", "saves"),
        ("false saves", "false_saves", "nones"),
        ("recall query names the topic", "topics_found", "searches"),
    ):
        f.add_row(name, *(f"{getattr(sc, key)} / {getattr(sc, total)}" for sc in (with_ctx, alone)))
    console.print(f)

    emb = embedder()
    ours, floor, save_only = [], [], []
    for _ in range(args.runs):
        for text in texts:
            t = time.perf_counter()
            result = analyze_message(text)
            ours.append(time.perf_counter() - t)
            if result.should_save:
                save_only.append(ours[-1])
            if emb is not None:
                t = time.perf_counter()
                emb.embed([text])
                floor.append(time.perf_counter() - t)

    def pct(xs: list[float], q: float) -> float:
        return statistics.quantiles(xs, n=100)[int(q) - 1] * 1000 if len(xs) > 1 else 0.0

    lat = Table(title=f"analyze_message latency, ms ({args.runs} warm passes)")
    for col in ("measure", "p50", "p95", "ratio p50 vs one MiniLM embed"):
        lat.add_column(col, justify="right" if col != "measure" else "left")
    base50 = statistics.median(floor) * 1000 if floor else 0.0
    lat.add_row("first call (loads spaCy + MiniLM)", f"{first_call * 1000:.0f}", "-", "-")
    for name, xs in (
        ("analyze_message, all", ours),
        ("analyze_message, saves (KeyBERT)", save_only),
    ):
        p50 = statistics.median(xs) * 1000
        lat.add_row(
            name, f"{p50:.1f}", f"{pct(xs, 95):.1f}", f"{p50 / base50:.2f}x" if base50 else "-"
        )
    if floor:
        lat.add_row("baseline: one MiniLM embed", f"{base50:.1f}", f"{pct(floor, 95):.1f}", "1.00x")
    off = ActivationConfig(use_embeddings=False, use_spacy=False)
    light = []
    for text in texts:
        t = time.perf_counter()
        analyze_message(text, config=off)
        light.append(time.perf_counter() - t)
    lat.add_row(
        "no models (tfidf + rules)",
        f"{statistics.median(light) * 1000:.1f}",
        f"{pct(light, 95):.1f}",
        "-",
    )
    console.print(lat)


if __name__ == "__main__":
    main()
