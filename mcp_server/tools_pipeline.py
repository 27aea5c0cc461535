"""The whole consolidation pipeline as one tool, and the agents' issue list.

The agents are called directly as plain Python (agents.pipeline); no Prefect here. A run embeds
through the search's embedding cache (collaborators.cached_embedder_for): the vectors the server
already holds are reused, and the run's result says how many it reused and how many it embedded.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field, StrictInt

from cortexgraph.mcp_server.collaborators import (
    cached_embedder_for,
    issue_tracker,
    note_sink,
    pipeline_config_for,
)
from cortexgraph.mcp_server.errors import tool_errors
from cortexgraph.mcp_server.state import ServerContext, ServerState, state_of

if TYPE_CHECKING:
    from cortexgraph.agents.pipeline import PipelineReport

MAX_REPORT_CHARS = 20_000


@tool_errors
def run_consolidation(
    ctx: ServerContext,
    dry_run: Annotated[
        bool, Field(description="Only report what each agent would do (default).")
    ] = True,
    agents: Annotated[
        list[Literal["decay", "cluster", "merge", "promote", "relations"]] | None,
        Field(description="Which agents to run, in pipeline order (default all).", max_length=5),
    ] = None,
    full: Annotated[
        bool,
        Field(description="Every memory, not only what changed since the last run."),
    ] = False,
) -> dict[str, Any]:
    """Run the consolidation pipeline (decay -> cluster -> merge -> promote -> relations).

    Incremental: only what changed since the last run (or crossed a decay bar); ``full`` for all.
    """
    from cortexgraph.activation.entity_batch import batch_entity_finder
    from cortexgraph.agents import incremental
    from cortexgraph.agents.decay_findings import GcMode
    from cortexgraph.agents.decision_key import config_key
    from cortexgraph.agents.pipeline import AGENT_ORDER, Pipeline, run_agents, select_agents
    from cortexgraph.agents.semantic_merge import MergeMode
    from cortexgraph.run_state import (
        appended_ids,
        files_now,
        files_seen,
        load_run_state,
        run_files,
        save_run_state,
        unchanged_since,
    )
    from cortexgraph.storage import native_memory
    from cortexgraph.user_store import record_run

    state = state_of(ctx)
    storage = state.settings.storage_path
    paths = run_files(state.settings)
    started, now = time.perf_counter(), time.time()
    config = pipeline_config_for(state)
    decay = config.decay  # gc's delete mode has a clock of its own
    deletes = decay is not None and decay.gc is GcMode.DELETE
    key = config_key(config, state.settings.decay_config())
    gc = decay is not None and decay.gc is not GcMode.OFF
    merges = config.merge.mode is MergeMode.APPLY
    wish = state.settings.enable_embeddings
    since = None if full or deletes else unchanged_since(storage, paths, now, key, gc, merges, wish)
    if since is not None:
        # Nothing saved, changed or crossing a decay bar since the last run: nothing to do.
        chosen = select_agents(agents)
        untouched = incremental.untouched_report(
            chosen, config, since=since, now=now, dry_run=dry_run, started=started
        )
        if not dry_run:
            record_run(storage, untouched, time.time())
        return _result(untouched, {})
    vectors, similarity = cached_embedder_for(state)
    # This run's asks only: the background embedder fills the same cache meanwhile.
    tally = vectors.tally_this_thread() if vectors is not None else None
    tracker, tracking = issue_tracker(state, create=not dry_run)
    sink = None if dry_run else note_sink(state)
    pipe = Pipeline(state.store, embedder=vectors, sink=sink, tracker=tracker, config=config)
    # Entities of the memories saved since the last run, in batches (never on a save),
    # before clustering: merge and relations see them.
    pipe.relations.entity_finder = batch_entity_finder(state.settings.spacy_model)
    if not dry_run and (agents is None or "relations" in agents):
        pipe.relations.read_entities()
    # What this run writes itself, told from saves other tool calls make meanwhile: those
    # stay changed for the next run (agents.incremental.state_after).
    with state.store.recording_writes() as writes:
        # As the run found the relations and issue files (run_state.files_seen).
        opened = files_now(run_files(state.settings, tracker))
        previous = load_run_state(storage)
        changes = incremental.begin(
            pipe,
            previous,
            now,
            full=full,
            written=lambda: appended_ids(previous, paths[0], paths[2]),
            embeddings=wish,
        )
        said = (changes.full_because,) if changes.full_because else ()
        report = run_agents(
            pipe,
            now=now,
            dry_run=dry_run,
            agents=agents,
            notes=(similarity, tracking, *said),
            scope=pipe.scope,
        )
        if not dry_run:  # seen by memory_status, cortexgraph-consolidate status and --scheduled
            record_run(storage, report, time.time())
            if set(report.agents) == set(AGENT_ORDER):
                # After the run's last write, before state_after reads the store again.
                # No issue batch here: an issue file this run changed is not recorded as seen.
                files = files_seen(run_files(state.settings, tracker), opened, writes.relations)
                save_run_state(
                    storage, incremental.state_after(pipe, changes, report, now, writes, files)
                )
    reuse: dict[str, int] = {}
    if vectors is not None and tally is not None:
        reuse = {
            "from_cache": tally.hits,
            "embedded": tally.embedded,
            "held": len(vectors),
        }
        report = replace(report, notes=(*report.notes, _reuse_note(reuse)))
        if not dry_run:  # as the flow does; a dry run's vectors are written at shutdown
            vectors.save()
    result = _result(report, reuse)
    del pipe, changes, report  # the run's matrices and candidate lists: give their pages back
    native_memory.release()
    return result


def _result(report: PipelineReport, reuse: dict[str, int]) -> dict[str, Any]:
    data = report.to_json()
    markdown = report.to_markdown()
    return {
        "success": True,
        "dry_run": report.dry_run,
        "agents": data["agents"],
        "seconds": {k: round(v, 3) for k, v in data["seconds"].items()},
        "notes": data["notes"],
        "vectors": reuse,
        "incremental": data["incremental"],
        "summaries": data["summaries"],
        "report_markdown": markdown[:MAX_REPORT_CHARS],
        "report_truncated": len(markdown) > MAX_REPORT_CHARS,
    }


def _reuse_note(reuse: dict[str, int]) -> str:
    return (
        f"vectors: {reuse['from_cache']:,} texts answered from the server's embedding cache, "
        f"{reuse['embedded']:,} embedded (kept for the next run and search; "
        f"{reuse['held']:,} held)"
    )


@tool_errors
def list_consolidation_issues(
    ctx: ServerContext,
    status: Annotated[
        Literal["open", "in_progress", "closed", "all"], Field(description="Which issues.")
    ] = "open",
    label: Annotated[
        str | None,
        Field(
            description="Only issues with this label, e.g. 'consolidation:cluster'.", max_length=200
        ),
    ] = None,
    limit: Annotated[StrictInt, Field(description="At most this many (1-100).", ge=1, le=100)] = 50,
) -> dict[str, Any]:
    """The consolidation agents' work items (beads issues): what is pending, claimed, done."""
    state = state_of(ctx)
    tracker, where = issue_tracker(state, create=False)
    issues = tracker.query(
        labels=[label] if label else [], status=None if status == "all" else status
    )
    return {
        "success": True,
        "tracker": where,
        "total": len(issues),
        "issues": [
            {
                "id": i.id,
                "title": i.title,
                "status": i.status,
                "labels": list(i.labels),
                "assignee": i.assignee,
                "description": (i.description or "")[:500],
                "metadata": dict(i.metadata or {}),
            }
            for i in issues[:limit]
        ],
    }


def register(server: MCPServer[ServerState], state: ServerState) -> None:
    """Add this module's tools (their handlers reach the state through their ctx)."""
    server.add_tool(run_consolidation, annotations=ToolAnnotations(destructive_hint=True))
    server.add_tool(list_consolidation_issues, annotations=ToolAnnotations(read_only_hint=True))


__all__ = ["list_consolidation_issues", "register", "run_consolidation"]
