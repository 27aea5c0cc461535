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
