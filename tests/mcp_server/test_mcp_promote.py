"""promote_memory through the in-process MCP client: the pipeline's promotion rule (use over
time, never the moment of the save) and 1.x's result fields."""

from __future__ import annotations

import anyio
from mcp import Client
from mcp_helpers import error_text, folder_bytes, make_settings, payload

from cortexgraph.mcp_server.app import build_server


def _call(tmp_path, *calls):
    async def go():
        async with Client(build_server(make_settings(tmp_path))) as client:
            return [payload(await client.call_tool(name, args)) for name, args in calls]

    return anyio.run(go)


def test_auto_detect_promotes_what_use_earned_never_a_fresh_save(tmp_path):
    fresh, once, used = _call(
        tmp_path,
        ("save_memory", {"content": "The staging database is reset every Sunday night"}),
        ("save_memory", {"content": "Deploys are frozen during the last week of December"}),
        ("save_memory", {"content": "Payments run on the ledger service written in Go"}),
    )
    before = folder_bytes(tmp_path)
    _, _, _, dry = _call(
        tmp_path,
        ("touch_memory", {"memory_id": once["memory_id"]}),
        ("touch_memory", {"memory_id": used["memory_id"]}),
        ("touch_memory", {"memory_id": used["memory_id"]}),
        ("promote_memory", {"auto_detect": True, "dry_run": True}),
    )
    # A new memory scores 1.0 and one recalled once 1.52, both >= 0.65: neither has earned it.
    assert dry["candidates_found"] == 1 and dry["promoted_ids"] == [used["memory_id"]], dry
    [c] = dry["candidates"]
    assert c["id"] == used["memory_id"]
    assert c["content_preview"] == "Payments run on the ledger service written in Go"
    assert c["reason"].startswith("score") and "with 2 uses" in c["reason"]
    assert c["score"] >= 0.65 and c["use_count"] == 2 and 0 <= c["age_days"] < 0.1
    assert dry["message"] == "Would promote 1 memory to obsidian"
    assert dry["promoted_count"] == 1 and dry["dry_run"] is True  # today's fields stay
    assert [r["memory_id"] for r in dry["results"]] == [used["memory_id"]]
    assert fresh["memory_id"] not in dry["promoted_ids"]
    assert "vault" not in {p.split("/")[0] for p in set(folder_bytes(tmp_path)) - set(before)}

    [done] = _call(tmp_path, ("promote_memory", {"auto_detect": True}))
    assert done["promoted_ids"] == [used["memory_id"]] and done["candidates_found"] == 1
    assert done["message"] == "Promoted 1 memory to obsidian"
    assert (tmp_path / "vault" / done["results"][0]["path"]).is_file()


def test_a_named_memory_reports_its_candidate_fields_too(tmp_path):
    [saved] = _call(tmp_path, ("save_memory", {"content": "x" * 150}))
    not_yet, forced = _call(
        tmp_path,
        ("promote_memory", {"memory_id": saved["memory_id"], "dry_run": True}),
        ("promote_memory", {"memory_id": saved["memory_id"], "force": True}),
    )
    assert (not_yet["candidates_found"], not_yet["promoted_ids"], not_yet["candidates"]) == (
        0,
        [],
        [],
    )
    assert not_yet["results"][0]["reason"].startswith("not eligible")
    assert forced["promoted_ids"] == [saved["memory_id"]]
    [c] = forced["candidates"]
    assert c["reason"] == "forced" and c["use_count"] == 0
    assert len(c["content_preview"]) == 100 and c["content_preview"].endswith("…")


def test_the_recalls_a_score_needs_come_from_the_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("CORTEXGRAPH_PROMOTE_SCORE_MIN_USES", "1")
    fresh, once = _call(
        tmp_path,
        ("save_memory", {"content": "The staging database is reset every Sunday night"}),
        ("save_memory", {"content": "Deploys are frozen during the last week of December"}),
    )
    _, dry = _call(
        tmp_path,
        ("touch_memory", {"memory_id": once["memory_id"]}),
        ("promote_memory", {"auto_detect": True, "dry_run": True}),
    )
    # One recall is enough here (2 by default); a fresh save still is not.
    assert dry["promoted_ids"] == [once["memory_id"]], dry
    assert "with 1 uses (>= 1)" in dry["candidates"][0]["reason"]
    assert fresh["memory_id"] not in dry["promoted_ids"]


def test_promote_refuses_a_mistyped_vault_and_starts_a_new_one_in_a_real_folder(tmp_path):
    mistyped = tmp_path / "Obsidain" / "Vault"

    async def go(settings):
        async with Client(build_server(settings)) as client:
            saved = payload(
                await client.call_tool("save_memory", {"content": "Deploys on Fridays"})
            )
            args = {"memory_id": saved["memory_id"], "force": True}
            return saved["memory_id"], await client.call_tool("promote_memory", args)

    _, refused = anyio.run(go, make_settings(tmp_path, ltm_vault_path=mistyped))
    assert f"no vault at {mistyped}; nothing was created: check the path" in error_text(refused)
    assert not (tmp_path / "Obsidain").exists()
    # a vault named in a folder that exists is a new vault: the server, configured once and
    # started by its client, makes it as it makes its store (nobody is there to make it first)
    new_vault = tmp_path / "Documents" / "Vault"
    new_vault.parent.mkdir()
    _, started = anyio.run(go, make_settings(tmp_path / "named", ltm_vault_path=new_vault))
    assert payload(started)["promoted_count"] == 1
    assert list((new_vault / "cortexgraph").glob("*.md"))
    # the default vault (beside the store, no LTM_VAULT_PATH) is made by its first note
    _, promoted = anyio.run(go, make_settings(tmp_path / "fresh", ltm_vault_path=None))
    assert payload(promoted)["promoted_count"] == 1
    assert list((tmp_path / "fresh" / "vault" / "cortexgraph").glob("*.md"))
