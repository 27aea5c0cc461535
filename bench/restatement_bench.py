"""Merge precision and recall per setting: labelled LoCoMo pairs and the demo's labelled groups.

    .venv/bin/python bench/restatement_bench.py [--data LOCOMO.json] [--quick]

For every setting the cluster detector runs (dry) on each dev conversation, its turns saved as
the MCP bench saves them ("[date] Speaker: text", the speaker as the only entity), and on the
demo set. A labelled pair (tests/fixtures/locomo_restatements) counts as merged when both its
turns land in one merge cluster; P = labelled restatements merged / labelled pairs merged,
R = labelled restatements merged / labelled restatements. "merged away" is the share of all
dev turns a merge would archive (every source of a merge is archived, as locomo_consolidation.py counts it).
The demo's P/R is pair precision/recall against its 29 labelled groups, as
bench/pipeline_bench.py reports it (tuning half A, held-out half B).

Vectors: MiniLM (the default embedder), each text embedded on its own, as the detector checks
every candidate pair (agents.candidate_pairs), memoised across settings; so the demo's numbers
here are the MCP path's (the raw model), where pipeline_bench's run through a warm embedding
cache of batch vectors. The LoCoMo text is read from the shared folder, never stored here.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from itertools import combinations
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _machine import machine_line
from _pipeline_data import NOW, demo_labelled, pair_quality

from cortexgraph.agents.cluster_detector import ClusterAction, ClusterConfig, ClusterDetector
from cortexgraph.storage import InMemoryStore
from cortexgraph.storage.embeddings import default_embedder

ROOT = Path(__file__).resolve().parent.parent
PAIRS = ROOT / "tests" / "fixtures" / "locomo_restatements" / "pairs.jsonl"
DEV = Path("/work/shared/data/locomo_dev/locomo_dev.json")


class EachText:
    """The default embedder, every text embedded on its own and remembered."""

    def __init__(self) -> None:
        model = default_embedder()
        if model is None:
            raise SystemExit("no embedding model installed")
        self.model = model
        self.name = model.name
        self.memo: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        for t in texts:
            if t not in self.memo:
                self.memo[t] = np.asarray(self.model.embed([t]), dtype=np.float32)[0]
        return np.vstack([self.memo[t] for t in texts]) if texts else np.zeros((0, 384))


def turns(data: Path) -> dict[str, list[tuple[str, str, str]]]:
    """sample_id -> [(dia_id, saved text, speaker)], in conversation order."""
    out: dict[str, list[tuple[str, str, str]]] = {}
    for sample in json.loads(data.read_text(encoding="utf-8")):
        conv = sample["conversation"]
        rows = out.setdefault(sample["sample_id"], [])
        keys = sorted(
            (
                k
                for k in conv
                if k.startswith("session_") and k.split("_")[1].isdigit() and k.count("_") == 1
            ),
            key=lambda k: int(k.split("_")[1]),
        )
        for key in keys:
            when = conv.get(f"{key}_date_time", "")
            for turn in conv[key]:
                text = f"[{when}] {turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [shares a photo: {turn['blip_caption']}]"
                rows.append((turn["dia_id"], text, turn["speaker"]))
    return out


def stores(conversations: dict[str, list[tuple[str, str, str]]]):
    """sample_id -> (store, memory id -> dia_id)."""
    built = {}
    for cid, rows in conversations.items():
        store = InMemoryStore()
        dia = {}
        for k, (dia_id, text, speaker) in enumerate(rows):
            m = store.save(text, entities=[speaker.lower()], now=NOW + k)
            dia[m.id] = dia_id
        built[cid] = (store, dia)
    return built


def merged_pairs(report) -> set[frozenset[str]]:
    return {
        frozenset(p)
        for c in report.clusters
        if c.action is ClusterAction.MERGE
        for p in combinations(c.memory_ids, 2)
    }


def settings(quick: bool) -> list[tuple[str, ClusterConfig]]:
    """(name, config): the rules for plain notes, the restatement rule's parts one at a time,
    then its bars (each row with the default's other rules)."""
    base = ClusterConfig(open_issues=False)
    flat = replace(base, transcript_merge_cohesion=base.merge_cohesion)
    before = replace(base, same_numbers_merge=False, identifier_names=False)
    rows = [
        ("defaults before: no same-numbers rule, no code names", before),
        (
            "+ code names (snake_case, dotted) in the names guard",
            replace(before, identifier_names=True),
        ),
        (
            "+ same numbers merge from the link bar, no code names",
            replace(before, same_numbers_merge=True),
        ),
        ("defaults: both", base),
        (
            "complete linkage, one bar (mean 0.75), no restatement rule, up to 12",
            replace(flat, restatements_only=False, max_merge_size=12),
        ),
        *(
            (f"+ restatement rule, questions: {q}", replace(flat, restatement_questions=q))
            for q in ("off", "last", "most")
        ),
    ]
    means = (0.75,) if quick else (0.7, 0.75, 0.8)
    lines = (0.8,) if quick else (0.8, 0.85, 0.9)
    for q in ("last", "most"):
        for mean in means:
            for line in lines:
                cfg = replace(
                    base,
                    merge_cohesion=mean,
                    transcript_merge_cohesion=line,
                    restatement_questions=q,
                )
                rows.append((f"rule ({q}), mean >= {mean}, transcript lines >= {line}", cfg))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEV)
    ap.add_argument("--pairs", type=Path, default=PAIRS)
    ap.add_argument("--quick", action="store_true", help="fewer settings")
    args = ap.parse_args()
    if not args.data.exists():
        raise SystemExit(f"LoCoMo data not found at {args.data} (it is not in the repository)")
    labelled = [json.loads(x) for x in args.pairs.read_text().splitlines() if x.strip()]
    positives = {
        (r["sample_id"], frozenset((r["a"], r["b"])))
        for r in labelled
        if r["label"] == "restatement"
    }
    everything = {(r["sample_id"], frozenset((r["a"], r["b"]))) for r in labelled}
    conversations = turns(args.data)
    built = stores(conversations)
    total_turns = sum(len(v) for v in conversations.values())
    demo, group_of, half_a, half_b = demo_labelled()
    demo_store = InMemoryStore()
    demo_store.put_many(demo)
    embedder = EachText()
    console = Console(width=200)
    table = Table(
        title=f"Merge P/R per setting ({len(labelled)} labelled LoCoMo dev pairs, "
        f"{len(positives)} restatements; demo: 29 labelled groups)"
    )
    for col in (
        "setting",
        "LoCoMo P",
        "LoCoMo R",
        "merged",
        "merged away",
        "related",
        "demo P (A)",
        "demo R (A)",
        "demo P (B)",
        "demo R (B)",
        "demo P",
        "demo R",
    ):
        table.add_column(col, justify="right" if col != "setting" else "left")
    for name, cfg in settings(args.quick):
        hits = merged = gone = related = 0
        for cid, (store, dia) in built.items():
            report = ClusterDetector(store, embedder, config=cfg).run(now=NOW, dry_run=True)
            related += len(report.related)
            gone += sum(c.size for c in report.clusters if c.action is ClusterAction.MERGE)
            for pair in merged_pairs(report):
                key = (cid, frozenset(dia[m] for m in pair))
                if key in everything:
                    merged += 1
                    hits += key in positives
        report = ClusterDetector(demo_store, embedder, config=cfg).run(now=NOW, dry_run=True)
        groups = [c.memory_ids for c in report.clusters if c.action is ClusterAction.MERGE]
        pa, ra = pair_quality(groups, group_of, half_a)
        pb, rb = pair_quality(groups, group_of, half_b)
        p, r = pair_quality(groups, group_of)
        table.add_row(
            name,
            f"{hits / merged:.3f}" if merged else "-",
            f"{hits / len(positives):.3f}",
            f"{merged}",
            f"{gone} ({gone / total_turns:.1%})",
            str(related),
            *(f"{x:.3f}" for x in (pa, ra, pb, rb, p, r)),
        )
    console.print(table)
    console.print(machine_line(), highlight=False)


if __name__ == "__main__":
    main()
