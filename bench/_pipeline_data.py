"""Labelled data for bench/pipeline_bench.py: synthetic near-duplicate groups and the demo set.

Synthetic facts come in near-duplicate groups (paraphrases of one fact) among unrelated facts
and *hard negatives* (the same sentence with the person, technology or ticket swapped: a
different fact that must not be merged). Entities are what the text names. Distinct facts
differ in person, technology or project: the pool of people grows with ``n`` so this holds at
100k too (two facts with the same three but a different claim are beyond what the lexical
guards can tell). Merge quality is pair precision/recall against the labelled groups.
"""

from __future__ import annotations

import hashlib
import math
import random
import uuid
from itertools import combinations

from cortexgraph.storage.models import Memory, MemoryMeta

NOW = 1_760_000_000
FIRST = [
    "Sam",
    "Aisha",
    "Diego",
    "Mei",
    "Tom",
    "Kofi",
    "Elena",
    "Priya",
    "Lars",
    "Noor",
    "Jonas",
    "Marcus",
    "Raj",
    "Lena",
    "Yuki",
    "Omar",
    "Ines",
    "Pavel",
    "Zara",
    "Hugo",
]
LAST = [
    "Okafor",
    "Weber",
    "Tanaka",
    "Silva",
    "Novak",
    "Haddad",
    "Larsen",
    "Moreau",
    "Kim",
    "Costa",
    "Fischer",
    "Rossi",
    "Nguyen",
    "Ivanova",
    "Mensah",
    "Dubois",
    "Sato",
    "Khan",
    "Berg",
    "Alves",
    "Popescu",
    "Walsh",
    "Horvat",
    "Yilmaz",
    "Lund",
    "Oyelaran",
    "Meyer",
    "Quinn",
    "Varga",
    "Santos",
]
TECH = [
    "PostgreSQL",
    "Redis",
    "Kafka",
    "Terraform",
    "Grafana",
    "Airflow",
    "Rust",
    "Go",
    "FastAPI",
    "React",
    "Kubernetes",
    "Celery",
    "DuckDB",
    "Sentry",
    "Vault",
]
THINGS = [
    "billing",
    "search",
    "auth",
    "ledger",
    "mobile app",
    "data pipeline",
    "docs site",
    "payments API",
    "analytics",
    "CI",
]
REASONS = [
    "it is cheaper to run",
    "the team already knows it",
    "latency was too high",
    "it scales better",
    "the old one is end of life",
    "compliance asks for it",
]
TEMPLATES = [
    "{p} decided to use {t} for the {x} because {r}.",
    "{p} reported that {t} in {x} failed twice this week; {r}.",
    "The {x} team wants {p} to own the {t} migration next sprint.",
    "{p} prefers {t} over the alternatives for {x} work since {r}.",
]
PARAPHRASE = [
    lambda s: s,
    lambda s: s.replace("decided to use", "chose").replace("wants", "would like"),
    lambda s: s.rstrip(".") + ", as noted in the review.",
    lambda s: s.lower(),
]


def people_for(n: int) -> list[str]:
    """Enough people that facts can differ in who, what or where: 2 combinations per memory."""
    k = max(10, math.ceil(2 * n / (len(TECH) * len(THINGS))))
    names = [f"{f} {last}" for last in LAST for f in FIRST]
    return names[: min(k, len(names))]


def synthetic(n: int, seed: int = 7) -> tuple[list[Memory], dict[str, int]]:
    """``n`` memories and the near-duplicate group of each grouped memory id."""
    rng = random.Random(seed)
    # Ids from a generator of their own: the same store in every process (the cluster
    # detector orders memories by id, and its approximate neighbour search samples rows by
    # position), so two codes in an A/B bench see one store; the texts are as they were.
    id_rng = random.Random(f"{seed}:ids")
    people = people_for(n)
    out: list[Memory] = []
    group_of: dict[str, int] = {}
    used: set[tuple[str, str, str]] = set()
    g = 0

    def emit(text: str, p: str, t: str, x: str, group: int | None) -> None:
        age = rng.uniform(0, 30)
        m = Memory(
            id=str(uuid.UUID(int=id_rng.getrandbits(128), version=4)),
            content=text,
            meta=MemoryMeta(tags=(x.replace(" ", "-"),)),
            entities=(p, t, x),
            created_at=int(NOW - age * 86400),
            last_used=int(NOW - age * 86400),
            use_count=rng.randint(0, 3),
        )
        out.append(m)
        if group is not None:
            group_of[m.id] = group

    while len(out) < n:
        p, t, x, r = rng.choice(people), rng.choice(TECH), rng.choice(THINGS), rng.choice(REASONS)
        if (p, t, x) in used and len(used) < len(people) * len(TECH) * len(THINGS) // 2:
            continue
        used.add((p, t, x))
        template = rng.choice(TEMPLATES)
        ticket = f" Ticket {rng.randint(1000, 99999)}." if rng.random() < 0.5 else ""
        fact = template.format(p=p, t=t, x=x, r=r) + ticket
        size = rng.choice([1, 1, 1, 2, 3]) if len(out) + 4 < n else 1
        for k in range(size):
            emit(PARAPHRASE[k](fact), p, t, x, g if size > 1 else None)
        g += 1
        if rng.random() < 1 / 6 and len(out) < n:
            swap = rng.choice(["person", "tech", "ticket"] if ticket else ["person", "tech"])
            p2 = rng.choice([q for q in people if q != p]) if swap == "person" else p
            t2 = rng.choice([q for q in TECH if q != t]) if swap == "tech" else t
            other = template.format(p=p2, t=t2, x=x, r=r)
            other += f" Ticket {rng.randint(1000, 99999)}." if ticket else ""
            emit(other, p2, t2, x, None)
            g += 1
    return out[:n], group_of


def pair_quality(
    merged_groups: list[tuple[str, ...]], group_of: dict[str, int], only: set[str] | None = None
) -> tuple[float, float]:
    """Pair precision and recall of merged groups against labels (within ``only`` if given)."""
    by_group: dict[int, list[str]] = {}
    for mid, g in group_of.items():
        if only is None or mid in only:
            by_group.setdefault(g, []).append(mid)
    truth = {frozenset(p) for ids in by_group.values() for p in combinations(ids, 2)}
    merged = {
        frozenset(p)
        for ids in merged_groups
        for p in combinations(ids, 2)
        if only is None or set(p) <= only
    }
    tp = len(truth & merged)
    return (tp / len(merged) if merged else 1.0), (tp / len(truth) if truth else 1.0)


def merged_groups(report) -> list[tuple[str, ...]]:
    return [
        o.source_ids
        for o in report.reports["merge"].outcomes
        if o.status in ("merged", "previewed")
    ]


def demo_labelled() -> tuple[list[Memory], dict[str, str], set[str], set[str]]:
    """The demo set, its groups, and the two halves (tuning half A, held-out half B) by id."""
    from cortexgraph.demo_data import demo_memories

    ms = demo_memories(now=NOW)
    group_of = {m.id: m.meta.extra["demo_group"] for m in ms if m.meta.extra.get("demo_group")}

    def half(m: Memory, i: int) -> int:
        g = group_of.get(m.id)
        return int(hashlib.md5(g.encode()).hexdigest(), 16) % 2 if g else i % 2

    a = {m.id for i, m in enumerate(ms) if half(m, i) == 0}
    return ms, group_of, a, {m.id for m in ms} - a


__all__ = ["NOW", "demo_labelled", "merged_groups", "pair_quality", "people_for", "synthetic"]
