"""The small interfaces agents depend on. Fakes for tests are obvious from these.

Agents never import Prefect, MCP or a concrete store: a flow, the CLI or the MCP server hands them
a ``MemoryStore`` and an ``Embedder`` (both storage.protocol's, re-exported here), a ``NoteSink``
and an ``IssueTracker``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from cortexgraph.storage.models import Memory, Relation
from cortexgraph.storage.protocol import Embedder, MemoryStore

if TYPE_CHECKING:
    from cortexgraph.storage.beads.memory_tracker import TrackedIssue


@dataclass(frozen=True, slots=True)
class NoteRef:
    """Where a promoted memory now lives in long-term memory."""

    memory_id: str
    path: str  # relative to the vault root
    created: bool  # False when an existing note was updated


class NoteView(Protocol):
    """What agents read back from a written note; NoteRef and vault_sync's WrittenNote fit."""

    @property
    def memory_id(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def created(self) -> bool: ...


@runtime_checkable
class NoteSink(Protocol):
    """Writes a memory as a long-term note (vault_sync.ObsidianNoteSink is the real one)."""

    def write_note(
        self,
        memory: Memory,
        *,
        related: Sequence[Memory] = (),
        relations: Sequence[Relation] = (),
        reason: str = "",
        now: float,
    ) -> NoteView: ...


@runtime_checkable
class IssueView(Protocol):
    """What agents read from an issue; storage.beads' BeadsIssue and TrackedIssue both fit."""

    @property
    def id(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def labels(self) -> tuple[str, ...]: ...
    @property
    def metadata(self) -> Mapping[str, Any]: ...
    @property
    def assignee(self) -> str | None: ...
    @property
    def description(self) -> str: ...


@runtime_checkable
class IssueTracker(Protocol):
    """Where agents record work for each other and for people: storage.beads' BeadsTracker,
    or its InMemoryIssueTracker when tracking is off.

    ``create`` with a ``dedupe_key`` returns the issue already holding that key (any status)
    instead of opening a second one. ``query`` matches issues carrying *all* ``labels``.
    ``update`` replaces title/description/status/priority/labels/assignee and merges
    ``metadata``; ``close`` on a closed issue returns it unchanged. Unknown ids raise
    ``storage.errors.NotFoundError``; bad arguments ``InvalidInputError``.
    """

    def create(
        self,
        title: str,
        *,
        description: str = "",
        labels: Sequence[str] = (),
        priority: int = 2,
        metadata: Mapping[str, Any] | None = None,
        dedupe_key: str | None = None,
    ) -> IssueView: ...

    def query(
        self,
        *,
        labels: Sequence[str] = (),
        status: str | None = None,
        assignee: str | None = None,
    ) -> Sequence[IssueView]: ...

    def claim(self, issue_id: str, assignee: str) -> IssueView | None:
        """Atomically take an open issue; None if someone else already has it."""
        ...

    def update(self, issue_id: str, **changes: Any) -> IssueView: ...

    def close(self, issue_id: str, reason: str) -> IssueView: ...


def __getattr__(name: str) -> Any:
    """``TrackedIssue`` lives beside the trackers (storage.beads); loaded when first asked for,
    so that importing these Protocols does not load the beads package."""
    if name == "TrackedIssue":
        from cortexgraph.storage.beads.memory_tracker import TrackedIssue

        return TrackedIssue
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Embedder",
    "IssueTracker",
    "IssueView",
    "MemoryStore",
    "NoteRef",
    "NoteSink",
    "NoteView",
    "TrackedIssue",
]
