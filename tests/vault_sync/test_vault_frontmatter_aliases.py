"""Frontmatter with YAML aliases, in a note anyone may have put in the vault: nine anchors of
nine aliases each are a few hundred bytes that expand to 9**9 strings when the value is
walked (the first reader hung for minutes), and ``&a [*a]`` is a list that holds itself (a
RecursionError in every reader). Obsidian's properties never write aliases: such frontmatter is
read as broken, the note's text kept whole, and the other notes are found as before.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from cortexgraph.vault_sync import parse_note_text


def _laughs(levels: int) -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    names = "abcdefghij"
    for k in range(1, levels):
        aliases = ",".join([f"*{names[k - 1]}"] * 9)
        lines.append(f"{names[k]}: &{names[k]} [{aliases}]")
    return "---\ntitle: Notes\n" + "\n".join(lines) + "\n---\nThe body stays.\n"


@pytest.mark.parametrize(
    "text",
    [_laughs(9), "---\ntitle: Loop\nx: &x [*x]\n---\nThe body stays.\n"],
    ids=["nine-levels", "holds-itself"],
)
def test_frontmatter_with_aliases_is_broken_not_expanded(text: str) -> None:
    parsed = parse_note_text(text)
    assert parsed.frontmatter_error is not None and "alias" in parsed.frontmatter_error
    assert parsed.metadata == {} and parsed.body == text  # nothing the person wrote is lost


def test_an_asterisk_that_is_not_an_alias_is_read() -> None:
    parsed = parse_note_text('---\ntitle: "*bold* plan"\nrating: "**"\n---\nbody\n')
    assert parsed.frontmatter_error is None
    assert parsed.metadata == {"title": "*bold* plan", "rating": "**"}


def test_search_unified_over_mcp_finds_the_other_notes(tmp_path: Path) -> None:
    from mcp import Client
    from mcp_common import make_settings, payload

    from cortexgraph.mcp_server.app import build_server

    settings = make_settings(tmp_path)
    vault = tmp_path / "vault"
    (vault / "Bomb.md").write_text(_laughs(9).replace("The body", "Lisbon: the body"))
    (vault / "Hotel.md").write_text("---\ntitle: Hotel\n---\nThe Lisbon hotel is booked.\n")

    async def go() -> dict:
        async with Client(build_server(settings)) as client:
            return payload(await client.call_tool("search_unified", {"query": "Lisbon"}))

    found = anyio.run(go)
    assert "Hotel" in {r["title"] for r in found["results"]}
