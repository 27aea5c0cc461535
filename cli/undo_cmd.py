"""`cortexgraph undo merge|gc|archive|promote ID`, `unarchive ID`, `unpromote ID`, `history ID`:
see what the agents did to a memory and reverse it. The logic is in agents.undo,
agents.history and vault_sync.unpromote; the MCP tools call the same functions."""

from __future__ import annotations

import time

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from cortexgraph.cli.cli_common import (
    JsonOpt,
    MemoryIdArg,
    StorageOpt,
    VaultOpt,
    cli_errors,
    cli_store,
    out,
    print_json,
    read_tracker,
    report_done,
)
from cortexgraph.cli.memory_ids import resolve_memory_id

app = typer.Typer(
    help="Reverse an automatic change (merge, gc, archive, promotion).", no_args_is_help=True
)


def _report(result: dict, as_json: bool) -> None:
    report_done(result, escape(result["detail"]), as_json)


@app.command("merge")
def undo_merge_cmd(
    merged_id: MemoryIdArg, storage_path: StorageOpt = None, as_json: JsonOpt = False
) -> None:
    """Split a merged memory back into its sources (relations restored)."""
    from cortexgraph.agents.undo import undo_merge_of

    with cli_errors():
        _, store = cli_store(storage_path)
        merged_id = resolve_memory_id(store, merged_id)
        _report(
            undo_merge_of(
                store, merged_id, now=time.time(), cause="cortexgraph undo merge"
            ).to_json(),
            as_json,
        )


@app.command("gc")
def undo_gc_cmd(
    memory_id: MemoryIdArg, storage_path: StorageOpt = None, as_json: JsonOpt = False
) -> None:
    """Bring back a memory gc archived (grace period) or deleted (from gc-removed.jsonl)."""
    from cortexgraph.agents.undo import restore_collected
    from cortexgraph.storage.graveyard import Graveyard

    with cli_errors():
        settings, store = cli_store(storage_path)
        graveyard = Graveyard(settings.storage_path)
        memory_id = resolve_memory_id(store, memory_id, also=graveyard.entries())
        result = restore_collected(
            store,
            graveyard,
            memory_id,
            now=time.time(),
            cause="cortexgraph undo gc",
        )
        _report(result.to_json(), as_json)


@app.command("archive")
def undo_archive_cmd(
    memory_id: MemoryIdArg, storage_path: StorageOpt = None, as_json: JsonOpt = False
) -> None:
    """Make an archived memory active again (same as `cortexgraph unarchive`)."""
    unarchive_cmd(memory_id, storage_path, as_json)


@app.command("promote")
def undo_promote_cmd(
    memory_id: MemoryIdArg,
    storage_path: StorageOpt = None,
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Move a promoted memory's note to the vault's .trash/ (same as `cortexgraph unpromote`)."""
    unpromote_cmd(memory_id, storage_path, vault, as_json)


def unarchive_cmd(
    memory_id: MemoryIdArg, storage_path: StorageOpt = None, as_json: JsonOpt = False
) -> None:
    """Make an archived memory active again."""
    from cortexgraph.agents.undo import unarchive

    with cli_errors():
        _, store = cli_store(storage_path)
        memory_id = resolve_memory_id(store, memory_id)
        _report(
            unarchive(store, memory_id, now=time.time(), cause="cortexgraph unarchive").to_json(),
            as_json,
        )


def unpromote_cmd(
    memory_id: MemoryIdArg,
    storage_path: StorageOpt = None,
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Move a promoted memory's note to the vault's .trash/ and make the memory active again."""
    from cortexgraph.vault_sync.unpromote import unpromote_memory

    with cli_errors():
        settings, store = cli_store(storage_path, vault)
        memory_id = resolve_memory_id(store, memory_id)
        done = unpromote_memory(
            store,
            settings.vault_path,
            memory_id,
            folder=settings.ltm_promoted_folder,
            now=time.time(),
            cause="cortexgraph unpromote",
        )
        where = f"note moved to {done.trashed_to}" if done.trashed_to else "no note was found"
        _report(
            {**done.to_json(), "detail": f"memory {memory_id} is active again; {where}"}, as_json
        )


def history_cmd(
    memory_id: MemoryIdArg, storage_path: StorageOpt = None, as_json: JsonOpt = False
) -> None:
    """Every change to a memory, with time and cause (store, gc and the issues' log)."""
    from cortexgraph.agents.history import history_of_ref
    from cortexgraph.storage.graveyard import Graveyard

    with cli_errors():
        settings, store = cli_store(storage_path)
        graveyard = Graveyard(settings.storage_path)
        buried = graveyard.entries()
        memory_id, events = history_of_ref(
            store,
            memory_id,
            lambda ref: resolve_memory_id(store, ref, also=buried),
            tracker=read_tracker(settings),
            graveyard=graveyard,
        )
        if as_json:
            print_json({"memory_id": memory_id, "events": [e.to_json() for e in events]})
            return
        table = Table(title=Text(f"history of {memory_id}"), title_justify="left")
        for col in ("time", "event", "cause", "from"):
            table.add_column(col, overflow="fold")
        for e in events:
            data = e.to_json()
            # Text cells: causes quote stored text and ids, printed as text, never as markup.
            table.add_row(
                *(Text(str(x)) for x in (data["time"] or "?", e.event, e.cause, e.source))
            )
        out.print(table)


__all__ = ["app", "history_cmd", "unarchive_cmd", "unpromote_cmd"]
