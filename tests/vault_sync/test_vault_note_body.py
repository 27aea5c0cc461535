"""A note's words as recall shows them: no frontmatter, no managed Related list, a person's
text kept (vault_sync.note_body; the hooks read notes with it without parsing YAML)."""

from __future__ import annotations

from cortexgraph.storage.models import Memory
from cortexgraph.vault_sync.note_body import body_of, reading_text
from cortexgraph.vault_sync.note_format import (
    LinkTarget,
    note_text,
    parse_note_text,
    related_block,
    render_note,
)
from cortexgraph.vault_sync.note_names import note_name


def test_a_written_note_reads_as_its_memorys_words_without_links() -> None:
    memory = Memory(
        id="m1", content="Ledgerly keeps money as integer cents.", entities=["Ledgerly"]
    )
    links = [LinkTarget("Ledgerly", "Ledgerly", kind="entity")]
    rendered = render_note(memory, note_name(memory), links=links, now=1_700_000_000)
    text = note_text(rendered.metadata, rendered.body)
    assert "[[Ledgerly]]" in text
    assert body_of(text) == parse_note_text(text).body  # the same split, without YAML
    assert reading_text(body_of(text), rendered.title) == memory.content


def test_a_persons_words_around_the_list_stay_and_only_a_repeated_title_goes() -> None:
    body = (
        "# Money\n\nInteger cents, see [[Ledgerly|the ledger]].\n\n## Related\n\n"
        + related_block([LinkTarget("Billing", "Billing", kind="entity")])
        + "\n\nSigned off by finance.\n"
    )
    assert reading_text(body, "Money") == "Integer cents, see the ledger. Signed off by finance."
    assert reading_text(body, "Other").startswith("Money Integer cents")
    assert reading_text("# Money\n") == "Money"


def test_frontmatter_that_is_not_closed_or_absent_leaves_the_whole_text() -> None:
    assert body_of("---\ntitle: x\nno end\n") == "---\ntitle: x\nno end\n"
    assert body_of("\ufeffplain note") == "plain note"
    assert body_of("---\nbroken: [yaml\n---\nbody") == "body"
