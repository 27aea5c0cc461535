"""`cortexgraph issues list|show|close|pack`: the consolidation issues, readable by people.

Where the issues live: ``--storage-path PATH`` (the store's folder, or any folder of a git
repository; ``--repo`` is its older name), else ``CORTEXGRAPH_BEADS_REPO``, else ``.beads/`` in
the storage directory's own repository (cortexgraph.user_store.tracker_location, the rule every
shell uses). The option is named as in every other program.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer

from cortexgraph.settings import load_settings
from cortexgraph.storage.beads import (
    STATUSES,
    BeadsIssue,
    BeadsTracker,
    TrackerUnavailableError,
    issue_as_json,
)
from cortexgraph.storage.beads.schema import BD_ONLY_STATUSES
from cortexgraph.storage.errors import CortexGraphError
from cortexgraph.user_store import open_configured_tracker

app = typer.Typer(
    help="Consolidation issues (beads format in .beads/issues.jsonl, committed to git).",
    no_args_is_help=True,
)

RepoOption = Annotated[
    Path | None,
    typer.Option(
        "--storage-path",
        "--repo",
        help="the store (or git repository) whose .beads/ holds the issues (default: "
        "CORTEXGRAPH_BEADS_REPO, else CORTEXGRAPH_STORAGE_PATH); --repo is the older name",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="machine-readable output")]


def _open_for_reading(repo: Path | None) -> BeadsTracker | None:
    settings = load_settings()
    try:
        return open_configured_tracker(settings, repo, init=False)
    except TrackerUnavailableError as e:
        typer.echo(f"no beads repository: {e}", err=True)
        return None


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(1)


@contextmanager
def _clean_errors() -> Iterator[None]:
    """A tracker that cannot be used is a short message and exit status 1, not a traceback."""
    try:
        yield
    except CortexGraphError as e:
        raise _fail(str(e)) from None


def _line(issue: BeadsIssue) -> str:
    who = f"  @{issue.assignee}" if issue.assignee else ""
    labels = f"  [{', '.join(issue.labels)}]" if issue.labels else ""
    return f"{issue.id:<12} {issue.status:<11} P{issue.priority}  {issue.title}{labels}{who}"


@app.command("list")
def list_issues(
    status: Annotated[
        str | None, typer.Option(help=f"only this status ({', '.join(STATUSES)})")
    ] = None,
    label: Annotated[
        list[str] | None, typer.Option("--label", "-l", help="must carry this label (repeatable)")
    ] = None,
    assignee: Annotated[str | None, typer.Option(help="only issues assigned to this name")] = None,
    all_: Annotated[bool, typer.Option("--all", help="include closed issues")] = False,
    repo: RepoOption = None,
    as_json: JsonOption = False,
) -> None:
    """List issues (open ones unless --all or --status)."""
    if status is not None and status not in (*STATUSES, *BD_ONLY_STATUSES):
        # a misspelt status would match nothing and read as "no issues"
        choices = f"{', '.join(STATUSES[:-1])} or {STATUSES[-1]}"
        raise _fail(f"unknown status {status!r}; choose {choices}")
    with _clean_errors():
        tracker = _open_for_reading(repo)
        issues = (
            []
            if tracker is None
            else tracker.query(labels=label or (), status=status, assignee=assignee)
        )
    if status is None and not all_:
        issues = [i for i in issues if i.status != "closed"]
    if as_json:
        typer.echo(json.dumps([issue_as_json(i) for i in issues], indent=2, ensure_ascii=False))
        return
    if not issues:
        typer.echo("no issues")
        return
    for issue in issues:
        typer.echo(_line(issue))


@app.command("show")
def show_issue(
    issue_id: Annotated[str, typer.Argument(help="issue id, e.g. cg-1a2b (or just 1a2b)")],
    repo: RepoOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show one issue with its metadata and the commits that changed it."""
    with _clean_errors():
        tracker = _open_for_reading(repo)
        issue = tracker.find(issue_id) if tracker is not None else None
        if tracker is None or issue is None:
            raise _fail(f"no issue {issue_id!r}")
        history = tracker.history(issue.id)
    if as_json:
        record: dict[str, Any] = issue_as_json(issue)
        record["history"] = [
            {"commit": c.sha, "date": c.when.isoformat(), "message": c.message.strip()}
            for c in history
        ]
        typer.echo(json.dumps(record, indent=2, ensure_ascii=False))
        return
    typer.echo(f"{issue.id}: {issue.title}")
    typer.echo(
        f"  status:   {issue.status}   priority: P{issue.priority}   type: {issue.issue_type}"
    )
    if issue.assignee:
        typer.echo(f"  assignee: {issue.assignee}")
    if issue.labels:
        typer.echo(f"  labels:   {', '.join(issue.labels)}")
    typer.echo(
        f"  created:  {issue.created_at.isoformat()}   updated: {issue.updated_at.isoformat()}"
    )
    if issue.closed_at is not None:
        typer.echo(f"  closed:   {issue.closed_at.isoformat()}   reason: {issue.close_reason}")
    if issue.description:
        typer.echo("")
        typer.echo(issue.description)
    if issue.metadata:
        typer.echo("")
        typer.echo("metadata:")
        typer.echo(json.dumps(dict(issue.metadata), indent=2, ensure_ascii=False))
    if history:
        typer.echo("")
        typer.echo("history:")
        for c in history:
            typer.echo(f"  {c.sha[:8]}  {c.when:%Y-%m-%d %H:%M}  {c.message.splitlines()[0]}")


@app.command("close")
def close_issue(
    issue_id: Annotated[str, typer.Argument(help="issue id")],
    reason: Annotated[str, typer.Option("--reason", "-r", help="why it is closed")],
    repo: RepoOption = None,
    as_json: JsonOption = False,
) -> None:
    """Close an issue with a reason (committed to git)."""
    with _clean_errors():
        tracker = _open_for_reading(repo)
        if tracker is None:
            raise _fail("nothing to close")
        issue = tracker.close(issue_id, reason)
    if as_json:
        typer.echo(json.dumps(issue_as_json(issue), indent=2, ensure_ascii=False))
    else:
        typer.echo(f"closed {issue.id}: {issue.close_reason}")


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


@app.command("pack")
def pack_issues(repo: RepoOption = None, as_json: JsonOption = False) -> None:
    """Pack the git repository's loose objects now (commits do it past 32 MB of them)."""
    with _clean_errors():
        tracker = _open_for_reading(repo)
        if tracker is None:
            raise _fail("nothing to pack")
        report = tracker.pack()
    if as_json:
        typer.echo(json.dumps({"git_dir": str(tracker.repo.common_dir), **asdict(report)}))
    else:
        typer.echo(
            f"packed {tracker.repo.common_dir}: {_mb(report.bytes_before)} -> "
            f"{_mb(report.bytes_after)} in {report.seconds:.2f} s"
        )


__all__ = ["app"]
