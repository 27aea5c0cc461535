"""Merging a cluster whose memories hold more tags (or entities) together than one memory may.

The merged memory is the union of its sources' tags and entities; past the store's limits its
save was refused and consolidate_memories answered status "failed" with "tags: 76 given; the
limit is 64 (CORTEXGRAPH_MAX_TAGS)", a limit no caller had crossed, while the preview had shown
it as mergeable. The union is cut to the limits, in source order; the archived sources keep
all of theirs (undo brings them back).
"""

from __future__ import annotations

from pathlib import Path

from mcp_helpers import session_payloads

from cortexgraph.storage import open_store

TEXTS = (
    "The billing service stores invoices in PostgreSQL 16 with nightly backups.",
    "The billing service stores invoices in PostgreSQL 16 with daily backups.",
    "The billing service stores the invoices in PostgreSQL 16 with nightly backups.",
)


def test_a_merge_past_the_tag_and_entity_limits_is_applied(tmp_path: Path) -> None:
    store = open_store(tmp_path / "stm")
    for k, text in enumerate(TEXTS):
        store.save(
            text,
            tags=["billing"] + [f"t{k}-{i}" for i in range(25)],
            entities=[
                "PostgreSQL",
                *(f"S{i}" for i in range(200)),
                *(f"E{k}x{i}" for i in range(20)),
            ],
        )
    limits = store.config
    del store
    (found,) = session_payloads(tmp_path, ("cluster_memories", {}))
    (cluster,) = found["clusters"]
    preview, applied = session_payloads(
        tmp_path,
        ("consolidate_memories", {"cluster_id": cluster["id"], "mode": "preview"}),
        ("consolidate_memories", {"cluster_id": cluster["id"], "mode": "apply"}),
    )
    (shown,) = preview["previews"]
    assert len(shown["merged_tags"]) == limits.max_tags
    (result,) = applied["results"]
    assert result["status"] == "merged", result
    merged = open_store(tmp_path / "stm").get(applied["new_memory_id"])
    assert list(merged.tags) == shown["merged_tags"]
    assert "billing" in merged.tags and "PostgreSQL" in merged.entities
    assert list(merged.entities) == shown["merged_entities"]
    assert len(merged.entities) == limits.max_entities


COMMON = " ".join(f"The billing ledger keeps invoice batch {i} in PostgreSQL." for i in range(8))
OWN = (
    " Alice reviews the March export on Mondays. The audit team wants CSV files by email.",
    " Bob rotates the replica credentials every quarter. Nightly backups go to Frankfurt.",
)


def test_a_merge_past_the_content_limit_is_refused_in_words_about_the_merge(
    tmp_path: Path,
) -> None:
    """Each memory fits, their merge would not: consolidate_memories answered the store's
    words for a save ("content is ... Split it into smaller memories"), naming no merge."""
    store = open_store(tmp_path / "stm")
    a, b = (store.save(COMMON + own) for own in OWN)
    limit = max(len(a.content), len(b.content)) + 20
    del store
    (found,) = session_payloads(tmp_path, ("cluster_memories", {}), max_content_bytes=limit)
    (cluster,) = found["clusters"]
    preview, applied = session_payloads(
        tmp_path,
        ("consolidate_memories", {"cluster_id": cluster["id"], "mode": "preview"}),
        ("consolidate_memories", {"cluster_id": cluster["id"], "mode": "apply"}),
        max_content_bytes=limit,
    )
    for answer in (preview, applied):
        (result,) = answer["results"]
        assert result["status"] == "refused", result
        reason = result["reason"]
        assert reason.startswith("merging 2 memories") and a.id in reason and b.id in reason
        assert f"the limit is {limit:,} (CORTEXGRAPH_MAX_CONTENT_BYTES)" in reason
        assert "link them instead" in reason
    assert applied["new_memory_id"] is None
    after = open_store(tmp_path / "stm")
    assert sorted(m.id for m in after.list()) == sorted([a.id, b.id])
    assert {m.status.value for m in after.list()} == {"active"}
