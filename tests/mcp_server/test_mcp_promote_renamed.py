"""A long-running server keeps one ObsidianNoteSink for all its calls, and that sink listed
each notes folder once, keeping the names it had seen as taken for its whole life. A name a
person freed in Obsidian (renaming the note, or deleting it: Obsidian moves it to .trash/) stayed
taken, so the next note of that title was written as "<title> 2" beside the free name. The
sink's free names now see a name freed behind its back; a renamed note itself is still found by
its id and updated."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp_helpers import make_settings, payload

from cortexgraph.mcp_server.app import build_server

CONTENT = "We chose PostgreSQL 16 for billing because of row-level security"
TITLE = "We chose PostgreSQL 16 for billing"


def _session(tmp_path: Path, steps: Any) -> Any:
    """Run ``steps(call, notes)`` against one server (one sink) over the real vault."""

    async def go() -> Any:
        async with Client(build_server(make_settings(tmp_path))) as client:

            async def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
                return payload(await client.call_tool(name, args))

            return await steps(call, tmp_path / "vault" / "cortexgraph")

    return anyio.run(go)


async def _promote(call: Any, content: str) -> tuple[str, str]:
    saved = await call("save_memory", {"content": content})
    done = await call("promote_memory", {"memory_id": saved["memory_id"], "force": True})
    (result,) = done["results"]
    return saved["memory_id"], result["path"]


def _notes(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("*.md"))


def test_a_renamed_note_is_updated_and_its_old_name_is_free_again(tmp_path: Path) -> None:
    async def steps(call: Any, notes: Path) -> None:
        first, path = await _promote(call, CONTENT)
        assert path == f"cortexgraph/{TITLE}.md"
        (notes / f"{TITLE}.md").rename(notes / "Billing database choice.md")
        again = await call("promote_memory", {"memory_id": first, "force": True})
        assert again["results"][0]["path"] == "cortexgraph/Billing database choice.md"
        assert again["results"][0]["created"] is False
        # Another memory with the same title: the name the person freed is used.
        _, other = await _promote(call, CONTENT.replace("row-level", "its row-level"))
        assert other == f"cortexgraph/{TITLE}.md", other
        assert _notes(notes) == ["Billing database choice.md", f"{TITLE}.md"]

    _session(tmp_path, steps)


def test_a_note_deleted_in_obsidian_comes_back_under_its_own_name(tmp_path: Path) -> None:
    async def steps(call: Any, notes: Path) -> None:
        first, path = await _promote(call, CONTENT)
        trash = tmp_path / "vault" / ".trash"
        trash.mkdir()
        (notes / f"{TITLE}.md").rename(trash / f"{TITLE}.md")  # Obsidian's delete
        again = await call("promote_memory", {"memory_id": first, "force": True})
        assert again["results"][0]["path"] == path, again["results"]
        assert again["results"][0]["created"] is True
        assert _notes(notes) == [f"{TITLE}.md"]

    _session(tmp_path, steps)


def test_a_name_still_taken_is_not_reused(tmp_path: Path) -> None:
    """The cache is checked, not dropped: a name taken by a note of the person's stays taken."""

    async def steps(call: Any, notes: Path) -> None:
        await _promote(call, CONTENT)
        (notes / f"{TITLE}.md").rename(notes / "Billing database choice.md")
        (notes / f"{TITLE.lower()}.md").write_text("A note of the person's.\n")
        _, other = await _promote(call, CONTENT.replace("row-level", "its row-level"))
        assert other == f"cortexgraph/{TITLE} 2.md"
        assert (notes / f"{TITLE.lower()}.md").read_text() == "A note of the person's.\n"

    _session(tmp_path, steps)
