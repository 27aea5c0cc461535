"""Long-term memory in an Obsidian vault: notes, the LTM index, unified STM+LTM search.

Imports only ``storage`` of cortexgraph. Every promotion path (agent, MCP tool, CLI) calls
``promote_memory`` with an ``ObsidianNoteSink``, so all of them write the same notes.
``vault_sync.vault_graph.build_graph`` (networkx) is imported on its own, when needed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cortexgraph.storage.lazy_names import lazy_names

if TYPE_CHECKING:
    from cortexgraph.vault_sync.errors import (
        UnsafePathError,
        VaultError,
        VaultNotFoundError,
        VaultWriteError,
    )
    from cortexgraph.vault_sync.ltm_index import IndexReport, LTMIndex, NoteRecord, SkippedFile
    from cortexgraph.vault_sync.note_format import (
        NOTE_FORMAT_VERSION,
        LinkTarget,
        RenderedNote,
        parse_note_text,
        render_note,
    )
    from cortexgraph.vault_sync.note_names import note_title, safe_filename, safe_folder
    from cortexgraph.vault_sync.note_sink import ObsidianNoteSink, WrittenNote
    from cortexgraph.vault_sync.promotion import PromotionOutcome, promote_memory
    from cortexgraph.vault_sync.unified_search import UnifiedResult, search_unified
    from cortexgraph.vault_sync.vault_check import CheckIssue, check_vault

# Names load on first use (PEP 562): a consolidation run's sink (note_sink) needs neither the
# LTM index nor unified search, a third of the package's import time.
_LAZY = {
    "UnsafePathError": "cortexgraph.vault_sync.errors",
    "VaultError": "cortexgraph.vault_sync.errors",
    "VaultNotFoundError": "cortexgraph.vault_sync.errors",
    "VaultWriteError": "cortexgraph.vault_sync.errors",
    "IndexReport": "cortexgraph.vault_sync.ltm_index",
    "LTMIndex": "cortexgraph.vault_sync.ltm_index",
    "NoteRecord": "cortexgraph.vault_sync.ltm_index",
    "SkippedFile": "cortexgraph.vault_sync.ltm_index",
    "NOTE_FORMAT_VERSION": "cortexgraph.vault_sync.note_format",
    "LinkTarget": "cortexgraph.vault_sync.note_format",
    "RenderedNote": "cortexgraph.vault_sync.note_format",
    "parse_note_text": "cortexgraph.vault_sync.note_format",
    "render_note": "cortexgraph.vault_sync.note_format",
    "note_title": "cortexgraph.vault_sync.note_names",
    "safe_filename": "cortexgraph.vault_sync.note_names",
    "safe_folder": "cortexgraph.vault_sync.note_names",
    "ObsidianNoteSink": "cortexgraph.vault_sync.note_sink",
    "WrittenNote": "cortexgraph.vault_sync.note_sink",
    "PromotionOutcome": "cortexgraph.vault_sync.promotion",
    "promote_memory": "cortexgraph.vault_sync.promotion",
    "UnifiedResult": "cortexgraph.vault_sync.unified_search",
    "search_unified": "cortexgraph.vault_sync.unified_search",
    "CheckIssue": "cortexgraph.vault_sync.vault_check",
    "check_vault": "cortexgraph.vault_sync.vault_check",
}


__getattr__ = lazy_names(__name__, _LAZY)


__all__ = [
    "NOTE_FORMAT_VERSION",
    "CheckIssue",
    "IndexReport",
    "LTMIndex",
    "LinkTarget",
    "NoteRecord",
    "ObsidianNoteSink",
    "PromotionOutcome",
    "RenderedNote",
    "SkippedFile",
    "UnifiedResult",
    "UnsafePathError",
    "VaultError",
    "VaultNotFoundError",
    "VaultWriteError",
    "WrittenNote",
    "check_vault",
    "note_title",
    "parse_note_text",
    "promote_memory",
    "render_note",
    "safe_filename",
    "safe_folder",
    "search_unified",
]
