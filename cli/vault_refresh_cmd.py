"""`cortexgraph vault refresh`: short titles for notes promoted earlier (renamed, links
updated), their Related lists brought up to date, entity-note links to notes that are gone
taken out, and a Context section that shows the previous
memory's text taken out (after `cortexgraph-maintenance repair-context`); what every live
pipeline run also does."""

from __future__ import annotations

import time

from cortexgraph.cli.cli_common import (
    JsonOpt,
    StorageOpt,
    VaultOpt,
    cli_errors,
    cli_store,
    out,
    print_json,
    require_vault,
)


def refresh(
    storage_path: StorageOpt = None, vault: VaultOpt = None, as_json: JsonOpt = False
) -> None:
    """Rename legacy-named notes to short titles, update their Related lists, and take the
    previous memory's text out of their Context sections (older versions wrote it there)."""
    from cortexgraph.vault_sync import ObsidianNoteSink
    from cortexgraph.vault_sync.refresh import refresh_notes

    with cli_errors():
        settings, store = cli_store(storage_path, vault)
        require_vault(settings, vault)  # a missing vault is said so, never created
        with ObsidianNoteSink(settings.vault_path, settings.ltm_promoted_folder) as sink:
            report = refresh_notes(store, sink, now=time.time())
        if as_json:
            print_json(
                {
                    "checked": report.checked,
                    "renamed": report.renamed,
                    "related_updated": report.related_updated,
                    "contexts_removed": report.contexts_removed,
                    "dead_mentions_removed": report.dead_mentions_removed,
                }
            )
            return
        out.print(f"[green]✓[/] {report.summary()}", highlight=False)
        for old, new in report.renamed:
            out.print(f"  {old} -> {new}", highlight=False)


__all__ = ["refresh"]
