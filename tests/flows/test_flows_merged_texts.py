"""A run loads no embedding model for the texts its merges made (flows.embedding_tasks.
embed_merged): with no MCP server to pick them up, the next run's cluster step embeds them, and
decides as it would have with them embedded by the run that made them. The real model."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from merged_texts import NEW, TEXTS, cached_keys, embed_in_cache

from cortexgraph.flows.consolidation import run_pipeline
from cortexgraph.flows.pipeline_setup import RunOptions
from cortexgraph.settings import Settings
from cortexgraph.storage import open_store
from cortexgraph.storage.embedding_cache import text_key

pytestmark = pytest.mark.slow


def _settings(root: Path) -> Settings:
    return Settings(
        storage_path=root / "store",
        vault_path=root / "vault",
        enable_embeddings=True,
        beads_enabled=False,
    )


def _decisions(root: Path, report) -> tuple:
    """What the run decided, by content (a merge makes a new id each time)."""
    text = {m.id: m.content for m in open_store(root / "store").list()}
    merges = {
        frozenset(text[i] for i in o.source_ids)
        for o in report.reports["merge"].outcomes
        if o.status == "merged"
    }
    clusters = {
        (frozenset(text[i] for i in c.memory_ids), c.action)
        for c in report.reports["cluster"].clusters
    }
    promotions = {text[p.memory_id] for p in report.reports["promote"].promotions}
    relations = {
        frozenset((text[d.from_id], text[d.to_id])) for d in report.reports["relations"].discovered
    }
    return merges, clusters, promotions, relations


def test_without_a_server_the_next_run_embeds_the_merged_texts_and_decides_the_same(
    prefect_harness, tmp_path
):
    now = time.time()
    ours, twin = tmp_path / "ours", tmp_path / "twin"
    (ours / "vault").mkdir(parents=True)
    store = open_store(ours / "store")
    for text in TEXTS:
        store.save(text, now=now - 3600)
    embed_in_cache(ours / "store", TEXTS)

    first = run_pipeline(_settings(ours), RunOptions(now=now))
    merged = [o.content for o in first.reports["merge"].outcomes if o.status == "merged"]
    assert merged
    # No model was loaded for them: left, and said so.
    assert not {text_key(t) for t in merged} & cached_keys(ours / "store")
    assert any("1 merged text(s) left to embed" in n for n in first.notes), first.notes

    # The twin: the same store with the merged text embedded by the run that made it (as
    # before, or as a running MCP server leaves it).
    shutil.copytree(ours, twin)
    embed_in_cache(twin / "store", merged)
    for root in (ours, twin):
        open_store(root / "store").save(NEW, now=now + 60)
        embed_in_cache(root / "store", [NEW])

    second = run_pipeline(_settings(ours), RunOptions(now=now + 120))
    twin_second = run_pipeline(_settings(twin), RunOptions(now=now + 120))
    # The next run's cluster step compared the new memory with the merged one's vector: it
    # embedded it (agents.cluster_scope._embedded -> EmbeddingCache.held) and saved it.
    assert second.scope is not None and second.scope.changed
    assert {text_key(t) for t in merged} <= cached_keys(ours / "store")
    decided = _decisions(ours, second)
    assert decided == _decisions(twin, twin_second)
    assert any(NEW in group for group in decided[0])  # it merged the new one: a real decision
