"""A note's title and alias are read from the memory's first line of prose, as a person reads
it in Obsidian: a numbered step gave notes called "1", "1 2", "1 3"; a memory opening with a
code block was called by its language ("python"); HTML tags, a markdown link's URL, bold and
backticks came through as words or stray marks ("B Important b", "Decision**: use ...")."""

from __future__ import annotations

from pathlib import Path

import pytest

from cortexgraph.storage import InMemoryStore
from cortexgraph.vault_sync import ObsidianNoteSink, parse_note_text, promote_memory
from cortexgraph.vault_sync.note_names import note_name

NOW = 1_750_000_000.0

CASES = [
    # (memory, title, alias)
    ("1. Rotate the signing keys\n2. Restart billing", "Rotate the signing keys", None),
    ("2) Page Sam\n3) Open the incident doc", "Page Sam", None),
    (
        "```python\nprint(total)\n```\nThe snippet prints the invoice total",
        "The snippet prints the invoice total",
        None,
    ),
    (
        "<b>Important</b>: rotate the signing keys monthly",
        "Important rotate the signing keys monthly",
        "Important: rotate the signing keys monthly",
    ),
    (
        "See [the runbook](https://wiki.example/runbook) before paging Sam",
        "See the runbook",
        "See the runbook before paging Sam",
    ),
    (
        "**Decision**: use Postgres for billing",
        "Decision use Postgres for billing",
        "Decision: use Postgres for billing",
    ),
    (
        "`kubectl get pods` shows crashloops in billing",
        "Kubectl get pods shows crashloops",
        "kubectl get pods shows crashloops in billing",
    ),
    ("- [x] shipped the invoice export", "shipped the invoice export", None),
    ("<!-- from standup --> Invoices go out on the 1st", "Invoices go out on the 1st", None),
]


@pytest.mark.parametrize(("content", "title", "alias"), CASES)
def test_a_title_and_alias_are_the_first_line_of_prose(
    content: str, title: str, alias: str | None
) -> None:
    name = note_name(InMemoryStore().save(content, now=NOW))
    assert (name.title, name.alias) == (title, alias or title)


def test_numbered_steps_get_notes_named_after_their_first_step(tmp_path: Path) -> None:
    vault, store = tmp_path / "vault", InMemoryStore()
    steps = [
        "1. Check the outbox lag dashboard\n2. Restart the relay",
        "1. Freeze the release branch\n2. Tag the build",
    ]
    with ObsidianNoteSink(vault, entity_notes=False) as sink:
        rels = [
            promote_memory(store, sink, store.save(s, now=NOW).id, now=NOW, force=True).path
            for s in steps
        ]
    assert [Path(rel).stem for rel in rels] == [
        "Check the outbox lag dashboard",
        "Freeze the release branch",
    ]
    meta = parse_note_text((vault / rels[0]).read_text(encoding="utf-8")).metadata
    assert meta["title"] == "Check the outbox lag dashboard"
    assert meta["aliases"] == ["Check the outbox lag dashboard"]
