"""The entity step of RelationshipDiscovery: a finder's entities read into memories.

Memories no finder has read yet are handed to it in one batch (spaCy's ``nlp.pipe`` in
activation.entity_batch, wired by the flow and the MCP tool), and the people, places,
organisations, pets, events and things it finds join the memory's own entities (a live run
writes them back, marked ``entities_found`` with the finder's method, so the next run reads only
new memories; at most ``limit`` a run, newest first). A transcript line ("Speaker: ...") keeps
its speaker as its only entity and gets the rest as its ``mentions`` (``Memory.mentions``):
search boosts entities, and the names a line mentions are not what it is about; relations read
both. A save stays cheap: at most the speaker and rule matches.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Protocol

from cortexgraph.agents.restatement import utterance
from cortexgraph.storage.models import MENTIONS_KEY, Memory
from cortexgraph.storage.protocol import MemoryStore
from cortexgraph.storage.save_order import newest_first

log = logging.getLogger(__name__)

FOUND_KEY = "entities_found"  # meta.extra: the finder method that has read this memory
MAX_ENTITIES = 32  # a memory's entities after the finder's are added


class EntityFinder(Protocol):
    """Finds the entities of many texts at once (activation.entity_batch.BatchEntityFinder)."""

    @property
    def method(self) -> str: ...

    def find(self, texts: Sequence[str]) -> Sequence[Sequence[str]]: ...


def _needs_reading(m: Memory, finder: EntityFinder) -> bool:
    """Never read, or read by the rules only while the finder now has spaCy."""
    done = m.meta.extra.get(FOUND_KEY)
    return done is None or (done == "rules" and finder.method != "rules")


def _with_found(own: Sequence[str], found: Sequence[str]) -> tuple[str, ...]:
    """The memory's own entities first (the user's and the save's), then the finder's new
    ones, one per spelling that differs only in case."""
    seen = {e.lower() for e in own}
    extra = [e for e in dict.fromkeys(found) if e and e.lower() not in seen]
    return tuple(own) + tuple(extra[: max(0, MAX_ENTITIES - len(own))])


def find_entities(
    store: MemoryStore,
    memories: dict[str, Memory],
    finder: EntityFinder | None,
    *,
    limit: int,
    dry_run: bool,
    read: Mapping[str, Memory] | None = None,
) -> tuple[int, str]:
    """Hand the memories no finder (or only the rules) has read to the finder in one batch
    and add what it finds to their entities; ``memories`` is updated in place. A dry run
    writes nothing. ``read``: memories an earlier call found read, by id; one that is still
    the same record (records are immutable) is not looked at again. Returns (memories read,
    the finder's method)."""
    if finder is None:
        return 0, "none"
    if read:
        todo = [
            m for m in memories.values() if read.get(m.id) is not m and _needs_reading(m, finder)
        ]
    else:
        todo = [m for m in memories.values() if _needs_reading(m, finder)]
    if not todo:  # the model is not loaded to read nothing (spaCy: seconds, torch's import)
        return 0, "none"
    # A first run over a large store reads the newest memories (of one second's, the later
    # saves); the rest wait for the next.
    todo = newest_first(store, todo)
    left = max(0, len(todo) - limit)
    todo = todo[:limit]
    method = finder.method
    names = dict(zip((m.id for m in todo), finder.find([m.content for m in todo]), strict=True))

    read = {m.id: m for m in todo}

    def change(m: Memory) -> Memory | None:
        if m.content != read[m.id].content:
            return None  # edited (another process) since it was read: read it next time
        extra = {**m.meta.extra, FOUND_KEY: method}
        found = _with_found(m.entities, names.get(m.id, ()))
        if utterance(m.content).speaker is None:
            return replace(m, entities=found, meta=replace(m.meta, extra=extra))
        # A transcript line is about its speaker (its entity since the save, which search
        # boosts); the names it mentions are its mentions. As entities they cost recall:
        # LoCoMo dev through MCP, 29 hits newly above the answer after a run.
        extra[MENTIONS_KEY] = list(found[len(m.entities) :])
        return replace(m, meta=replace(m.meta, extra=extra))

    if dry_run:
        updated = [u for m in todo if (u := change(m)) is not None]
    else:
        updated = store.modify_many([m.id for m in todo], change)
    for m in updated:
        memories[m.id] = m
    added = sum(
        len(u.entities) + len(u.mentions) - len(read[u.id].entities) - len(read[u.id].mentions)
        for u in updated
    )
    log.info(
        "relations: entities read in %d memories (%s), %d added, %d left for the next run",
        len(todo),
        method,
        added,
        left,
    )
    return len(todo), method


__all__ = ["FOUND_KEY", "MAX_ENTITIES", "EntityFinder", "find_entities"]
