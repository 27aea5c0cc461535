"""The Related list of a memory's note: links to the notes of its related memories (only those
that have one, so no link dangles), its merged sources by their first words, its entities."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from cortexgraph.storage.models import Memory, Relation
from cortexgraph.vault_sync.ledger import WriteLedger
from cortexgraph.vault_sync.note_format import LinkTarget
from cortexgraph.vault_sync.note_names import entity_note_stem
from cortexgraph.vault_sync.paths import ensure_inside


def note_links(
    vault: Path,
    memory: Memory,
    related: Sequence[Memory],
    relations: Sequence[Relation],
    ledger: WriteLedger,
    *,
    entity_notes: bool,
    find: Callable[[str], Path | None] | None = None,
    entity_stem: Callable[[str], str] = entity_note_stem,
) -> list[LinkTarget]:
    """The links of ``memory``'s Related list, in a stable order. ``find``: where a related
    memory's note is now when it is not where it was written (the sink's locator);
    ``entity_stem``: an entity's note (note_names.EntityStems.stem: one per entity, any case)."""
    types: dict[str, str] = {}
    for rel in relations:
        other = rel.other_end(memory.id)
        if other != memory.id:
            types.setdefault(other, rel.relation_type)
    hints = {m.id: m.promoted_to for m in related}
    links: list[LinkTarget] = []
    for other in dict.fromkeys([*hints, *types]):
        entry = ledger.get(other)
        path = existing_note(vault, entry.path if entry else None) or existing_note(
            vault, hints.get(other)
        )
        if path is None and find is not None and (entry is not None or hints.get(other)):
            # It had a note: a person renamed or moved it (Obsidian then rewrote the links to
            # it), and dropping the link would undo that.
            path = find(other)
        if path is None and types.get(other) == "consolidated_from":
            source = next((m for m in related if m.id == other), None)
            label = f"{source_label(source)} ({other[:8]})" if source else other[:8]
            links.append(LinkTarget("", label=label, kind="merged"))
            continue
        if path is None:  # not in long-term memory: a link would dangle
            continue
        links.append(LinkTarget(path.stem, kind="memory", relation_type=types.get(other)))
    if entity_notes:
        stems: dict[str, str] = {}  # "Redis" and "redis" are one note: linked once
        for entity in memory.entities:
            stems.setdefault(entity_stem(entity), entity)
        links.extend(LinkTarget(s, label=e, kind="entity") for s, e in stems.items())
    return links


def existing_note(vault: Path, rel: str | None) -> Path | None:
    """The file at vault-relative ``rel`` if it is one inside the vault."""
    if not rel:
        return None
    try:
        path = ensure_inside(vault, Path(rel))
    except ValueError:
        return None
    return path if path.is_file() else None


def source_label(memory: Memory, words: int = 12) -> str:
    """A merged source in the Related list: its first words."""
    text = " ".join(memory.content.split())
    cut = " ".join(text.split()[:words])
    return cut if cut == text else cut + "…"


__all__ = ["existing_note", "note_links", "source_label"]
