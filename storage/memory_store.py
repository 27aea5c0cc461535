"""The store with nothing on disk: ``IndexedStore``'s no-op persistence hooks.

``IndexedStore`` (storage.indexed_store, re-exported here) implements every operation;
``InMemoryStore`` serves agents' tests and dry runs, and reads a JSONL store's records without
writing anything (``from_files``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from cortexgraph.storage.config import StoreConfig
from cortexgraph.storage.indexed_store import IndexedStore
from cortexgraph.storage.jsonl_lines import UnreadableLines
from cortexgraph.storage.protocol import MemoryStore


class InMemoryStore(IndexedStore):
    """The same store with nothing on disk: for agents' tests and dry runs."""

    # Lines ``from_files`` could not read and left where they are, per file (a live store
    # moves them to quarantine when it opens): a dry run says so instead of moving them.
    unreadable: tuple[UnreadableLines, ...] = ()

    @classmethod
    def copy_of(cls, store: MemoryStore) -> InMemoryStore:
        """A scratch copy of another store's records (a dry run works on this)."""
        clone = cls(store.config, dense=getattr(store, "dense", None))
        clone._load(store.list(), store.relations())
        return clone

    @classmethod
    def from_files(
        cls, path: str | os.PathLike[str], config: StoreConfig | None = None
    ) -> InMemoryStore:
        """A JSONL store's records read into memory without writing anything (no lock file, no
        quarantine rewrite, no snapshot): what a dry run previews. Unreadable lines are left
        out and left in place, and listed in ``unreadable``; the live store quarantines them."""
        from functools import partial

        from cortexgraph.storage.bulk_records import plain_memories
        from cortexgraph.storage.jsonl_lines import live_records
        from cortexgraph.storage.validation import (
            check_loaded_line,
            lines_pass_rules,
            loaded_memory,
            loaded_relation,
        )

        config = config or StoreConfig()
        check = partial(check_loaded_line, config=config)
        lines_pass = partial(lines_pass_rules, config=config)
        directory = Path(path).expanduser()
        unreadable: list[UnreadableLines] = []

        def read(name: str, build: Any, block: Any = None) -> list[Any]:
            try:
                data = (directory / name).read_bytes()
            except FileNotFoundError:
                return []
            records, bad = live_records(
                data, build, check, lines_pass=lines_pass, build_block=block
            )
            if bad:
                unreadable.append(UnreadableLines(directory / name, len(bad), bad[0].reason))
            return records

        memories = read(
            config.memories_filename,
            partial(loaded_memory, config=config),
            partial(plain_memories, config=config),
        )
        ids = {m.id for m in memories}
        relations = [
            r
            for r in read(config.relations_filename, partial(loaded_relation, config=config))
            if r.from_memory_id in ids and r.to_memory_id in ids
        ]
        clone = cls(config)
        clone._load(memories, relations)
        clone.unreadable = tuple(unreadable)
        return clone


__all__ = ["InMemoryStore", "IndexedStore"]
