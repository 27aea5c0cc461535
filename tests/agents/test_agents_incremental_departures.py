"""What a memory's leaving makes clusterable (issue 32): the clusters analogue of
agents.chain_gaps.

The cluster detector groups by complete linkage: a memory in a cluster keeps out another that
is linked to one member and not to it. When it leaves the active set (archived since the last
run, promoted or merged by the last run) the two others can cluster, though neither changed: a
full run proposes them, an incremental run must too.
"""

from __future__ import annotations

import pytest
from agents_helpers import NOW, add
from fakes import HashingEmbedder, RecordingSink

from cortexgraph.agents import incremental
from cortexgraph.agents.memory_tracker import InMemoryIssueTracker
from cortexgraph.agents.pipeline import Pipeline, run_agents
from cortexgraph.storage import InMemoryStore

WORDS = [f"zq{chr(97 + k // 26)}{chr(97 + k % 26)}" for k in range(200)]
# On the fake model's vectors: A-D 0.73 and A-B 0.69 (a review's reach), B-D 0.43 (unlinked).
A = WORDS[0:40]
D = WORDS[0:28] + WORDS[100:112]
B = WORDS[0:16] + WORDS[28:39] + WORDS[120:133]


def _pipeline(store, embedder):
    return Pipeline(store, embedder=embedder, sink=RecordingSink(), tracker=InMemoryIssueTracker())


def _clusters(report, name):
    return {
        (tuple(sorted(name.get(i, "?") for i in c.memory_ids)), c.action)
        for c in report.reports["cluster"].clusters
    }


@pytest.mark.parametrize("leaves", ["archived", "promoted"])
def test_a_memory_that_left_lets_its_neighbours_cluster(leaves):
    store = InMemoryStore()
    embedder = HashingEmbedder(dims=4096)
    a = add(store, " ".join(A), age_days=2)
    used = 6 if leaves == "promoted" else 0  # promoted by the first run itself
    d = add(store, " ".join(D), age_days=2, use_count=used, used_days_ago=0.1)
    b = add(store, " ".join(B), age_days=2)
    name = {a.id: "A", d.id: "D", b.id: "B"}
    first = _pipeline(store, embedder)
    changes = incremental.begin(first, None, NOW)
    report = run_agents(first, now=NOW, scope=first.scope)
    assert _clusters(report, name) == {(("A", "D"), "review")}  # B is kept out by D
    state = incremental.state_after(first, changes, report, NOW)
    if leaves == "archived":
        store.update(d.id, status="archived")  # by a person, or gc from the MCP server
    assert store.get(d.id).status == leaves

    later = NOW + 3600
    full = run_agents(_pipeline(store, embedder), now=later, dry_run=True)
    assert _clusters(full, name) == {(("A", "B"), "review")}
    nxt = _pipeline(store, embedder)
    incremental.begin(nxt, state, later)
    again = run_agents(nxt, now=later, dry_run=True, scope=nxt.scope)
    assert _clusters(again, name) == _clusters(full, name)
