"""Pieces every agent shares: labels, the table a report renders as, and JSON conversion."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cortexgraph.storage.errors import CortexGraphError, InvalidInputError

LABEL_DECAY = "consolidation:decay"
LABEL_CLUSTER = "consolidation:cluster"
LABEL_MERGE = "consolidation:merge"  # merge requests (cluster issues with action:merge)
LABEL_PROMOTE = "consolidation:promote"  # promotions that need a person
LABEL_RELATIONS = "consolidation:relations"  # relations worth a look


class AgentError(CortexGraphError):
    """An agent could not do its work (a collaborator failed in a way it cannot recover from)."""


class RefusedError(AgentError, InvalidInputError):
    """A request the memories' state does not allow (nothing to undo, an issue already
    closed); nothing was changed. An edge reports it as the caller's to fix, as it does an
    unpromote of a memory that is not promoted."""


@dataclass(frozen=True, slots=True)
class ReportTable:
    """What a person sees for one agent: a title, a one-line summary and rows of cells."""

    title: str
    summary: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    def to_markdown(self, max_rows: int = 25) -> str:
        lines = [f"### {self.title}", "", self.summary, ""]
        if self.rows:
            lines.append("| " + " | ".join(self.columns) + " |")
            lines.append("|" + "---|" * len(self.columns))
            lines.extend(
                "| " + " | ".join(c.replace("|", "\\|") for c in row) + " |"
                for row in self.rows[:max_rows]
            )
            if len(self.rows) > max_rows:
                lines.append(f"\n… and {len(self.rows) - max_rows} more")
        return "\n".join(lines) + "\n"


def to_jsonable(value: Any) -> Any:
    """Frozen report dataclasses (and what they hold) as plain JSON values; a field whose
    metadata has ``to_json`` is given as that function of it (a long id list as its length)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: to_jsonable(f.metadata.get("to_json", _same)(getattr(value, f.name)))
            for f in dataclasses.fields(value)
        }
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, float):
        return round(value, 6)
    return value


def _same(value: Any) -> Any:
    return value


def short(memory_id: str) -> str:
    return memory_id[:8]


def snippet(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


__all__ = [
    "LABEL_CLUSTER",
    "LABEL_DECAY",
    "LABEL_MERGE",
    "LABEL_PROMOTE",
    "LABEL_RELATIONS",
    "AgentError",
    "RefusedError",
    "ReportTable",
    "short",
    "snippet",
    "to_jsonable",
]
