"""One LoCoMo conversation lived through on a simulated clock (bench/lifecycle.py's engine).

Each turn, at its session's own date (a turn every ``TURN_SECONDS`` from the session's start):

1. the plugin's UserPromptSubmit hook reads it as the user's prompt. The hook's own handler
   (``cortexgraph.hooks.user_prompt_submit.handle``, which ``cortexgraph-hook UserPromptSubmit``
   runs after parsing stdin) is called in process with the simulated ``now``; the memories it
   recalls are used as the block's footer asks, through ``observe_use`` (what
   ``observe_memory_usage`` records);
2. it is saved through the Python API as ``save_memory`` saves it: its enrichment
   (``activation.enrich_for_save``), the save with the turn saved just before in the same
   conversation as its neighbour text (``storage.recent_saves.save_with_neighbour``, within
   the configured window: a session's first turn has none), and its supersession check
   (``retrieval.temporal.after_save``).

Every night at 03:00 UTC of simulated time, from the first session to ``DAYS_AFTER`` days after
the last, the consolidation flow runs (``flows.consolidation.run_pipeline`` with
``RunOptions(now=night)``): all five agents, gc as the configuration says (the nightly
deployment's ``gc: archive`` for ``defaults``). At the end every question is asked through
``vault_sync.search_unified`` as the MCP tool asks it (the configured weights, limit 10, the
search's embedding model for the vault's notes) at the final ``now``. A merged memory is
credited with its sources (the shared bench's ``expand``).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

TURN_SECONDS = 30  # simulated time between two turns of a session
DAYS_AFTER = 30  # questions are asked this many days after the last session
NIGHT_HOUR = 3  # prefect.yaml's nightly schedule: cron "0 3 * * *", UTC
SEARCH_LIMIT = 10  # locomo_consolidation.py asks search_unified for 10
CONVERSATION = "stdio"  # the one conversation key of an assistant on stdio (tools_save)
ID_RE = re.compile(r"\bid ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b")


@dataclass(frozen=True, slots=True)
class Config:
    name: str
    consolidate: bool
    gc: str  # RunOptions.gc: off | archive


CONFIGS = {
    "never_forget": Config("never_forget", consolidate=False, gc="off"),
    "no_gc": Config("no_gc", consolidate=True, gc="off"),
    "defaults": Config("defaults", consolidate=True, gc="archive"),
}


@dataclass
class Outcome:
    """What one conversation under one configuration ended as."""

    config: str
    conversation: str
    turns: int
    rankings: dict[str, list[str]]  # qid -> dia ids, best first
    # diagnosis: the same store searched with archived memories included (store.search with
    # status=None, what search_unified asks before it drops the archived ones)
    with_archived: dict[str, list[str]]
    active: int
    archived: int  # archived and not a merge's source (gc)
    merged_away: int  # turns that are a merge's source
    promoted: int  # memories with status promoted
    notes: int  # memories with a vault note (promoted_to); entity pages are not counted
    relations: int  # relations other than consolidated_from
    nights: int
    recalls: int  # prompts the hook answered with memories
    used: int  # memory uses recorded from those recalls
    gold_where: dict[str, int] = field(default_factory=dict)  # gold turn -> its end state
    seconds: float = 0.0


def session_start(date_time: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> that moment, read as UTC."""
    return datetime.strptime(date_time.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turn_times(memories: list[dict[str, Any]]) -> list[float]:
    """A time for every turn: its session's start plus TURN_SECONDS per earlier turn of it."""
    out: list[float] = []
    count: dict[int, int] = {}
    for m in memories:
        k = count.get(m["session"], 0)
        count[m["session"]] = k + 1
        out.append(session_start(m["date_time"]).timestamp() + k * TURN_SECONDS)
    return out


def nights_between(start: float, end: float) -> list[float]:
    """Every 03:00 UTC strictly after ``start`` and at or before ``end``."""
    day = datetime.fromtimestamp(start, UTC).replace(hour=NIGHT_HOUR, minute=0, second=0)
    if day.timestamp() <= start:
        day += timedelta(days=1)
    out = []
    while day.timestamp() <= end:
        out.append(day.timestamp())
        day += timedelta(days=1)
    return out


class HookUser:
    """The user's side: each prompt through the UserPromptSubmit hook, its recall used."""

    def __init__(self, project_dir: Path, session: str) -> None:
        from cortexgraph.hooks.contract import HookInput
        from cortexgraph.hooks.user_prompt_submit import handle

        self._input = HookInput
        self._handle = handle
        self.project_dir = project_dir
        self.session = session
        self.prompts = 0
        self.recalls = 0
        self.samples: list[tuple[str, float]] = []  # prompts that recalled, for the process check

    def injected(self, prompt: str, now: float) -> list[str]:
        """The memory ids the hook injects for ``prompt`` at ``now`` (nothing recorded)."""
        inp = self._input(
            event="UserPromptSubmit",
            session_id=self.session,
            cwd=str(self.project_dir),
            prompt=prompt,
        )
        out = self._handle(inp, now=now)
        if not out:
            return []
        return list(dict.fromkeys(ID_RE.findall(out["hookSpecificOutput"]["additionalContext"])))

    def recalled(self, prompt: str, now: float) -> list[str]:
        """``injected``, counted: a prompt that recalled is kept for the process check."""
        self.prompts += 1
        ids = self.injected(prompt, now)
        if ids:
            self.recalls += 1
            self.samples.append((prompt, now))
        return ids


def save_turn(store: Any, settings: Any, recent: Any, text: str, now: float) -> Any:
    """``save_memory(content)``'s write, at ``now``: enrichment, the save with the turn before
    as neighbour (``recent``: the conversation's RecentSaves), supersession."""
    from cortexgraph import activation
    from cortexgraph.retrieval.temporal import after_save
    from cortexgraph.storage.recent_saves import save_with_neighbour

    enrichment = activation.enrich_for_save(
        text,
        tags=None,
        entities=None,
        strength=None,
        store=store,
        config=activation.ActivationConfig.from_mapping(settings),
    )
    memory = save_with_neighbour(
        store,
        recent,
        CONVERSATION,
        text,
        now=now,
        tags=enrichment.tags,
        entities=enrichment.entities,
        strength=1.0 if enrichment.strength is None else float(enrichment.strength),
    )
    after_save(store, memory, None, auto_supersede=settings.auto_supersede)
    return memory


def use_memories(store: Any, ids: list[str], now: float) -> int:
    """``observe_memory_usage(ids)`` at ``now``: one use and one review each."""
    from cortexgraph.storage.reinforcement import observe_use

    found = [m for m in (store.find(i) for i in ids) if m is not None]
    store.put_many([observe_use(m, (), int(now)).memory for m in found])
    return len(found)


def consolidate(settings: Any, config: Config, night: float) -> None:
    """The consolidation flow, in process, at simulated time ``night``."""
    from cortexgraph.flows.consolidation import RunOptions, run_pipeline

    run_pipeline(settings, RunOptions(now=night, gc=config.gc))


def replay(
    conv: dict[str, Any],
    config: Config,
    home: Path,
    shared: ModuleType,
    tick: Callable[[str], None],
    days_after: float = DAYS_AFTER,
) -> tuple[Outcome, HookUser]:
    """Live ``conv`` through under ``config`` in ``home``, asking its questions ``days_after``
    days after its last turn; ``tick(what)`` after each step."""
    from cortexgraph.settings import load_settings
    from cortexgraph.storage import open_store
    from cortexgraph.storage.recent_saves import RecentSaves

    started = time.perf_counter()
    store_dir, vault = home / "store", home / "vault"
    project = home / "project"
    project.mkdir(parents=True, exist_ok=True)
    vault.mkdir(parents=True, exist_ok=True)  # a named vault must exist
    os.environ["CORTEXGRAPH_STORAGE_PATH"] = str(store_dir)  # what the hook reads
    os.environ["CORTEXGRAPH_HOOK_STATE_DIR"] = str(home / "hook-state")
    settings = load_settings(storage_path=store_dir, ltm_vault_path=vault)
    store = open_store(store_dir, settings.store_config())
    recent = RecentSaves.configured(settings.save_neighbour_context, settings.save_context_window_s)
    user = HookUser(project, f"lifecycle-{conv['id']}")
    times = turn_times(conv["memories"])
    end = times[-1] + days_after * 86_400
    nights = nights_between(times[0], end) if config.consolidate else []
    id2dia: dict[str, str] = {}
    used = 0
    pending = list(nights)
    for m, t in zip(conv["memories"], times, strict=True):
        while pending and pending[0] < t:
            consolidate(settings, config, pending.pop(0))
            tick("night")
        recalled = user.recalled(m["raw_text"], t)
        if recalled:
            used += use_memories(store, recalled, t)
        id2dia[save_turn(store, settings, recent, m["text"], t).id] = m["id"]
        tick("turn")
    for night in pending:
        consolidate(settings, config, night)
        tick("night")
    rankings, with_archived = ask_all(conv, store_dir, vault, settings, end, shared, id2dia)
    tick("questions")
    outcome = tally(conv, config, store_dir, id2dia, shared, rankings)
    outcome.with_archived = with_archived
    outcome.nights, outcome.recalls, outcome.used = len(nights), user.recalls, used
    outcome.seconds = time.perf_counter() - started
    return outcome, user


def ask_all(
    conv: dict[str, Any],
    store_dir: Path,
    vault: Path,
    settings: Any,
    now: float,
    shared: ModuleType,
    id2dia: dict[str, str],
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Every question through search_unified as the MCP tool asks it, at ``now``; and, for
    the diagnosis, through store.search with archived memories included."""
    from cortexgraph.storage import open_store
    from cortexgraph.storage.embeddings import MatrixDenseIndex, default_cache
    from cortexgraph.vault_sync.ltm_index import LTMIndex
    from cortexgraph.vault_sync.unified_search import search_unified

    cache = default_cache(store_dir) if settings.enable_embeddings else None
    dense = MatrixDenseIndex(cache) if cache is not None else None
    # The vault's notes ranked as the MCP tool ranks them: by words and by the model behind
    # the search's cache (mcp_server.collaborators.embedder_for), not by words alone.
    embedder = cache.embedder if cache is not None else None
    store = open_store(store_dir, settings.store_config(), dense=dense)
    index = None
    if vault.is_dir():
        index = LTMIndex.open(vault, refresh=False)
        index.refresh()
    merged = shared.merged_sources(store_dir)

    def credited(ids: list[str | None]) -> list[str]:
        ranked: list[str] = []
        for i in ids:
            for dia in shared.expand(i, merged, id2dia) if i is not None else ():
                if dia not in ranked:
                    ranked.append(dia)
        return ranked

    out: dict[str, list[str]] = {}
    archived_too: dict[str, list[str]] = {}
    for q in conv["questions"]:
        hits = search_unified(
            store,
            index,
            q["question"],
            limit=SEARCH_LIMIT,
            verbose=True,
            embedder=embedder,
            now=now,
            **settings.unified_search_weights(),
        )
        out[q["qid"]] = credited([hit.memory_id for hit in hits])
        every = store.search(q["question"], top_k=SEARCH_LIMIT, status=None, now=now)
        archived_too[q["qid"]] = credited([r.memory.id for r in every])
    return out, archived_too


def tally(
    conv: dict[str, Any],
    config: Config,
    store_dir: Path,
    id2dia: dict[str, str],
    shared: ModuleType,
    rankings: dict[str, list[str]],
) -> Outcome:
    """Counts of the store at the end, and where each question's gold turns ended."""
    from cortexgraph.storage import MemoryStatus, open_store

    store = open_store(store_dir)
    memories = store.list()
    merged = shared.merged_sources(store_dir)
    sources = {s for ss in merged.values() for s in ss}
    status = {m.id: m.status for m in memories}
    relations = [r for r in store.relations() if r.relation_type != "consolidated_from"]
    dia_state: dict[str, str] = {}
    for mid, dia in id2dia.items():
        st = status.get(mid)
        if mid in sources:
            dia_state[dia] = "merged"
        elif st is None:
            dia_state[dia] = "deleted"
        else:
            dia_state[dia] = str(st.value if isinstance(st, MemoryStatus) else st)
    gold_where: dict[str, int] = {}
    for q in conv["questions"]:
        for g in q["gold"]:
            key = dia_state.get(g, "missing")
            gold_where[key] = gold_where.get(key, 0) + 1
    return Outcome(
        config=config.name,
        conversation=conv["id"],
        turns=len(conv["memories"]),
        rankings=rankings,
        with_archived={},
        active=sum(1 for m in memories if m.status == MemoryStatus.ACTIVE),
        archived=sum(
            1 for m in memories if m.status == MemoryStatus.ARCHIVED and m.id not in sources
        ),
        merged_away=sum(1 for mid in id2dia if mid in sources),
        promoted=sum(1 for m in memories if m.status == MemoryStatus.PROMOTED),
        notes=sum(1 for m in memories if m.promoted_to),
        relations=len(relations),
        nights=0,
        recalls=0,
        used=0,
        gold_where=gold_where,
    )


__all__ = [
    "CONFIGS",
    "DAYS_AFTER",
    "Config",
    "HookUser",
    "Outcome",
    "nights_between",
    "replay",
    "session_start",
    "turn_times",
]
