"""Behaviour monitor over MCP: record a tool call, ask for an intervention, report whether it
helped, read the history; resources for the patterns, active alerts and the user's directives.

Uses the same files as the Claude Code hook (<storage>/monitor/, the learning ledger in
<storage>/monitor/ledger), so the hook's alerts and the model's reports meet in one history.
The ledger is never the user's store: nothing here shows up in search, stats or the graph.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp_types import ToolAnnotations
from pydantic import Field

from cortexgraph.activation.monitor import (
    BehaviorLedger,
    Detection,
    Monitor,
    PatternSet,
    SessionLog,
    active_sessions,
    claude_md_files,
    load_directives,
    load_pattern_set,
    make_call,
    render_reminder,
)
from cortexgraph.activation.monitor.engine import choose_directive
from cortexgraph.activation.monitor.project_profile import project_profile, read_context
from cortexgraph.mcp_server.arguments import check_json
from cortexgraph.mcp_server.errors import quote, tool_errors
from cortexgraph.mcp_server.state import ServerContext, ServerState, state_of
from cortexgraph.storage.errors import CortexGraphError, InvalidInputError

ACTIVE_ALERT_SECONDS = 3600

PatternId = Annotated[
    str,
    Field(
        description="A behaviour pattern id, e.g. 'repeated-error' "
        "(see resource behavior://patterns/all).",
        max_length=64,
    ),
]
InterventionId = Annotated[
    str,
    Field(
        description="The intervention id given in the reminder, e.g. 'root-cause'.", max_length=64
    ),
]
ContextText = Annotated[
    str | None,
    Field(
        description="Where it happened, e.g. 'project:shop'; omit for any context.", max_length=200
    ),
]
# The monitor spec passes a context object to the two look-ups (activation.monitor.project_profile
# read_context): a name (context, or project/repo as project:<name>) and repo_type / language.
MAX_CONTEXT_JSON_CHARS = 2000  # the context object, as JSON (names of 200 at most inside)
ContextArg = Annotated[
    Annotated[str, Field(max_length=200)] | dict[str, Any] | None,
    Field(
        description="Where: a name such as 'project:shop', or an object {project (or repo or "
        "context), repo_type, language}; repo_type/language keep the patterns whose "
        "context_filters match. Omit for any context."
    ),
]


def monitor_dir(state: ServerState) -> Path:
    return state.settings.storage_path / "monitor"


def ledger_of(state: ServerState) -> BehaviorLedger:
    """The monitor's own ledger store, opened once per server (never the user's store).

    It lives under the user's store folder, which opens first: opening the user's store moves
    any records an older version left there (bm.*) into this ledger."""
    return state.monitor_ledger


def project_dir() -> Path:
    return Path(os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd())


def patterns_of(state: ServerState) -> PatternSet:
    base = monitor_dir(state)
    return load_pattern_set(
        [base / "patterns.yaml", project_dir() / ".claude" / "cortexgraph-patterns.yaml"]
    )


def directives_of() -> list[Any]:
    return load_directives(claude_md_files(project_dir(), Path.home()), Path.home())


def _spec(patterns: PatternSet, pattern_id: str) -> Any:
    spec = patterns.get(pattern_id)
    if spec is None:
        raise InvalidInputError(
            f"no behaviour pattern {pattern_id!r}; known: {[p.id for p in patterns.patterns]}"
        )
    return spec


@tool_errors
def record_tool_call(
    ctx: ServerContext,
    session_id: Annotated[
        str, Field(description="A stable id for this conversation.", min_length=1, max_length=128)
    ],
    tool_name: Annotated[
        str,
        Field(description="The tool that was called, e.g. 'Bash'.", min_length=1, max_length=200),
    ],
    tool_input: Annotated[dict[str, Any] | None, Field(description="Its arguments.")] = None,
    tool_response: Annotated[
        str | None, Field(description="Its output text (clipped).", max_length=50_000)
    ] = None,
    error: Annotated[
        str | None, Field(description="The error text if the call failed.", max_length=50_000)
    ] = None,
    context: ContextText = None,
) -> dict[str, Any]:
    """Add one tool call to the session's behaviour log and check it for loops; returns any
    detected pattern and a reminder to follow (for clients without the Claude Code hook)."""
    state = state_of(ctx)
    check_json(tool_input, "tool_input")  # before the session log or the ledger is touched
    monitor = Monitor(patterns_of(state), directives=directives_of, ledger=lambda: ledger_of(state))
    call = make_call(tool_name, tool_input or {}, tool_response, ts=time.time(), error=error)
    obs = monitor.observe(
        SessionLog(monitor_dir(state), session_id),
        call,
        context or "global",
        profile=project_profile(project_dir()),
    )
    return {"success": True, **obs.to_json()}


@tool_errors
def report_outcome(
    ctx: ServerContext,
    pattern_id: PatternId,
    intervention_id: InterventionId,
    worked: Annotated[bool, Field(description="True if the reminder got you out of the loop.")],
    notes: Annotated[
        str, Field(description="What you did instead, briefly.", max_length=2000)
    ] = "",
    context: ContextText = None,
) -> dict[str, Any]:
    """Say whether a behaviour-monitor reminder helped; future reminders favour what worked."""
    state = state_of(ctx)
    spec = _spec(patterns_of(state), pattern_id)
    if spec.intervention(intervention_id) is None:  # checked before the ledger is opened
        raise InvalidInputError(
            f"pattern {spec.id!r} has no intervention "
            f"{quote(intervention_id)}; known: "
            f"{[i.id for i in spec.interventions]}"
        )
    ledger = ledger_of(state)
    rel = ledger.record_outcome(spec, intervention_id, context, worked, notes=notes)
    stats = ledger.effectiveness(spec, rel.metadata.get("context"))
    return {
        "success": True,
        "relation_id": rel.id,
        "context": rel.metadata.get("context"),
        "effectiveness": [s.to_json() for s in stats],
    }


@tool_errors
def query_pattern_history(
    ctx: ServerContext,
    signature: Annotated[
        str,
        Field(
            description="A pattern id, or an error message to look up "
            "(paths and numbers are ignored).",
            min_length=1,
            max_length=5000,
        ),
    ],
    context: ContextArg = None,
) -> dict[str, Any]:
    """How often a pattern (or an error) occurred, where, and which interventions worked."""
    state = state_of(ctx)
    context, profile = _context_of(context)
    patterns = patterns_of(state)
    ledger = ledger_of(state)
    found = patterns.get(signature)
    # a pattern id: all its occurrences; else an error text: the patterns (of this kind of
    # project, with a profile) that recorded it
    specs, error = (
        ([found], None)
        if found is not None
        else (list(patterns.for_project(profile).patterns), signature)
    )
    out = []
    for spec in specs:
        occ = ledger.occurrences_in(spec.id, context, error=error)
        if error is not None and not occ:
            continue
        out.append(
            {
                "pattern_id": spec.id,
                "name": spec.name,
                "occurrences": _occurrences(occ),
                "interventions": _effectiveness(ledger, spec, context),
                "best": dict(
                    zip(
                        ("intervention_id", "why"),
                        ledger.best_intervention(spec, context or "global"),
                        strict=True,
                    )
                ),
            }
        )
    return {
        "success": True,
        "query": signature,
        "context": context,
        **({"profile": {k: sorted(v) for k, v in profile.items()}} if profile else {}),
        "patterns": out,
    }


@tool_errors
def request_intervention(
    ctx: ServerContext, pattern_id: PatternId, context: ContextArg = None
) -> dict[str, Any]:
    """The reminder the monitor would give for a pattern now: the user's matching CLAUDE.md
    rule and the intervention that has worked best in this context."""
    state = state_of(ctx)
    context, profile = _context_of(context)
    spec = _spec(patterns_of(state), pattern_id)
    ctx_name = context or "global"
    ledger = ledger_of(state)
    iv_id, why = ledger.best_intervention(spec, ctx_name)
    det = Detection(
        spec.id,
        "loop",
        spec.trigger.threshold,
        spec.trigger.threshold,
        f"req:{spec.id}",
        "",
        "",
        ledger.last_error(spec.id, context),
        spec.description.rstrip("."),
    )
    embedder = None
    if state.settings.enable_embeddings:
        from cortexgraph.mcp_server.collaborators import embedder_for

        embedder, _ = embedder_for(state)
    match = choose_directive(directives_of(), spec, det, embedder)
    reminder = render_reminder(det, spec, spec.intervention(iv_id) or spec.interventions[0], match)
    return {
        "success": True,
        "pattern_id": spec.id,
        "intervention_id": reminder.intervention_id,
        "chosen_because": why,
        "directive": match.directive.to_json() if match else None,
        "directive_match": {
            "score": match.score,
            "method": match.method,
            "terms": list(match.matched_terms),
        }
        if match
        else None,
        "reminder": reminder.text,
        # with a profile: whether the pattern's context_filters keep it for such a project
        **({"applies_to_context": spec.applies_to(profile)} if profile else {}),
    }


def _context_of(
    value: str | dict[str, Any] | None,
) -> tuple[str | None, dict[str, frozenset[str]] | None]:
    """The look-ups' context argument, bounded by its JSON size, as (ledger name, profile)."""
    check_json(value, "context", max_chars=MAX_CONTEXT_JSON_CHARS)
    return read_context(value)


def _occurrences(relations: Any) -> list[dict[str, Any]]:
    keys = ("context", "count", "last_at", "last_stage")
    return [{k: r.metadata.get(k) for k in keys} for r in relations]


def _effectiveness(
    ledger: BehaviorLedger, spec: Any, context: str | None = None
) -> list[dict[str, Any]]:
    """How each intervention of ``spec`` did, in ``context`` or everywhere."""
    return [s.to_json() for s in ledger.effectiveness(spec, context)]


def register(server: MCPServer[ServerState], state: ServerState) -> None:
    server.add_tool(record_tool_call)
    server.add_tool(report_outcome)
    server.add_tool(query_pattern_history, annotations=ToolAnnotations(read_only_hint=True))
    server.add_tool(request_intervention, annotations=ToolAnnotations(read_only_hint=True))

    def patterns() -> PatternSet:
        try:
            return patterns_of(state)
        except CortexGraphError as exc:
            raise ResourceError(str(exc)) from exc

    @server.resource(
        "behavior://patterns/all",
        mime_type="application/json",
        description="Every behaviour pattern the monitor watches for.",
    )
    def all_patterns() -> str:
        # the spec's pattern library "shows effectiveness scores": each pattern's, all contexts
        specs = patterns().patterns
        ledger = ledger_of(state)
        return json.dumps(
            [{**p.to_json(), "effectiveness": _effectiveness(ledger, p)} for p in specs],
            ensure_ascii=False,
        )

    @server.resource(
        "behavior://patterns/{pattern_id}",
        mime_type="application/json",
        description="One behaviour pattern with where it occurred and how each intervention did.",
    )
    def one_pattern(pattern_id: str) -> str:
        spec = patterns().get(pattern_id)
        if spec is None:
            raise ResourceNotFoundError(f"no behaviour pattern {pattern_id!r}")
        ledger = ledger_of(state)
        # the seed's "historical data": where it occurred, and how each intervention did
        history = _occurrences(ledger.occurrences_in(spec.id, None))
        return json.dumps(
            {
                **spec.to_json(),
                "occurrences": history,
                "effectiveness": _effectiveness(ledger, spec),
            },
            ensure_ascii=False,
        )

    def active_alerts() -> str:
        since = time.time() - ACTIVE_ALERT_SECONDS
        out = [
            {"session": name, **a}
            for name, st in active_sessions(monitor_dir(state), since)
            for a in st.get("alerts", [])
            if float(a.get("ts", 0)) >= since
        ]
        return json.dumps(sorted(out, key=lambda a: -float(a["ts"])), ensure_ascii=False)

    # The spec names the alerts resource both ways (MCP interface: active; injection: current).
    for uri in ("behavior://alerts/active", "behavior://alerts/current"):
        server.resource(
            uri,
            mime_type="application/json",
            description="Alerts shown in the last hour, per session."
            + ("" if uri.endswith("active") else " Same as behavior://alerts/active."),
        )(active_alerts)

    @server.resource(
        "behavior://directives/all",
        mime_type="application/json",
        description="Rules parsed from the user's and the project's CLAUDE.md.",
    )
    def all_directives() -> str:
        return json.dumps([d.to_json() for d in directives_of()], ensure_ascii=False)


__all__ = [
    "query_pattern_history",
    "record_tool_call",
    "register",
    "report_outcome",
    "request_intervention",
]
