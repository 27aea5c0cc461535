"""Frozen configuration of a store. Built at the edge from settings and passed in explicitly."""

from __future__ import annotations

from dataclasses import dataclass, field

from cortexgraph.storage.decay import DecayConfig

# Weight of embedding similarity against BM25 when both are available (0 = BM25 only).
# MiniLM vs BM25 in the fusion: 0.7 measured best on LoCoMo dev through the MCP path
# (R@5 0.696 vs 0.681 at 0.5) and on the hand-fed path (0.682 vs 0.681); docs/retrieval.md.
# Declared once: the store's config, the settings and unified search's vault side read it.
SEMANTIC_WEIGHT = 0.7
# search_unified's weight of the vault's notes against short-term memories (1.0): 1.x's default.
# Declared here because the hooks rank promoted memories with it without reading the settings.
LTM_WEIGHT = 0.7
# The inter-process lock file in a storage directory, held around every write and catch-up:
# the store, its backup and the hooks' few-record writer must all take the same one.
LOCK_NAME = ".cortexgraph.lock"


@dataclass(frozen=True, slots=True)
class StoreConfig:
    decay: DecayConfig = field(default_factory=DecayConfig)
    max_content_bytes: int = 100_000
    # Every other field is bounded too, and so is a whole record (its JSON line, in bytes):
    # one rule for saving and loading (storage.record_limits), so nothing huge gets in or stays.
    max_tags: int = 64
    max_tag_chars: int = 200
    max_entities: int = 256
    max_entity_chars: int = 200
    max_source_chars: int = 2_000
    max_context_chars: int = 20_000
    max_extra_bytes: int = 64_000  # meta.extra, and a relation's metadata, as JSON
    max_record_bytes: int = 1_000_000
    memories_filename: str = "memories.jsonl"
    relations_filename: str = "relations.jsonl"
    # Share of search results that may be danger-zone memories blended in for review.
    review_blend_ratio: float = 0.3
    # Weight of embedding similarity against BM25 (SEMANTIC_WEIGHT above says why 0.7).
    semantic_weight: float = SEMANTIC_WEIGHT
    # How much decay re-ranks relevance: final = relevance * (1 - w + w * min(decay, 1)).
    decay_rerank_weight: float = 0.15
    fsync: bool = False
    # Secrets (cloud keys, tokens, private keys, password=...) are replaced by
    # "[redacted: <kind>]" before a record is written (storage.secrets); False keeps them.
    redact_secrets: bool = True
    # A memories file at least this big gets an index snapshot beside it (storage.index_snapshot),
    # so the next open skips parsing and indexing what it already covers.
    snapshot_min_bytes: int = 1_000_000
    # An open whose file has grown by more than this since its snapshot rewrites the snapshot.
    # A fixed size, not a share of the file: every open pays ~50 ns a byte of the lines past
    # the snapshot, a rewrite ~7 ns a byte of the whole file, once (0.07 s at 10k memories,
    # 0.74 s at 100k); 1 MB (~1,800 lines) keeps each open's tail under ~55 ms at any size.
    # Figures and the choice: docs/incremental.md, "The store's open: extras in bulk".
    snapshot_refresh_bytes: int = 1_000_000

    def record_limits(self) -> tuple[int, ...]:
        """The limits a loaded record is checked against (a snapshot built under others is
        not reused)."""
        return (
            self.max_content_bytes,
            self.max_tags,
            self.max_tag_chars,
            self.max_entities,
            self.max_entity_chars,
            self.max_source_chars,
            self.max_context_chars,
            self.max_extra_bytes,
            self.max_record_bytes,
        )


__all__ = ["LTM_WEIGHT", "SEMANTIC_WEIGHT", "StoreConfig"]
