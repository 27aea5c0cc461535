"""The writes behind a merge, and their undo. Kept apart from the agent's issue handling."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from cortexgraph.agents.common import RefusedError
from cortexgraph.agents.sentences import union_sentences
from cortexgraph.storage.config import StoreConfig
from cortexgraph.storage.errors import ContentTooLargeError
from cortexgraph.storage.models import (
    MAX_STRENGTH,
    Memory,
    MemoryMeta,
    MemoryStatus,
    Relation,
    new_id,
)
from cortexgraph.storage.protocol import MemoryStore
from cortexgraph.storage.record_limits import utf8_over

PROVENANCE_KEY = "merge"
IDS_NAMED = 5  # how many source ids a refusal lists


class MergeTooLargeError(ContentTooLargeError):
    """The merged memory's text (or context) would pass the store's limit, though each source
    fits: the merge is refused before anything is written."""


@dataclass(frozen=True, slots=True)
class MergePlan:
    memory: Memory  # the merged memory, not yet stored
    sources: tuple[Memory, ...]
    sentences_kept: int
    sentences_collapsed: int


def _union(values: Sequence[Sequence[str]]) -> tuple[str, ...]:
    out: dict[str, None] = {}
    for seq in values:
        for v in seq:
            out.setdefault(v, None)
    return tuple(out)


def merge_order(sources: Sequence[Memory]) -> list[Memory]:
    """The sources as a merge reads them: oldest first (ties by id)."""
    return sorted(sources, key=lambda m: (m.created_at, m.id))


def merged_labels(
    sources: Sequence[Memory], limits: StoreConfig | None = None
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(tags, entities) of the memory merging ``sources`` (in ``merge_order``): the union of
    theirs, in order, cut to the store's ``limits``; past them the merge was refused, though
    no source crossed them, and the archived sources keep all of theirs."""
    ordered = merge_order(sources)
    tags, entities = _union([m.tags for m in ordered]), _union([m.entities for m in ordered])
    if limits is not None:
        tags, entities = tags[: limits.max_tags], entities[: limits.max_entities]
    return tags, entities


def plan_merge(
    sources: Sequence[Memory],
    cohesion: float,
    now: float,
    bonus: float,
    coverage: float,
    *,
    limits: StoreConfig | None = None,
) -> MergePlan:
    """The merged memory ``sources`` would become. ``limits``: the store's (``merged_labels``)."""
    ordered = merge_order(sources)
    tags, entities = merged_labels(ordered, limits)
    text = union_sentences((m.content for m in ordered), coverage)
    contexts = _union([[m.meta.context] for m in ordered if m.meta.context])
    extra: dict[str, Any] = {}
    for m in ordered:
        extra.update({k: v for k, v in m.meta.extra.items() if k != PROVENANCE_KEY})
    extra[PROVENANCE_KEY] = {
        "sources": [{"id": m.id, "status": m.status.value} for m in ordered],
        "cohesion": round(cohesion, 4),
        "merged_at": int(now),
        "repointed": [],
    }
    context = "\n".join(contexts) or None
    if limits is not None:
        _check_merged_size(ordered, text.text, context, limits)
    merged = Memory(
        id=new_id(),
        content=text.text,
        meta=MemoryMeta(
            tags=tags,
            source=next((m.meta.source for m in ordered if m.meta.source), None),
            context=context,
            extra=extra,
        ),
        entities=entities,
        created_at=min(m.created_at for m in ordered),
        last_used=max(m.last_used for m in ordered),
        use_count=sum(m.use_count for m in ordered),
        strength=min(MAX_STRENGTH, max(m.strength for m in ordered) + bonus * cohesion),
        review_count=sum(m.review_count for m in ordered),
        cross_domain_count=max(m.cross_domain_count for m in ordered),
    )
    return MergePlan(merged, tuple(ordered), len(text.sentences), text.collapsed)


def _check_merged_size(
    sources: Sequence[Memory], text: str, context: str | None, limits: StoreConfig
) -> None:
    """Refuse, in words about this merge, a merged memory the store would refuse: its save
    said only "content is N bytes ... Split it into smaller memories", naming no merge."""
    size = utf8_over(text, limits.max_content_bytes)  # the store's own measure
    if size:
        what = f"a text of {size:,} bytes; the limit is {limits.max_content_bytes:,}"
        setting = "CORTEXGRAPH_MAX_CONTENT_BYTES"
    elif context is not None and len(context) > limits.max_context_chars:
        what = (
            f"a context of {len(context):,} characters; the limit is {limits.max_context_chars:,}"
        )
        setting = "CORTEXGRAPH_MAX_CONTEXT_CHARS"
    else:
        return
    ids = ", ".join(m.id for m in sources[:IDS_NAMED])
    more = f" and {len(sources) - IDS_NAMED} more" if len(sources) > IDS_NAMED else ""
    raise MergeTooLargeError(
        f"merging {len(sources)} memories ({ids}{more}) would make {what} ({setting}). "
        "Nothing was merged; each memory stays as it is. To combine them, link them instead "
        "(merge mode 'link'), shorten one of them (cortexgraph edit ID), or raise "
        f"{setting}."
    )


@dataclass(frozen=True, slots=True)
class AppliedMerge:
    relation_ids: tuple[str, ...]  # the merged memory's consolidated_from relations, in order
    repointed: int  # the sources' other relations moved to the merged memory


def apply_plan(
    store: MemoryStore, plan: MergePlan, now: float, issue_id: str | None
) -> AppliedMerge:
    """Store the merged memory, link provenance, archive sources, re-point relations."""
    merged = plan.memory
    source_ids = {m.id for m in plan.sources}
    moves: list[tuple[Relation, Relation | None]] = []
    seen: set[tuple[str, str, str]] = set()
    for source in plan.sources:
        for rel in store.relations(memory_id=source.id):
            if rel.relation_type == "consolidated_from" and rel.from_memory_id == source.id:
                continue  # the source's own provenance stays with it (chained merges undo too)
            a = merged.id if rel.from_memory_id in source_ids else rel.from_memory_id
            b = merged.id if rel.to_memory_id in source_ids else rel.to_memory_id
            if a == b:
                continue  # between two sources: stays as it is, on the archived pair
            key = (a, b, rel.relation_type)
            new = None
            if key not in seen:
                seen.add(key)
                new = Relation(
                    new_id(),
                    a,
                    b,
                    rel.relation_type,
                    rel.strength,
                    int(now),
                    {**rel.metadata, "repointed_from": rel.id},
                )
            moves.append((rel, new))
    provenance = dict(merged.meta.extra[PROVENANCE_KEY])
    provenance["repointed"] = [
        {"original": old.to_json(), "new_id": new.id if new else None} for old, new in moves
    ]
    if issue_id:
        provenance["issue_id"] = issue_id
    extra = {**merged.meta.extra, PROVENANCE_KEY: provenance}
    merged = merged.with_changes(
        meta=MemoryMeta(merged.tags, merged.meta.source, merged.meta.context, extra)
    )
    # One hold of the store for the merge's writes (a JSONL store's lock once, not once per
    # write: ~7 acquires a merge were half of a 10k merge's CPU).
    with store.writing():
        links = _write_merge(store, merged, plan, moves, provenance["cohesion"], now)
    return AppliedMerge(tuple(r.id for r in links), sum(new is not None for _, new in moves))


def _write_merge(
    store: MemoryStore,
    merged: Memory,
    plan: MergePlan,
    moves: Sequence[tuple[Relation, Relation | None]],
    cohesion: Any,
    now: float,
) -> list[Relation]:
    """The merged memory, its provenance links, the moved relations, the archived sources."""
    store.put(merged)
    # One append for the provenance links and the moved relations: an append per relation
    # was a fifth of a 10k merge run's time.
    provenance = [
        Relation(
            new_id(), merged.id, s.id, "consolidated_from", 1.0, int(now), {"cohesion": cohesion}
        )
        for s in plan.sources
    ]
    written = store.put_relations([*provenance, *(new for _, new in moves if new is not None)])
    links = written[: len(provenance)]
    for old, _ in moves:
        store.delete_relation(old.id)
    store.put_many(
        s.with_changes(
            status=MemoryStatus.ARCHIVED,
            meta=MemoryMeta(
                s.tags, s.meta.source, s.meta.context, {**s.meta.extra, "merged_into": merged.id}
            ),
        )
        for s in plan.sources
    )
    return links


def link_members(
    store: MemoryStore, members: Sequence[Memory], cohesion: float, now: float
) -> tuple[str, ...]:
    """Relate every pair of members (``related``) unless they are already related; the ids of
    the relations made."""
    made: list[str] = []
    for a, b in combinations(members, 2):
        if any(
            r.to_memory_id in (a.id, b.id) and r.from_memory_id in (a.id, b.id)
            for r in store.relations(memory_id=a.id)
        ):
            continue
        relation = store.add_relation(
            a.id,
            b.id,
            "related",
            strength=round(min(1.0, cohesion), 4),
            metadata={"discovered_by": "semantic-merge"},
            now=now,
        )
        made.append(relation.id)
    return tuple(made)


def undo_merge(
    store: MemoryStore,
    merged_id: str,
    *,
    now: float,
    dry_run: bool,
    mark: Mapping[str, Any] | None = None,
) -> tuple[str, ...]:
    """Sources back with their old status (and ``mark`` added to their ``meta.extra``), the
    merged memory deleted, re-pointed relations restored."""
    merged = store.get(merged_id)
    provenance = merged.meta.extra.get(PROVENANCE_KEY)
    if not isinstance(provenance, dict) or "sources" not in provenance:
        raise RefusedError(f"memory {merged_id} was not made by a merge; nothing to undo")
    sources = [(s["id"], MemoryStatus(s["status"])) for s in provenance["sources"]]
    missing = [sid for sid, _ in sources if store.find(sid) is None]
    if missing:
        raise RefusedError(f"cannot undo merge {merged_id}: source(s) {missing} no longer exist")
    if dry_run:
        return tuple(sid for sid, _ in sources)
    for sid, status in sources:
        src = store.get(sid)
        extra = {k: v for k, v in src.meta.extra.items() if k != "merged_into"}
        extra.update(mark or {})
        store.put(
            src.with_changes(
                status=status, meta=MemoryMeta(src.tags, src.meta.source, src.meta.context, extra)
            )
        )
    store.delete(merged_id)  # and with it every relation it holds, re-pointed ones included
    for move in provenance.get("repointed", ()):
        original = Relation.from_json(move["original"])
        if store.find(original.from_memory_id) and store.find(original.to_memory_id):
            store.put_relation(original)
    return tuple(sid for sid, _ in sources)


__all__ = [
    "PROVENANCE_KEY",
    "AppliedMerge",
    "MergePlan",
    "MergeTooLargeError",
    "apply_plan",
    "link_members",
    "merge_order",
    "merged_labels",
    "plan_merge",
    "undo_merge",
]
