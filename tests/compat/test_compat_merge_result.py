"""1.x's merge result: ``relation_ids`` (the consolidated_from relations a merge writes) in
consolidate_memories through the SDK's MCP client, and on the Python API's MergeResult."""

from __future__ import annotations

import anyio
from compat_helpers import NOW, PARAPHRASES, make_settings, payload
from mcp import Client

from cortexgraph.agents.cluster_detector import Cluster, ClusterAction
from cortexgraph.agents.semantic_merge import MergeConfig, SemanticMerge
from cortexgraph.mcp_server.app import build_server
from cortexgraph.storage import open_store


def _seed(tmp_path):
    store = open_store(tmp_path / "stm")
    ids = [store.save(t, tags=["style"]).id for t in PARAPHRASES]
    store.save("The team lunch is on Friday at noon", tags=["social"])
    return ids


def _consolidate(tmp_path, ids, mode):
    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            found = payload(await client.call_tool("cluster_memories", {"threshold": 0.3}))
            [cid] = [c["id"] for c in found["clusters"] if set(c["memory_ids"]) == set(ids)]
            return payload(
                await client.call_tool("consolidate_memories", {"cluster_id": cid, "mode": mode})
            )

    return anyio.run(go)


def test_apply_returns_the_consolidated_from_relation_ids(tmp_path):
    ids = _seed(tmp_path)
    out = _consolidate(tmp_path, ids, "apply")
    store = open_store(tmp_path / "stm")
    merged = out["new_memory_id"]
    written = store.relations(memory_id=merged, relation_type="consolidated_from")
    assert len(written) == 3 and {r.to_memory_id for r in written} == set(ids)
    assert sorted(out["relation_ids"]) == sorted(r.id for r in written)
    assert set(out["source_ids"]) == set(ids) and out["archived_count"] == 3
    assert merged in out["message"]
    [result] = out["results"]  # today's per-cluster fields stay, with the ids beside them
    assert result["merged_id"] == merged and result["status"] == "merged"
    assert result["relation_ids"] == out["relation_ids"]


def test_link_returns_the_relations_it_made(tmp_path):
    ids = _seed(tmp_path)
    out = _consolidate(tmp_path, ids, "link")
    related = open_store(tmp_path / "stm").relations(relation_type="related")
    assert out["relations_created"] == 3 == len(related)
    assert sorted(out["relation_ids"]) == sorted(r.id for r in related)
    assert out["results"][0]["status"] == "linked"


def test_preview_has_no_relation_ids_and_writes_none(tmp_path):
    ids = _seed(tmp_path)
    out = _consolidate(tmp_path, ids, "preview")
    assert out["results"][0]["relation_ids"] == [] and "relation_ids" not in out
    assert open_store(tmp_path / "stm").relations() == []


def test_python_merge_result_carries_relation_ids(tmp_path):
    ids = _seed(tmp_path)
    store = open_store(tmp_path / "stm")
    cluster = Cluster("c-test", tuple(ids), 0.9, ClusterAction.MERGE)
    [result] = SemanticMerge(store, None, MergeConfig()).run(now=NOW, clusters=[cluster]).outcomes
    assert result.success and result.new_memory_id is not None
    written = store.relations(memory_id=result.new_memory_id, relation_type="consolidated_from")
    assert sorted(result.relation_ids) == sorted(r.id for r in written) and len(written) == 3
