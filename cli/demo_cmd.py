"""`cortexgraph demo`: the README's main job on a local demo store, vault and issue tracker.

Seeds a fresh store with the shipped sample memories, shows search over it, runs the
consolidation flow through Prefect in-process, and shows what the agents did: the tables, the
notes written to the vault, the issues opened in git, and a unified STM+LTM search afterwards.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from cortexgraph.settings import load_settings
from cortexgraph.storage.errors import CortexGraphError

MARKER = ".cortexgraph-demo"
DEMO_QUERIES = (
    "why did we choose postgres for billing",
    "how does Sam like his tests written",
    "duplicate stripe webhooks",
)


def _prepare(directory: Path, keep: bool) -> None:
    """Start from nothing unless --keep; never delete a folder we did not create."""
    if directory.exists() and any(directory.iterdir()):
        if not (directory / MARKER).exists():
            raise CortexGraphError(
                f"{directory} exists and is not a cortexgraph demo folder; choose another --dir"
            )
        if not keep:
            shutil.rmtree(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / MARKER).write_text("created by `cortexgraph demo`; safe to delete\n")


def _search_table(console: Console, title: str, rows: list[tuple[str, str, str]]) -> None:
    table = Table(title=title, title_justify="left")
    table.add_column("score", justify="right")
    table.add_column("where")
    table.add_column("memory", overflow="fold", max_width=90)
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))  # stored text, never read as markup
    console.print(table)


def _open(settings, embedder):
    from cortexgraph.storage import open_store
    from cortexgraph.storage.embeddings import MatrixDenseIndex

    dense = None if embedder is None else MatrixDenseIndex(embedder)
    return open_store(settings.storage_path, settings.store_config(), dense=dense)


def _show_notes(console: Console, vault: Path, folder: str) -> None:
    """The promoted notes by title (the file names Obsidian shows), entity notes counted."""
    notes = sorted((vault / folder).glob("*.md")) if (vault / folder).is_dir() else []
    entities = list((vault / folder / "entities").glob("*.md"))
    console.print(
        f"[bold]{len(notes)} notes[/] (and {len(entities)} entity notes) in the vault {vault}",
        highlight=False,
    )
    for note in notes[:10]:
        console.print(f"  • {note.stem}", highlight=False, markup=False)


def _show_issues(console: Console, issues: Sequence[Any], where: str) -> None:
    """Counts per kind, then the issues a person would look at first: open review clusters."""
    kinds: dict[str, list] = {}
    for issue in issues:
        kind = next((lb for lb in issue.labels if lb.startswith("consolidation:")), "other")
        kinds.setdefault(kind, []).append(issue)
    console.print(f"[bold]{len(issues)} issues[/] — {where}", highlight=False)
    for kind, group in sorted(kinds.items()):
        closed = sum(1 for i in group if i.status == "closed")
        console.print(f"  {kind}: {len(group)} ({closed} closed)", highlight=False, markup=False)
    first = sorted(issues, key=lambda i: ("action:review" not in i.labels, i.status == "closed"))
    for issue in first[:6]:  # text, not markup: "[open]" and a title's brackets are shown
        console.print(
            f"  • {issue.id} [{issue.status}] {issue.title}", highlight=False, markup=False
        )


def demo(
    directory: Annotated[Path, typer.Option("--dir", help="demo folder")] = Path("demo"),
    keep: Annotated[bool, typer.Option("--keep", help="reuse the existing demo store")] = False,
    no_embeddings: Annotated[
        bool, typer.Option("--no-embeddings", help="TF-IDF/BM25 only (no MiniLM)")
    ] = False,
) -> None:
    """Seed a demo store, consolidate it with the Prefect flow, and show the results."""
    console = Console()
    try:
        with ExitStack() as stack:
            _demo(console, stack, directory, keep, no_embeddings)
    except CortexGraphError as exc:
        console.print(f"[red]error:[/] {exc}", highlight=False)
        raise typer.Exit(2) from exc


def _demo(
    console: Console, stack: ExitStack, directory: Path, keep: bool, no_embeddings: bool
) -> None:
    # Something moves on screen from the first second: each wait says what it waits for.
    with console.status("Starting: loading cortexgraph and Prefect…") as status:
        from cortexgraph.cli.consolidate import print_report_tables, run_with_progress
        from cortexgraph.demo_data import seed_store
        from cortexgraph.flows.local_server import local_prefect_api, start_local_server
        from cortexgraph.flows.pipeline_setup import RunOptions
        from cortexgraph.storage.embeddings import default_cache
        from cortexgraph.user_store import open_issue_tracker
        from cortexgraph.vault_sync import LTMIndex, search_unified

        status.update("Starting Prefect's server (for the consolidation flow) in the background…")
        start_local_server()  # Prefect's server comes up while the demo seeds and searches
        directory = directory.resolve()
        _prepare(directory, keep)
        settings = load_settings(
            storage_path=directory / "store", ltm_vault_path=directory / "vault"
        )
        settings.vault_path.mkdir(exist_ok=True)  # the demo's own vault (a named one must exist)
        now = time.time()
        if not no_embeddings:
            status.update("Loading the meaning model (MiniLM, ONNX)…")
        embedder = None if no_embeddings else default_cache(settings.storage_path)
        store = _open(settings, embedder)
        if len(store) == 0:
            status.update(
                "Seeding the sample memories"
                + ("…" if no_embeddings else " and embedding each with MiniLM…")
            )
            seeded = seed_store(store, now=now)
            console.print(f"[bold]Seeded {len(seeded)} memories[/] into {settings.storage_path}")
        stats = store.stats(now=now)
        console.print(
            f"{stats.active} active · {stats.danger_zone} in the danger zone · "
            f"{stats.below_forget_threshold} below the forget threshold · {stats.tags} tags · "
            f"{stats.entities} entities",
            highlight=False,
        )
        for i, query in enumerate(DEMO_QUERIES[:2]):
            first = " (the first search embeds every memory once)" if i == 0 and embedder else ""
            status.update(f"Searching: {query!r}{first}…")
            hits = store.search(query, top_k=3, now=now)
            _search_table(
                console,
                f"search: {query!r}",
                [(f"{h.score:.2f}", "STM", h.memory.content) for h in hits],
            )
        if embedder is not None:
            embedder.save()  # the searches' vectors: the next `cortexgraph search` reuses them

    console.rule("consolidation (Prefect flow, in-process)")
    with console.status(
        "Waiting for Prefect's server to come up (a fresh environment's first start can take "
        "a minute)…"
    ):
        stack.enter_context(local_prefect_api())  # the flow run below uses it as it is
    # The flow opens the store and the embedding cache itself and writes through them. Our
    # copies would be a second, stale view of the same files (the cache's vectors from
    # before the flow, the indexes of the records it replaced): drop them now and read back
    # only what the flow left on disk once it is done.
    del store, embedder
    report = run_with_progress(
        settings, RunOptions(use_embeddings=not no_embeddings), console=console
    )
    print_report_tables(report, console=console)  # the flow recorded the run

    console.rule("what it left behind")
    _show_notes(console, settings.vault_path, settings.ltm_promoted_folder)
    tracker, where = open_issue_tracker(settings)
    _show_issues(console, tracker.query(), where)

    query = DEMO_QUERIES[0]
    with console.status(f"Searching short- and long-term memory: {query!r}…"):
        embedder = None if no_embeddings else default_cache(settings.storage_path)
        store = _open(settings, embedder)
        index = LTMIndex.open(settings.vault_path)
        hits = search_unified(store, index, query, limit=5, now=time.time(), embedder=embedder)
        if embedder is not None:
            embedder.save()
    _search_table(
        console,
        f"unified STM+LTM search: {query!r}",
        [(f"{h.score:.2f}", h.source.upper(), h.preview or h.title) for h in hits],
    )
    if not hits:  # never silently: name what the search saw
        raise CortexGraphError(
            f"the unified search found nothing in {len(store)} memories and "
            f"{len(index.notes)} notes; please report this with the folder {directory}"
        )
    console.print(
        f"\nOpen [bold]{settings.vault_path}[/] in Obsidian; "
        f"`git -C {settings.storage_path} log --oneline` shows the issue history; "
        f"`cortexgraph issues list --storage-path {settings.storage_path}` lists them; "
        f"add `--storage-path {settings.storage_path}` to `cortexgraph search`, `list` ... "
        f"to read this store.",
        highlight=False,
    )
