"""The turn saved just before is a ranking signal of the next save, never its context: through
the in-process MCP client, it ranks the memory, and shows in no result, merge or note."""

from __future__ import annotations

import time

import anyio
from mcp import Client
from mcp_helpers import make_settings, payload

from cortexgraph.agents.cluster_detector import Cluster, ClusterAction
from cortexgraph.agents.semantic_merge import MergeConfig, SemanticMerge
from cortexgraph.mcp_server.app import build_server
from cortexgraph.storage import open_store

PARAPHRASES = [
    "The billing service stores invoices in PostgreSQL",
    "Billing service invoices are stored in PostgreSQL",
    "Invoices for the billing service are kept in PostgreSQL",
]


def _call(tmp_path, *calls):
    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            return [payload(await client.call_tool(name, args)) for name, args in calls]

    return anyio.run(go)


def test_the_turn_before_ranks_a_save_but_is_never_its_context(tmp_path):
    first, reply, given = _call(
        tmp_path,
        ("save_memory", {"content": "We adopted a puppy named Rex last spring"}),
        ("save_memory", {"content": "Yes, and he already knows how to sit!"}),
        ("save_memory", {"content": "The vet visit is on Monday", "context": "pet care chat"}),
    )
    found, opened, graph = _call(
        tmp_path,
        ("search_memory", {"query": "puppy Rex"}),
        ("open_memories", {"memory_ids": [reply["memory_id"], given["memory_id"]]}),
        ("read_graph", {"status": "all", "page_size": 100}),
    )
    ids = [r["id"] for r in found["results"]]
    # The reply names no puppy: only the turn before it brings it in, below the turn itself.
    assert ids[:2] == [first["memory_id"], reply["memory_id"]], found
    assert all(r["context"] is None for r in found["results"]), found
    contexts = {m["id"]: m["context"] for m in opened["memories"]}
    assert contexts == {reply["memory_id"]: None, given["memory_id"]: "pet care chat"}
    assert {m["id"]: m["context"] for m in graph["memories"]}[reply["memory_id"]] is None
    assert all("neighbour" not in str(m) for m in [*found["results"], *opened["memories"]])
    stored = open_store(tmp_path / "stm").get(reply["memory_id"])
    assert stored.meta.context is None
    assert stored.neighbour_text == "We adopted a puppy named Rex last spring"


def test_a_merge_and_its_note_carry_no_neighbour_text(tmp_path):
    saved = _call(tmp_path, *(("save_memory", {"content": t}) for t in PARAPHRASES))
    ids = tuple(s["memory_id"] for s in saved)
    store = open_store(tmp_path / "stm")
    assert [store.get(i).neighbour_text for i in ids] == [None, *PARAPHRASES[:2]]
    # The merge step itself, on the cluster the saves make (not the detector's rule).
    cluster = Cluster("c-neighbours", ids, 0.9, ClusterAction.MERGE)
    report = SemanticMerge(store, None, MergeConfig()).run(now=time.time(), clusters=[cluster])
    [merge] = report.outcomes
    merged_id = merge.new_memory_id
    assert merged_id is not None
    opened, promoted = _call(
        tmp_path,
        ("open_memories", {"memory_ids": [merged_id]}),
        ("promote_memory", {"memory_id": merged_id, "force": True}),
    )
    assert opened["memories"][0]["context"] is None, opened  # was the sources' neighbours
    assert open_store(tmp_path / "stm").get(merged_id).neighbour_text is None
    note = (tmp_path / "vault" / promoted["results"][0]["path"]).read_text()
    assert "## Context" not in note and "PostgreSQL" in note
