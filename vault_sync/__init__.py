"""Long-term memory in an Obsidian vault: notes, the LTM index, unified STM+LTM search.

Imports only ``storage`` of cortexgraph. Every promotion path (agent, MCP tool, CLI) calls
``promote_memory`` with an ``ObsidianNoteSink``, so all of them write the same notes.
``vault_sync.vault_graph.build_graph`` (networkx) is imported on its own, when needed.
"""

from __future__ import annotations

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
