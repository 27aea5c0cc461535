"""Recall through the path users take: save_memory(text), then search_memory(question).

A small conversation written for this test (two people, as an assistant would save a chat)
with questions whose answer is one turn. Embeddings are off so the ranking is BM25 plus what
the save path adds; the full measurement is bench/locomo.py (docs/retrieval.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp_helpers import make_settings, payload

from cortexgraph.mcp_server.app import build_server

TURNS = [
    "Ana: I finally adopted a dog last weekend, a rescue named Biscuit.",
    "Ben: That's wonderful! What breed is Biscuit?",
    "Ana: A beagle mix, about three years old.",
    "Ben: I've been training for the Lisbon marathon in October.",
    "Ana: How many kilometres are you running each week?",
    "Ben: Around sixty, with a long run on Sundays.",
    "Ana: My sister Clara just moved to Toronto for a nursing job.",
    "Ben: Does Clara like it there so far?",
    "Ana: She loves it, except for the winters.",
    "Ben: I started learning the cello in January.",
    "Ana: Who is your teacher?",
    "Ben: A retired orchestra player called Mr. Haddad.",
    "Ana: I'm reading a novel about lighthouse keepers in Norway.",
    "Ben: Is it any good?",
    "Ana: Beautiful, slow and very sad.",
    "Ben: My favourite food is still my grandmother's lentil soup.",
    "Ana: We should cook it together sometime.",
    "Ben: Deal, next Friday at my place.",
]
# question -> index of the turn that answers it
QUESTIONS = {
    "What breed is Ana's dog?": 2,
    "How far does Ben run each week?": 5,
    "Where did Clara move?": 6,
    "What does Clara think of Toronto?": 8,
    "Who teaches Ben the cello?": 11,
    "What is Ana reading?": 12,
    "What did Ana think of the novel?": 14,
    "When will they cook the soup?": 17,
}


async def _ranks(settings: Any) -> list[int]:
    """1-based rank of the answering turn for each question (99 when not in the top 10)."""
    async with Client(build_server(settings)) as client:
        ids = [
            payload(await client.call_tool("save_memory", {"content": turn}))["memory_id"]
            for turn in TURNS
        ]
        ranks = []
        for question, gold in QUESTIONS.items():
            found = payload(await client.call_tool("search_memory", {"query": question}))
            ranked = [r["id"] for r in found["results"]]
            ranks.append(ranked.index(ids[gold]) + 1 if ids[gold] in ranked else 99)
        return ranks


def _mrr(ranks: list[int]) -> float:
    return sum(1 / r for r in ranks) / len(ranks)


def test_enrichment_on_ranks_the_answer_no_worse_than_enrichment_off(tmp_path: Path) -> None:
    on = anyio.run(_ranks, make_settings(tmp_path / "on"))
    off = anyio.run(
        _ranks,
        make_settings(tmp_path / "off", enable_preprocessing=False, save_neighbour_context=False),
    )
    assert _mrr(on) >= _mrr(off), (on, off)
    assert sum(r <= 3 for r in on) >= sum(r <= 3 for r in off), (on, off)


async def _save_pair(settings: Any, second: dict[str, Any]) -> tuple[dict, dict]:
    async with Client(build_server(settings)) as client:
        first = payload(
            await client.call_tool(
                "save_memory",
                {
                    "content": "Sarah lives in Paris with her two cats",
                    "entities": ["sarah", "paris"],
                },
            )
        )
        return first, payload(await client.call_tool("save_memory", second))


def test_explicit_empty_lists_mean_none(tmp_path: Path) -> None:
    change = "Sarah moved from Paris to London last month"
    _, saved = anyio.run(
        _save_pair,
        make_settings(tmp_path / "a"),
        {"content": change, "entities": [], "tags": [], "supersedes": []},
    )
    assert saved["entities"] == [] and saved["tags"] == []
    assert saved["temporal"]["superseded"] == []
    # Omitted, the same text is read as the update it states.
    first, auto = anyio.run(
        _save_pair,
        make_settings(tmp_path / "b"),
        {"content": change, "entities": ["sarah", "paris", "london"]},
    )
    assert [s["memory_id"] for s in auto["temporal"]["superseded"]] == [first["memory_id"]]


def test_a_transcript_line_is_about_its_speaker(tmp_path: Path) -> None:
    async def go() -> dict[str, Any]:
        async with Client(build_server(make_settings(tmp_path))) as client:
            return payload(
                await client.call_tool(
                    "save_memory",
                    {
                        "content": "[1:56 pm on 8 May, 2023] Caroline: I went to a support group with "
                        "Melanie in Boston."
                    },
                )
            )

    saved = anyio.run(go)
    # Who it is about; not whom it mentions, nor the time stamp (measured: docs/retrieval.md).
    assert saved["entities"] == ["caroline"]


def test_each_save_gets_the_previous_turn_as_context(tmp_path: Path) -> None:
    async def go() -> list[dict[str, Any]]:
        async with Client(build_server(make_settings(tmp_path))) as client:
            a = payload(await client.call_tool("save_memory", {"content": TURNS[0]}))
            b = payload(await client.call_tool("save_memory", {"content": TURNS[1]}))
            c = payload(
                await client.call_tool("save_memory", {"content": TURNS[2], "context": "given"})
            )
            got = payload(
                await client.call_tool(
                    "open_memories",
                    {"memory_ids": [a["memory_id"], b["memory_id"], c["memory_id"]]},
                )
            )
            return got["memories"]

    a, b, c = anyio.run(go)
    assert a["context"] is None
    assert b["context"] == TURNS[0]
    assert c["context"] == "given"  # a caller's context always wins


def test_supersession_never_fires_on_ordinary_statements(tmp_path: Path) -> None:
    """The labelled set's ordinary half (statements that share a name or a change word)."""
    cases = [
        json.loads(line)
        for line in (Path(__file__).parent.parent / "fixtures" / "supersession_labelled.jsonl")
        .read_text(encoding="utf-8")
        .splitlines()
        if line
    ]

    async def detect(case: dict[str, Any], where: Path) -> bool:
        async with Client(build_server(make_settings(where))) as client:
            old = payload(await client.call_tool("save_memory", {"content": case["old"]}))
            new = payload(await client.call_tool("save_memory", {"content": case["new"]}))
            return any(s["memory_id"] == old["memory_id"] for s in new["temporal"]["superseded"])

    results = [(c, anyio.run(detect, c, tmp_path / str(i))) for i, c in enumerate(cases)]
    false_positives = [c["new"] for c, hit in results if hit and not c["update"]]
    found = sum(hit for c, hit in results if c["update"])
    assert false_positives == []
    assert found >= 0.6 * sum(c["update"] for c in cases)  # 0.70 with rule-based entities
