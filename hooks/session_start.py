"""SessionStart: a compact block of the project's most relevant memories and recent decisions.

"Relevant to the project" means tagged with the project's folder name, or matching it by
keyword; when nothing is, the strongest memories overall stand in, labelled as such. Promoted
memories are among them, shown with their vault note's words (hooks.long_term). On
``resume`` the earlier block is still in the transcript, so only half the budget is used.
"""

from __future__ import annotations

import time
from typing import Any

from cortexgraph.hooks.context_block import Entry, fenced_block
from cortexgraph.hooks.contract import HookInput, additional_context, run_hook
from cortexgraph.hooks.long_term import recalled_entry
from cortexgraph.hooks.quick_search import Hit, RawStoreRecords
from cortexgraph.hooks.runtime import HookRuntime, load_runtime
from cortexgraph.storage.config import LTM_WEIGHT

EVENT = "SessionStart"
DECISION_TAGS = ("decision", "decisions", "preference", "preferences", "convention")
DECISION_MAX_AGE_DAYS = 30.0


def project_hits(
    records: RawStoreRecords, project: str, now: float, limit: int, ltm_weight: float = LTM_WEIGHT
) -> list[Hit]:
    if not project:
        return []
    names = {project, project.lower(), project.replace("_", "-").lower()}
    tagged = records.strongest(now, limit, tags=names, ltm_weight=ltm_weight)
    matched = records.search(
        project.replace("-", " ").replace("_", " "), top_k=limit, now=now, min_relevance=0.5
    )
    seen: set[str] = set()
    out: list[Hit] = []
    for h in [*tagged, *matched]:
        if h.memory.id not in seen:
            seen.add(h.memory.id)
            out.append(h)
    return out[:limit]


def move_monitor_records_out(runtime: HookRuntime) -> None:
    """A store from before the monitor had its own ledger: move its records there, once."""
    from cortexgraph.activation.monitor.ledger_store import isolate_monitor_records
    from cortexgraph.storage import open_store

    store = open_store(runtime.storage_path, runtime.store_config)
    isolate_monitor_records(store, runtime.storage_path)


def session_context(runtime: HookRuntime, source: str, now: float) -> str | None:
    records = RawStoreRecords.read(runtime.storage_path, runtime.store_config)
    if records.monitor_ids:
        move_monitor_records_out(runtime)
    if not len(records):
        return None
    plugin = runtime.plugin
    budget = plugin.max_inject_chars // 2 if source == "resume" else plugin.max_inject_chars
    ltm_weight = runtime.ltm_weight
    decisions = records.strongest(
        now,
        max(3, plugin.items // 2),
        tags=DECISION_TAGS,
        max_age_days=DECISION_MAX_AGE_DAYS,
        ltm_weight=ltm_weight,
    )
    project = project_hits(records, runtime.project_name, now, plugin.items, ltm_weight)

    def entries(hits: list[Hit]) -> list[Entry]:  # promoted ones with their notes' words
        redact = runtime.store_config.redact_secrets
        return [recalled_entry(h.memory, "", runtime.vault, redact=redact) for h in hits]

    sections: list[tuple[str, list[Entry]]] = []
    if project:
        sections.append((f"Project {runtime.project_name}", entries(project)))
    if decisions:
        sections.append(("Recent decisions and preferences", entries(decisions)))
    if not project:
        strongest = records.strongest(now, plugin.items, ltm_weight=ltm_weight)
        if strongest:
            sections.append(
                ("Strongest memories (none tagged for this project)", entries(strongest))
            )
    if not sections:
        return None
    return fenced_block(
        "cortexgraph memory at session start",
        sections,
        max_chars=budget,
        preview_chars=plugin.preview_chars,
        footer="Use search_memory for more; save new decisions with save_memory.",
    )


def handle(inp: HookInput, now: float | None = None) -> dict[str, Any] | None:
    runtime = load_runtime(inp)
    if not runtime.plugin.auto_context_on_start:
        return None
    text = session_context(runtime, inp.source, time.time() if now is None else now)
    return additional_context(EVENT, text) if text else None


def main() -> int:
    return run_hook(EVENT, handle)


__all__ = ["handle", "main", "project_hits", "session_context"]
