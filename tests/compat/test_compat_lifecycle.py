"""LatentContext's lifecycle tools and resources through the SDK's MCP client: memory_status,
memory_wipe, memory_compress (sampling and extractive), session/current, graph/schema, and the
cortexgraph://stats subscription."""

from __future__ import annotations

import json

import anyio
from compat_helpers import PARAPHRASES, error_text, folder_bytes, make_settings, payload
from mcp import Client
from mcp_types import CreateMessageResult, ErrorData, TextContent

from cortexgraph.mcp_server.app import build_server
from cortexgraph.storage import open_store


def run(fn, *args):
    return anyio.run(fn, *args)


async def _save(client, content, tags=()):
    return payload(
        await client.call_tool(
            "save_memory", {"content": content, "tags": list(tags), "entities": ["billing"]}
        )
    )["memory_id"]


def test_memory_status_counts_tiers_types_disk_and_indexes(tmp_path):
    store = open_store(tmp_path / "stm")
    a = store.save("We use PostgreSQL for the ledger", entities=["postgresql", "ledger.py"])
    store.save("Old note", entities=["Sam"])
    store.update(a.id, status="promoted")

    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            return payload(await client.call_tool("memory_status", {}))

    out = run(go)
    assert out["tiers"]["stm_active"] == 1 and out["tiers"]["ltm_promoted"] == 1
    assert out["by_status"] == {"active": 1, "promoted": 1, "archived": 0}
    assert out["by_entity_type"] == {"technology": 1, "file": 1, "name": 1}
    assert out["disk_bytes"] > 0 and out["disk_bytes_by_kind"]["memories"] > 0
    assert out["storage_path"] == str(tmp_path / "stm")
    assert out["last_consolidation"] is None
    assert out["indexes"]["embeddings"].startswith("off")


def test_memory_wipe_needs_the_path_and_spares_what_a_person_wrote(tmp_path):
    vault = tmp_path / "vault"
    (vault / "Projects").mkdir(parents=True)
    (vault / "Projects" / "Mine.md").write_text("# My own note\n\nnot cortexgraph's\n")
    settings = make_settings(tmp_path)

    async def go():
        async with Client(build_server(settings)) as client:
            kept_id = await _save(client, "The billing ledger uses PostgreSQL")
            gone_id = await _save(client, "Invoices are sent on the first of the month")
            notes = {}
            for mid in (kept_id, gone_id):
                out = payload(
                    await client.call_tool("promote_memory", {"memory_id": mid, "force": True})
                )
                notes[mid] = out["results"][0]["path"]
            edited = vault / notes[kept_id]
            edited.write_text(edited.read_text() + "\nMy own addition.\n")
            refused = error_text(await client.call_tool("memory_wipe", {"confirm": "yes"}))
            before = len(open_store(tmp_path / "stm"))
            done = payload(
                await client.call_tool(
                    "memory_wipe", {"confirm": str(tmp_path / "stm"), "include_vault_notes": True}
                )
            )
            status = payload(await client.call_tool("memory_status", {}))
            return notes, refused, before, done, status

    notes, refused, before, done, status = run(go)
    assert str(tmp_path / "stm") in refused and "Nothing was deleted" in refused
    assert before == 2
    assert done["memories_deleted"] == 2 and done["vault_notes_deleted"] == 1
    assert len(open_store(tmp_path / "stm")) == 0 and status["tiers"]["ltm_promoted"] == 0
    assert done["vault_notes_kept"] == [next(iter(notes.values()))]
    assert (vault / "Projects" / "Mine.md").read_text().startswith("# My own note")
    kept, gone = notes.values()
    assert (vault / kept).is_file() and "My own addition." in (vault / kept).read_text()
    assert not (vault / gone).exists()
    assert not (tmp_path / "stm" / ".cortexgraph-index.pickle").exists()


def test_memory_wipe_removes_the_entity_notes_it_wrote_and_keeps_edited_ones(tmp_path):
    vault = tmp_path / "vault"
    entities = vault / "cortexgraph" / "entities"
    (vault / "Projects").mkdir(parents=True)
    (vault / "Projects" / "Mine.md").write_text("# My own note\n\nabout [[billing]]\n")
    saved = [
        ("The billing ledger uses PostgreSQL", ["billing", "PostgreSQL"]),
        ("Invoices are sent on the first of the month", ["billing", "invoices"]),
        ("Deploys go out on Thursday afternoons", ["deploys"]),
    ]

    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            for content, names in saved:
                mid = payload(
                    await client.call_tool("save_memory", {"content": content, "entities": names})
                )["memory_id"]
                await client.call_tool("promote_memory", {"memory_id": mid, "force": True})
            written = sorted(p.name for p in entities.iterdir())
            pg = entities / "PostgreSQL.md"  # text outside the managed block
            pg.write_text(pg.read_text() + "\nWe chose it for JSONB.\n")
            inv = entities / "invoices.md"  # a link of the person's own inside the block
            inv.write_text(inv.read_text().replace("\n<!-- /", "\n- [[Mine]]\n<!-- /"))
            (entities / "My list.md").write_text("- my own file in their folder\n")
            users = folder_bytes(vault)
            users = {k: v for k, v in users.items() if not k.startswith(".cortexgraph")}
            done = payload(
                await client.call_tool(
                    "memory_wipe", {"confirm": str(tmp_path / "stm"), "include_vault_notes": True}
                )
            )
            return written, users, done

    written, users, done = run(go)
    assert written == ["PostgreSQL.md", "billing.md", "deploys.md", "invoices.md"]
    assert done["vault_notes_deleted"] == 3 and done["entity_notes_deleted"] == 2
    assert done["entity_notes_kept"] == [
        "cortexgraph/entities/PostgreSQL.md",
        "cortexgraph/entities/invoices.md",
    ]
    assert sorted(p.name for p in entities.iterdir()) == [
        "My list.md",
        "PostgreSQL.md",
        "invoices.md",
    ]
    for rel in ("Projects/Mine.md", "cortexgraph/entities/My list.md"):
        assert (vault / rel).read_bytes() == users[rel]  # the person's files, byte for byte
    for rel in ("cortexgraph/entities/PostgreSQL.md", "cortexgraph/entities/invoices.md"):
        assert (vault / rel).read_bytes() == users[rel]  # edited entity notes untouched
    assert not list((vault / "cortexgraph").glob("*.md"))  # every memory note gone


def test_memory_wipe_leaves_the_entities_folder_when_it_is_all_cortexgraphs(tmp_path):
    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            mid = await _save(client, "The billing ledger uses PostgreSQL")
            await client.call_tool("promote_memory", {"memory_id": mid, "force": True})
            return payload(
                await client.call_tool(
                    "memory_wipe", {"confirm": str(tmp_path / "stm"), "include_vault_notes": True}
                )
            )

    done = run(go)
    assert done["entity_notes_deleted"] == 1 and done["entity_notes_kept"] == []
    assert not (tmp_path / "vault" / "cortexgraph" / "entities").exists()


def test_memory_compress_session_extractive_links_its_sources(tmp_path):
    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            ids = [await _save(client, f"{t}. Decided in the planning call.") for t in PARAPHRASES]
            await _save(client, "Deploys go out on Thursday afternoons only.")
            out = payload(
                await client.call_tool("memory_compress", {"scope": "session", "max_sentences": 2})
            )
            found = payload(await client.call_tool("search_memory", {"query": "tabs spaces"}))
            return ids, out, found

    ids, out, found = run(go)
    assert out["method"] == "extractive" and out["sources"] == 4
    store = open_store(tmp_path / "stm")
    summary = store.get(out["memory_id"])
    assert "summary" in summary.tags and summary.meta.extra["summary"]["scope"] == "session"
    assert len([s for s in summary.content.split(". ") if s]) <= 3
    links = store.relations(memory_id=summary.id, relation_type="consolidated_from")
    assert {r.to_memory_id for r in links} >= set(ids) and len(links) == 4
    assert all(store.get(i).status.value == "active" for i in ids)  # replaces nothing
    assert summary.id in {r["id"] for r in found["results"]}  # ranked like any memory


def test_memory_compress_asks_the_clients_model_when_it_can_sample(tmp_path):
    asked = []

    async def sampling(context, params):
        asked.append(params.messages[0].content.text)
        return CreateMessageResult(
            role="assistant",
            model="client-llm",
            content=TextContent(
                type="text", text="The team settled on tabs for Python and Thursday deploys."
            ),
        )

    async def go():
        async with Client(
            build_server(make_settings(tmp_path)), sampling_callback=sampling
        ) as client:
            for t in PARAPHRASES[:2]:
                await _save(client, t)
            return payload(await client.call_tool("memory_compress", {"scope": "epoch", "days": 1}))

    out = run(go)
    assert out["method"] == "sampling" and "client-llm" in out["note"]
    assert out["content"] == "The team settled on tabs for Python and Thursday deploys."
    assert len(asked) == 1 and PARAPHRASES[0] in asked[0]
    links = open_store(tmp_path / "stm").relations(
        memory_id=out["memory_id"], relation_type="consolidated_from"
    )
    assert len(links) == 2


def _compress_with(tmp_path, sampling=None, mode="auto", times=1):
    async def go():
        async with Client(
            build_server(make_settings(tmp_path)), sampling_callback=sampling, mode=mode
        ) as client:
            for t in PARAPHRASES[:2]:
                await _save(client, f"{t}. Agreed in the style review.")
            args = {"scope": "epoch", "days": 1, "max_sentences": 2}
            return [payload(await client.call_tool("memory_compress", args)) for _ in range(times)]

    out = run(go)
    return out[0] if times == 1 else out


def _sources_linked(tmp_path, out):
    return open_store(tmp_path / "stm").relations(
        memory_id=out["memory_id"], relation_type="consolidated_from"
    )


def test_memory_compress_samples_through_a_pre_2026_client_too(tmp_path):
    async def sampling(context, params):
        return CreateMessageResult(
            role="assistant", model="old-llm", content=TextContent(type="text", text="Tabs.")
        )

    out = _compress_with(tmp_path, sampling, mode="legacy")
    assert (out["method"], out["content"], out["reason"]) == ("sampling", "Tabs.", "")
    assert len(_sources_linked(tmp_path, out)) == 2


def test_memory_compress_falls_back_to_extractive_when_the_clients_model_fails(tmp_path):
    async def refusing(context, params):
        return ErrorData(code=-1, message="the user declined the sampling request")

    out, again = _compress_with(tmp_path, refusing, mode="legacy", times=2)
    assert out["method"] == "extractive"
    assert "sampling failed" in out["reason"] and "declined" in out["reason"]
    store = open_store(tmp_path / "stm")
    summary = store.get(out["memory_id"])
    assert summary.meta.extra["summary"]["method"] == "extractive"
    assert "tabs" in summary.content.lower() and len(_sources_linked(tmp_path, out)) == 2
    assert again["content"] == out["content"]  # the same sources, the same extractive summary


def test_memory_compress_falls_back_when_the_model_answers_no_text(tmp_path):
    async def blank(context, params):
        return CreateMessageResult(
            role="assistant", model="quiet-llm", content=TextContent(type="text", text="  ")
        )

    out = _compress_with(tmp_path, blank)
    assert out["method"] == "extractive" and "quiet-llm" in out["reason"]
    assert "tabs" in out["content"].lower()


def test_memory_compress_without_sampling_says_why_it_is_extractive(tmp_path):
    out = _compress_with(tmp_path)
    assert out["method"] == "extractive"
    assert out["reason"] == "the client does not offer MCP sampling"
    assert len(_sources_linked(tmp_path, out)) == 2


def test_session_and_schema_resources(tmp_path):
    store = open_store(tmp_path / "stm")
    earlier = store.save("Sam prefers dark mode", entities=["Sam"]).id

    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            saved = await _save(client, "The billing ledger uses PostgreSQL")
            await client.call_tool("search_memory", {"query": "dark mode"})
            session = json.loads(
                (await client.read_resource("cortexgraph://session/current")).contents[0].text
            )
            schema = json.loads(
                (await client.read_resource("cortexgraph://graph/schema")).contents[0].text
            )
            return saved, session, schema

    saved, session, schema = run(go)
    assert [m["id"] for m in session["saved"]] == [saved]
    assert earlier in [m["id"] for m in session["recalled"]]
    assert session["tool_calls"]["save_memory"] == 1
    assert schema["entity_types"]["name"] >= 2 and "relation_types" in schema


def test_stats_resource_supports_subscription(tmp_path):
    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            events = []
            async with client.listen(resource_subscriptions=["cortexgraph://stats"]) as sub:
                await _save(client, "A fact worth a stats update")
                with anyio.fail_after(10):
                    async for event in sub:
                        events.append(event)
                        break
            stats = json.loads((await client.read_resource("cortexgraph://stats")).contents[0].text)
            return events, stats

    events, stats = run(go)
    assert getattr(events[0], "uri", None) == "cortexgraph://stats"
    assert stats["memories"] == 1
