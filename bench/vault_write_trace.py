"""Which vault_sync modules writing one note goes through, and how often it goes back into one.

    python bench/vault_write_trace.py

A ``sys.setprofile`` trace of ``promote_memory`` writing one note (two entities, one relation
to a note already promoted): a new note, and the same note updated after a change. Printed per
case: the modules entered besides ``promotion`` and ``note_sink``; the calls from one vault_sync
module into another, and those into a module the write had already entered (dataclass
constructors left out: building a value is not a visit); and the sink's own steps in order,
with how often they return to a module an earlier step had left. Run it with another
revision's code first on ``PYTHONPATH`` (a ``cortexgraph/`` folder laid out as installed) to
compare. It counts calls, not time.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

from rich.console import Console
from rich.table import Table

from cortexgraph.storage import InMemoryStore
from cortexgraph.vault_sync import ObsidianNoteSink, promote_memory

NOW = 1_750_000_000.0
PREFIX = "cortexgraph.vault_sync."
CONTENT = "We chose PostgreSQL 16 for the billing service because it gives us row-level security"


def _module(frame: FrameType | None) -> str:
    name = frame.f_globals.get("__name__", "") if frame is not None else ""
    return name[len(PREFIX) :] if name.startswith(PREFIX) else ""


def trace(case: str) -> dict[str, Any]:
    store = InMemoryStore()
    other = store.save("Ledger writes must be idempotent", now=NOW - 86400)
    memory = store.save(CONTENT, entities=["PostgreSQL", "c#"], now=NOW - 86400)
    store.add_relation(memory.id, other.id, "supports", now=NOW)
    with tempfile.TemporaryDirectory() as tmp:
        sink = ObsidianNoteSink(Path(tmp) / "vault", "cortexgraph")
        promote_memory(store, sink, other.id, now=NOW, force=True)
        if case == "update":
            promote_memory(store, sink, memory.id, now=NOW, force=True)
            store.update(memory.id, context="moved in Q4")
        calls: list[tuple[str, str, str]] = []

        def profile(frame: FrameType, event: str, arg: object) -> None:
            if event != "call" or frame.f_code.co_name == "__init__":
                return
            callee, caller = _module(frame), _module(frame.f_back)
            if callee and caller and callee != caller:
                calls.append((caller, callee, frame.f_code.co_name))

        sys.setprofile(profile)
        try:
            promote_memory(store, sink, memory.id, now=NOW + 60, force=True)
        finally:
            sys.setprofile(None)
    entered = ["promotion"]
    again = 0
    for _, callee, _ in calls:
        if callee in entered:
            again += 1
        else:
            entered.append(callee)
    steps = [callee for caller, callee, _ in calls if caller == "note_sink"]
    returns = sum(1 for i, m in enumerate(steps) if m in steps[:i] and steps[i - 1] != m)
    return {
        "modules": [m for m in entered if m not in {"promotion", "note_sink"}],
        "calls": len(calls),
        "again": again,
        "steps": [f"{callee}.{fn}" for caller, callee, fn in calls if caller == "note_sink"],
        "returns": returns,
    }


def main() -> None:
    console = Console(width=160)
    table = Table(title="Writing one note through promote_memory (vault_sync modules)")
    for column in ("case", "modules", "cross-module calls", "into one entered before"):
        table.add_column(column)
    table.add_column("sink steps back to a module left")
    results = {case: trace(case) for case in ("new", "update")}
    for case, r in results.items():
        table.add_row(
            case,
            f"{len(r['modules'])}: {' '.join(r['modules'])}",
            str(r["calls"]),
            str(r["again"]),
            str(r["returns"]),
        )
    console.print(table)
    for case, r in results.items():
        console.print(f"[dim]{case}: sink steps {' -> '.join(r['steps'])}[/]")


if __name__ == "__main__":
    main()
