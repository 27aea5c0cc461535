"""`cortexgraph export|import|backup|restore`: the memory in your hands.

export/import move records between stores (nothing overwritten; duplicates reported);
backup/restore copy the whole store directory under its lock. Logic: storage.portable and
storage.backup."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.text import Text

from cortexgraph.cli.cli_common import (
    JsonOpt,
    StorageOpt,
    VaultOpt,
    check_named_vault,
    cli_errors,
    cli_store,
    open_cli_store,
    out,
    print_json,
    read_tracker,
    report_done,
    settings_for,
)

FileArg = Annotated[Path, typer.Argument(help="a .jsonl or .tar.gz file")]


def export(
    output: Annotated[Path, typer.Option("-o", "--output", help="FILE.jsonl or FILE.tar.gz")],
    storage_path: StorageOpt = None,
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Export memories, relations, the vault's notes and the issues to one file."""
    from cortexgraph.storage.portable import collect_bundle, write_bundle

    with cli_errors():
        settings, store = cli_store(storage_path, vault)
        check_named_vault(settings, vault)  # a mistyped vault: refused, not "0 notes"
        bundle = collect_bundle(store, settings.vault_path, read_tracker(settings))
        write_bundle(bundle, output)
        counts = bundle.counts()
        report_done(
            {"file": str(output), **counts},
            f"exported {counts['memories']} memories, {counts['relations']} relations, "
            f"{counts['notes']} notes, {counts['issues']} issues to {escape(str(output))}",
            as_json,
        )


def import_(
    source: FileArg,
    storage_path: StorageOpt = None,
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Import an export file into this store (empty or not); nothing is overwritten."""
    from cortexgraph.storage.portable import import_bundle, read_bundle
    from cortexgraph.user_store import open_issue_tracker

    with cli_errors():
        settings = settings_for(storage_path, vault)
        bundle = read_bundle(source)
        store = open_cli_store(settings)
        tracker = open_issue_tracker(settings)[0] if bundle.issues else None
        report = import_bundle(store, bundle, vault=settings.vault_path, tracker=tracker)
        if as_json:
            print_json({"success": True, **report.to_json()})
            return
        added = ", ".join(f"{n} {k}" for k, n in report.added.items())
        out.print(f"[green]✓[/] imported {added}", highlight=False)
        if report.skipped:
            out.print(f"[yellow]{len(report.skipped)} not imported:[/]", highlight=False)
            for s in report.skipped[:50]:
                out.print(Text(f"  {s['kind']} {s['id']}: {s['why']}"))


def backup(
    output: Annotated[Path, typer.Option("-o", "--output", help="FILE.tar.gz")],
    storage_path: StorageOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Copy the whole store directory (issues and their git history too), locked meanwhile."""
    from cortexgraph.storage.backup import backup_store

    with cli_errors():
        settings = settings_for(storage_path)
        n = backup_store(settings.storage_path, output)
        report_done(
            {"file": str(output), "files": n},
            escape(f"backed up {n} files of {settings.storage_path} to {output}"),
            as_json,
        )


def restore(
    source: Annotated[Path, typer.Argument(help="a .tar.gz made by `cortexgraph backup`")],
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="replace a store that has memories (its files are moved aside, not deleted)",
        ),
    ] = False,
    storage_path: StorageOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Put a backup back in place, locked meanwhile."""
    from cortexgraph.storage.backup import restore_store

    with cli_errors():
        settings = settings_for(storage_path)
        n, aside = restore_store(source, settings.storage_path, force=force)
        where = f"; the previous files are in {aside}" if aside else ""
        report_done(
            {"files": n, "moved_aside": str(aside) if aside else None},
            escape(f"restored {n} files into {settings.storage_path}{where}"),
            as_json,
        )


__all__ = ["backup", "export", "import_", "restore"]
