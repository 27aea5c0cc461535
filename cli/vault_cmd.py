"""`cortexgraph vault`: index, stats, promote, search and check the Obsidian vault (LTM)."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table
from rich.text import Text

from cortexgraph.settings import Settings, load_settings
from cortexgraph.storage.errors import CortexGraphError
from cortexgraph.user_store import open_user_store

if TYPE_CHECKING:
    from cortexgraph.vault_sync import LTMIndex

# vault_sync (numpy, the note renderer, unified search) is imported by the command that runs:
# every `cortexgraph` command imports this module, `cortexgraph search` included.

app = typer.Typer(help="The Obsidian vault: long-term memory notes.", no_args_is_help=True)
out = Console()
err = Console(stderr=True, soft_wrap=True)  # one line per message, however narrow

VaultOpt = Annotated[
    Path | None, typer.Option("--vault", help="Obsidian vault (default: LTM_VAULT_PATH).")
]
StorageOpt = Annotated[
    Path | None,
    typer.Option("--storage-path", help="STM directory (default: CORTEXGRAPH_STORAGE_PATH)."),
]


def _settings(vault: Path | None, storage_path: Path | None) -> Settings:
    return load_settings(ltm_vault_path=vault, storage_path=storage_path)


def _vault_settings(vault: Path | None, storage_path: Path | None) -> Settings:
    """The settings of a command that reads only the vault: --storage-path still picks the
    default vault (the ``vault/`` folder beside the store), and a store the user named must
    exist, as for every other command."""
    from cortexgraph.cli.cli_common import existing_store_path

    settings = _settings(vault, storage_path)
    try:
        existing_store_path(settings, storage_path)
    except CortexGraphError as exc:
        raise _fail(exc) from exc
    return settings


def _fail(exc: Exception) -> typer.Exit:
    err.print(f"[red]error:[/red] {escape(str(exc))}")
    return typer.Exit(2)


def _existing_vault(settings: Settings, vault: Path | None) -> Path:
    """The vault's folder, or exit 2 in one line naming where it came from (--vault,
    LTM_VAULT_PATH or the default) and what to do (``cli_common.require_vault``)."""
    from cortexgraph.cli.cli_common import require_vault

    try:
        return require_vault(settings, vault)
    except CortexGraphError as exc:
        raise _fail(exc) from exc


def _open_index(settings: Settings, vault: Path | None) -> LTMIndex:
    from cortexgraph.vault_sync import LTMIndex

    return LTMIndex.open(_existing_vault(settings, vault))


@app.command("index")
def index_cmd(
    vault: VaultOpt = None,
    storage_path: StorageOpt = None,
    rebuild: Annotated[bool, typer.Option(help="Re-read every note.")] = False,
) -> None:
    """Bring the LTM index up to date (only new or changed notes are read)."""
    from cortexgraph.vault_sync import LTMIndex

    settings = _vault_settings(vault, storage_path)
    idx = LTMIndex(_existing_vault(settings, vault))
    if not rebuild:
        idx.load()
    columns = (TextColumn("indexing"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task("notes", total=None)
        report = idx.refresh(lambda i, n: bar.update(task, completed=i, total=n))
    out.print(
        f"{report.notes} notes indexed in {report.seconds:.2f}s: {report.reparsed} read, "
        f"{report.unchanged} unchanged, {report.removed} removed, {len(report.skipped)} skipped, "
        f"{report.broken_frontmatter} with broken frontmatter"
    )
    reasons = Counter(s.reason for s in report.skipped)
    for reason, n in reasons.most_common():
        out.print(Text(f"  skipped {n}: {reason}"))


@app.command()
def stats(
    vault: VaultOpt = None,
    storage_path: StorageOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
) -> None:
    """Counts of notes, links, tags and cortexgraph notes in the vault."""
    settings = _vault_settings(vault, storage_path)
    idx = _open_index(settings, vault)
    notes = list(idx.notes.values())
    data = {
        "vault": str(idx.vault),
        "notes": len(notes),
        "cortexgraph_notes": sum(1 for r in notes if r.memory_id and r.conflict_of is None),
        "links": sum(len(r.wikilinks) for r in notes),
        "broken_links": len(idx.broken_links()),
        "tags": len({t for r in notes for t in r.tags}),
        "broken_frontmatter": sum(1 for r in notes if r.frontmatter_error),
        "skipped_files": len(idx.skipped),
        "index_bytes": idx.file.stat().st_size if idx.file.exists() else 0,
    }
    if as_json:
        out.print_json(json.dumps(data))
        return
    table = Table("what", "count", title=f"vault {idx.vault}")
    for key, value in data.items():
        if key != "vault":
            table.add_row(key.replace("_", " "), str(value))
    out.print(table)


@app.command()
def promote(
    memory_id: Annotated[str, typer.Argument(help="Id of the memory to promote.")],
    vault: VaultOpt = None,
    storage_path: StorageOpt = None,
    force: Annotated[bool, typer.Option(help="Promote even if not eligible.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Change nothing.")] = False,
    reason: Annotated[str, typer.Option(help="Why (default: the decay rule).")] = "",
) -> None:
    """Write a memory's note into the vault and mark it promoted."""
    from cortexgraph.cli.cli_common import existing_store_path, preview_store, writable_vault
    from cortexgraph.vault_sync import ObsidianNoteSink, promote_memory

    settings = _settings(vault, storage_path)
    try:
        writable_vault(settings, vault)  # a mistyped vault is refused, never created
        if dry_run:  # nothing written: no quarantine, no vault folder (promote_memory stops
            store, sink = preview_store(settings, storage_path), None  # before the sink)
        else:
            existing_store_path(settings, storage_path)
            store = open_user_store(settings)
            sink = ObsidianNoteSink(
                settings.vault_path,
                settings.ltm_promoted_folder,
                create=settings.vault_may_be_created,
            )
        outcome = promote_memory(
            store, sink, memory_id, reason=reason, now=time.time(), force=force, dry_run=dry_run
        )
    except CortexGraphError as exc:
        raise _fail(exc) from exc
    if not outcome.promoted:
        err.print(Text(f"not promoted: {outcome.reason}"))
        raise typer.Exit(1)
    verb = "would promote" if dry_run else ("created" if outcome.created else "updated")
    out.print(Text(f"{verb} {outcome.path or memory_id} ({outcome.reason})"))
    if outcome.conflict_path:
        out.print(
            f"[yellow]the note was edited by hand; cortexgraph's version is in "
            f"{escape(str(outcome.conflict_path))}[/yellow]"
        )


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    vault: VaultOpt = None,
    storage_path: StorageOpt = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Only with this tag.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=100, help="How many results.")] = 10,
    stm_weight: Annotated[
        float | None,
        typer.Option(
            min=0, help="Weight of short-term memories (default: CORTEXGRAPH_SEARCH_STM_WEIGHT, 1)."
        ),
    ] = None,
    ltm_weight: Annotated[
        float | None,
        typer.Option(
            min=0, help="Weight of long-term notes (default: CORTEXGRAPH_SEARCH_LTM_WEIGHT, 0.7)."
        ),
    ] = None,
    window_days: Annotated[
        float | None, typer.Option(min=0, help="Only memories used in the last N days.")
    ] = None,
    min_score: Annotated[
        float | None, typer.Option(min=0, help="Only memories whose decay score is at least this.")
    ] = None,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Also ids, note paths and the score's parts.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    embeddings: Annotated[bool, typer.Option(help="Use the embedding model if installed.")] = True,
) -> None:
    """One ranking over short-term memories and long-term notes."""
    from cortexgraph.cli.cli_common import existing_store_path, hint_if_empty, require_vault
    from cortexgraph.vault_sync import search_unified

    settings = _settings(vault, storage_path)
    embedder = None
    if embeddings and settings.enable_embeddings:
        from cortexgraph.storage.embeddings import default_embedder

        embedder = default_embedder()
    try:
        existing_store_path(settings, storage_path)  # a mistyped path is refused, not created
        if vault is not None or settings.ltm_vault_path is not None:
            require_vault(settings, vault)  # a vault the user named must exist
        store = open_user_store(settings)
        hint_if_empty(settings, storage_path, len(store))
        idx = _open_index(settings, vault) if settings.vault_path.is_dir() else None
        if idx is None:
            err.print(
                f"no vault at {settings.vault_path}: short-term memories only "
                "(name one with --vault PATH or LTM_VAULT_PATH)",
                highlight=False,
                soft_wrap=True,
            )
        results = search_unified(
            store,
            idx,
            query,
            tags=tag,
            limit=limit,
            window_days=window_days,
            min_score=min_score,
            verbose=verbose,
            embedder=embedder,
            **settings.unified_search_weights(stm_weight, ltm_weight),
        )
    except CortexGraphError as exc:
        raise _fail(exc) from exc
    if as_json:
        out.print_json(json.dumps([r.to_json(verbose) for r in results]))
        return
    if not results:
        out.print("no matches")
        return
    table = Table("score", "from", "title", "preview")
    if verbose:
        table.add_column("id / path")
    for r in results:
        row = [f"{r.score:.3f}", f"{r.source} (archived)" if r.archived else r.source]
        row += [r.title, r.preview[:80]]
        if verbose:
            row.append(" ".join(x for x in (r.memory_id, r.note_path) if x))
        table.add_row(*map(Text, row))  # note titles and text are printed as text, not markup
    out.print(table)
    if embedder is None:
        err.print("(keyword search only: the embedding model is not installed or is disabled)")


@app.command()
def check(vault: VaultOpt = None, storage_path: StorageOpt = None) -> None:
    """Report notes with broken frontmatter, broken links, conflict copies. Exit 1 if any."""
    from cortexgraph.vault_sync import check_vault

    settings = _vault_settings(vault, storage_path)
    idx = _open_index(settings, vault)
    issues = check_vault(idx)
    if not issues:
        out.print(f"vault {idx.vault}: {len(idx)} notes, no problems")
        return
    table = Table("note", "problem", "detail", title=f"{len(issues)} problems")
    for issue in issues:
        table.add_row(Text(issue.path), Text(issue.kind), Text(issue.detail))
    out.print(table)
    raise typer.Exit(1)
