"""What a person added to a promoted note: the words of its body that its memory does not hold.

Promotion writes a note from its memory alone (``note_format.render_note``): the title (as a
heading when it is not the start of the text), the memory's content, its context under
"## Context", and the managed "## Related" list (wikilinks to related memories' notes and to
entity pages, "merged from:" lines). Notes written before 2.x may also show the neighbour's text
that the memory kept as its context then (``leaked_context``; ``Memory.neighbour_text`` now).
Anything else in the body is a person's: a sentence, a decision, a correction added in
Obsidian. Compared as index terms (``storage.text_index.tokenize``: stems, no stop words), so
what counts is what a search can find by, not spacing or markdown.
"""

from __future__ import annotations

from cortexgraph.storage.models import Memory
from cortexgraph.storage.text_index import tokenize
from cortexgraph.vault_sync.note_body import reading_text

# The section headings render_note writes around the memory's words.
_HEADINGS = frozenset(tokenize("Context Related"))


def reading_terms(body: str, title: str) -> frozenset[str]:
    """Index terms of what a reader reads in a note: no frontmatter, no managed Related list,
    no first heading that only repeats ``title``."""
    return frozenset(tokenize(reading_text(body, title)))


def promoter_terms(memory: Memory, title: str) -> frozenset[str]:
    """Index terms of every word promotion may write into ``memory``'s note body."""
    return _HEADINGS.union(tokenize("\n".join(filter(None, promoter_words(memory, title)))))


def promoter_words(memory: Memory, title: str) -> tuple[str | None, ...]:
    """The texts promotion writes a note body from (hashable: a cache key for a memory's
    version). A title is the explicit one, words of the first line, the first entity or
    "Memory <id>" (note_names.short_title; before short titles, the first line cut)."""
    explicit = memory.meta.extra.get("title")
    return (
        title,
        explicit if isinstance(explicit, str) else None,
        *memory.entities,
        f"Memory {memory.id[:8]}",
        memory.content,
        memory.meta.context,
        memory.neighbour_text,
    )


def added_terms(note_terms: frozenset[str], memory: Memory, title: str) -> frozenset[str]:
    """The terms of a note (``reading_terms``) that promotion did not write from ``memory``:
    empty for a note nobody touched (or one a person only cut or reordered)."""
    return note_terms - promoter_terms(memory, title)


__all__ = ["added_terms", "promoter_terms", "promoter_words", "reading_terms"]
