"""The invariants bench/soak_incremental.py checks after its rounds, and the full run's word.

Each check returns (name, passed, detail). ``full_run_findings`` runs ``--full --dry-run`` (and
an incremental ``--dry-run``) on a copy of the store and explains what a full run would still
do: by the save rounds of the memories involved and by what the last incremental runs saw.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

from incremental_bench import consolidate

from cortexgraph.agents.entity_postings import memory_names
from cortexgraph.storage import open_store
from cortexgraph.storage.models import MemoryStatus

LIVE = ("active", "promoted")


async def _views(soak: Any, ids: list[str]) -> dict[str, dict]:
    """Each id's ``open_memories`` view (status, relations), 100 at a time."""
    out: dict[str, dict] = {}
    for i in range(0, len(ids), 100):
        chunk = ids[i : i + 100]
        try:
            got = await soak.call(
                "open_memories", {"memory_ids": chunk, "page_size": 100, "preview_length": 40}
            )
        except SystemExit:  # none of them found: the tool errors
            continue
        out.update({v["id"]: v for v in got["memories"]})
    return out


async def saved_ids_accounted(soak: Any) -> tuple[str, bool, str]:
    """Every id save_memory returned is live, or archived with a consolidated_from link (from
    the memory it was merged into) that leads, through chained merges, to a live memory; the
    ones ``memory_forget`` deleted are gone."""
    gone = set(getattr(soak, "deleted", ()))
    ids = sorted(set(soak.saved) - gone)
    views = await _views(soak, ids)
    vanished = [i for i in ids if i not in views]
    still_there = sorted(gone & (await _views(soak, sorted(gone))).keys())
    states: Counter[str] = Counter()
    orphans: list[str] = []
    for mid in ids:
        view = views.get(mid)
        if view is None:
            continue
        if view["status"] in LIVE:
            states[view["status"]] += 1
            continue
        seen, at = set(), view
        while at is not None and at["status"] == "archived" and at["id"] not in seen:
            seen.add(at["id"])
            into = [
                r["from"] for r in at["relations"]["incoming"] if r["type"] == "consolidated_from"
            ]
            if not into:
                at = None
                break
            nxt = (await _views(soak, into[:1])).get(into[0])
            at = nxt
        if at is not None and at["status"] in LIVE:
            states["archived, merged into a live memory"] += 1
        else:
            orphans.append(mid)
    ok = not vanished and not orphans and not still_there
    detail = ", ".join(f"{n} {k}" for k, n in states.items())
    if gone:
        detail += f"; {len(gone) - len(still_there)} of {len(gone)} deleted ones gone"
    if vanished:
        detail += f"; VANISHED {len(vanished)}: {vanished[:5]}"
    if orphans:
        detail += f"; archived without a live successor {len(orphans)}: {orphans[:5]}"
    if still_there:
        detail += f"; DELETED BUT FOUND {len(still_there)}: {still_there[:5]}"
    return f"{len(ids)} saved ids accounted for", ok, detail


def store_reopens(store_dir: Path, stats: dict) -> tuple[str, bool, str]:
    """The store reopens with nothing quarantined and the counts the server reports."""
    store = open_store(store_dir)
    mine = store.stats().to_json()
    quarantine = sorted(p.name for p in store_dir.glob("*.quarantine.jsonl"))
    keys = ("memories", "active", "promoted", "archived", "relations")
    differ = {k: (mine[k], stats.get(k)) for k in keys if mine[k] != stats.get(k)}
    ok = not quarantine and mine["quarantined_lines"] == 0 and not differ
    detail = (
        ", ".join(f"{k} {mine[k]}" for k in keys) + f", quarantined {mine['quarantined_lines']}"
    )
    if quarantine:
        detail += f"; quarantine files {quarantine}"
    if differ:
        detail += f"; differs from cortexgraph://stats (reopened, server): {differ}"
    return "store reopens clean, counts = cortexgraph://stats", ok, detail


def beads_consistent(store_dir: Path, vault: Path) -> list[tuple[str, bool, str]]:
    """The issue file parses with the real tracker, equals the file at HEAD; git fsck passes;
    every closed merge issue names memories that exist and the memory it merged into."""
    import git

    from cortexgraph.settings import load_settings
    from cortexgraph.user_store import open_configured_tracker

    settings = load_settings(storage_path=store_dir, ltm_vault_path=vault)
    tracker = open_configured_tracker(settings, init=False)
    issues = tracker.query(include_tombstones=True)
    bad = tracker.unreadable_lines()
    by_status = Counter(i.status for i in issues)
    out = [
        (
            "issues.jsonl parses with the tracker",
            not bad,
            f"{len(issues)} issues ({dict(by_status)}), unreadable lines {len(bad)}",
        )
    ]
    repo = git.Repo(tracker.path.parent.parent)
    rel = tracker.path.relative_to(Path(repo.working_tree_dir)).as_posix()
    at_head = (repo.head.commit.tree / rel).data_stream.read()
    same = at_head == tracker.path.read_bytes()
    out.append(
        (
            "issue file at git HEAD = work tree",
            same,
            f"{len(at_head)} bytes at HEAD, {tracker.path.stat().st_size} on disk, "
            f"{sum(1 for _ in repo.iter_commits())} commits",
        )
    )
    try:
        fsck = repo.git.fsck("--full")
        out.append(("git fsck --full", True, fsck.strip() or "clean"))
    except git.GitCommandError as exc:
        out.append(("git fsck --full", False, str(exc)[-300:]))
    store = open_store(store_dir)
    missing: list[str] = []
    merges = 0
    for issue in issues:
        if "action:merge" not in issue.labels or issue.status != "closed":
            continue
        merges += 1
        named = list(issue.metadata.get("memory_ids") or ())
        reason = issue.close_reason
        if reason.startswith("merged into "):
            named.append(reason.removeprefix("merged into ").strip())
        missing += [f"{issue.id}:{m}" for m in named if store.find(m) is None]
    out.append(
        (
            "closed merge issues name memories that exist",
            not missing,
            f"{merges} closed merge issues" + (f"; missing {missing[:5]}" if missing else ""),
        )
    )
    return out


def promoted_notes(store_dir: Path, vault: Path) -> tuple[str, bool, str]:
    """Every promoted memory's note is in the vault, its frontmatter ``id`` the memory's."""
    import frontmatter

    promoted = open_store(store_dir).list(status=MemoryStatus.PROMOTED)
    wrong: list[str] = []
    for m in promoted:
        path = Path(m.promoted_to or "")
        path = path if path.is_absolute() else vault / path
        if not path.is_file():
            wrong.append(f"{m.id}: no note at {m.promoted_to}")
            continue
        if str(frontmatter.load(path).get("id")) != m.id:
            wrong.append(f"{m.id}: note {path.name} has id {frontmatter.load(path).get('id')}")
    notes = len(list(vault.rglob("*.md")))
    return (
        "promoted memories have their notes",
        not wrong,
        f"{len(promoted)} promoted, {notes} notes in the vault"
        + (f"; {wrong[:3]}" if wrong else ""),
    )


async def check_all(soak: Any, store: Path, vault: Path, stats: dict) -> list:
    return [
        await saved_ids_accounted(soak),
        store_reopens(store, stats),
        *beads_consistent(store, vault),
        promoted_notes(store, vault),
    ]


def full_run_findings(soak: Any, store: Path, vault: Path, env: dict, copy: Path) -> dict:
    """What ``--full --dry-run`` on a copy would still do after the last incremental run, and
    what an incremental ``--dry-run`` on the same copy says, each finding with the rounds its
    memories were saved in."""
    shutil.copytree(store, copy / "store", symlinks=True)
    shutil.copytree(vault, copy / "vault", symlinks=True)
    lines: list[str] = []
    inc, _, _ = consolidate(copy / "store", copy / "vault", env, "--dry-run")
    lines.append(f"incremental --dry-run: {(inc.get('incremental') or {}).get('summary')}")
    data, wall, _ = consolidate(copy / "store", copy / "vault", env, "--full", "--dry-run")
    reports = data["reports"]
    memories = {m.id: m for m in open_store(copy / "store").list()}

    def who(mid: str) -> str:
        m = memories.get(mid)
        rnd = soak.saved.get(mid, ("merge", ""))[0]
        status = m.status.value if m else "missing"
        return f"{mid[:8]}(r{rnd},{status},uses {m.use_count if m else '?'})"

    merges = [o for o in reports["merge"]["outcomes"] if o["status"] == "previewed"]
    promos = reports["promote"]["promotions"]
    rels = reports["relations"]["discovered"]
    linked = int(reports["merge"].get("related_linked") or 0)
    lines.append(
        f"full --dry-run ({wall:.1f} s): {len(merges)} merge(s), {len(promos)} promotion(s), "
        f"{len(rels)} relation(s), {linked} related link(s)"
    )
    lines += [f"  merge: {', '.join(who(i) for i in o['source_ids'])}" for o in merges]
    lines += [f"  promote: {who(p['memory_id'])}: {p['reason']}" for p in promos]
    common = frozenset(reports["relations"].get("common_entities_skipped") or ())
    chained = _pairs_with_archived_in_place(memories, common)
    unexplained = 0
    for r in rels:
        why = _why_unrelated(soak, r, memories, chained)
        unexplained += why.startswith("UNEXPLAINED")
        lines.append(
            f"  relate: {who(r['from_id'])} - {who(r['to_id'])} by {r['shared_entities']}: {why}"
        )
    inc_outcomes = ((inc.get("reports") or {}).get("merge") or {}).get("outcomes") or ()
    inc_merges = [o for o in inc_outcomes if o["status"] == "previewed"]
    if inc_merges:
        lines.append(f"incremental --dry-run would also merge {len(inc_merges)}")
    if not (merges or promos or rels or linked):
        verdict = "clean: a full run finds nothing the incremental runs left undone"
    elif merges or promos or linked or unexplained:
        verdict = "a full run would still act, not all of it explained: see the findings above"
    else:
        verdict = "a full run would still relate memories, each for an explained reason above"
    shutil.rmtree(copy, ignore_errors=True)
    return {"lines": lines, "verdict": verdict, "full": data, "incremental": inc}


def _pairs_with_archived_in_place(memories: dict, common: frozenset[str]) -> set:
    """The pairs the relations step makes (``_pairs``, by entity, with the current ceiling and
    eligibility) when the archived memories still stand in the entities' time chains."""
    from dataclasses import replace

    from cortexgraph.agents.entity_postings import EntityPostings
    from cortexgraph.agents.relationship_discovery import RelationshipDiscovery

    step = RelationshipDiscovery(None)  # type: ignore[arg-type]  # only its pairing
    cfg = step.config
    live = {i: m for i, m in memories.items() if m.status is not MemoryStatus.ARCHIVED}
    eligible = EntityPostings.of(live).eligible(common, cfg.min_shared_entities)
    everyone = {i: replace(m, status=MemoryStatus.ACTIVE) for i, m in memories.items()}
    n = len(live)
    pairs: set = set()
    for e, ids in EntityPostings.of(everyone).postings.items():
        if e in common:
            continue
        df = sum(i in live for i in ids)
        rare = df <= cfg.rare_entity_max_df and df <= cfg.rare_entity_max_share * n
        members = ids if rare else [i for i in ids if i in eligible or i not in live]
        pairs.update(step._pairs(e, members, everyone))
    return pairs


def _why_unrelated(soak: Any, rel: dict, memories: dict, chained: set) -> str:
    """Why the incremental runs did not relate a pair a full run relates now: a shared entity
    over the ceiling in the run that last judged them (the run after the newer one was saved,
    or the run whose merge archived the last memory between them in an entity's time chain)."""
    a, b = rel["from_id"], rel["to_id"]
    shared = set(rel["shared_entities"])
    over = {now: shared & common for _, now, common in soak.commons}
    if (min(a, b), max(a, b)) in chained:
        runs = max(_judged(soak, memories[a]), _judged(soak, memories[b]))
        what = "the run(s) that judged the newer one"
    else:
        lo, hi = sorted((memories[a].created_at, memories[b].created_at))
        runs = []
        for m in memories.values():
            into = memories.get(m.meta.extra.get("merged_into") or "")
            if into is not None and memory_names(m) & shared and lo <= m.created_at <= hi:
                runs.append(int((into.meta.extra.get("merge") or {}).get("merged_at") or 0))
        runs = sorted(runs)[-1:]
        what = "the run whose merge made them neighbours in an entity's time chain"
    named = sorted(set().union(*(over.get(now, set()) for now in runs))) if runs else []
    if any(over.get(now) for now in runs):
        return f"ceiling: {', '.join(named)} over it (8% of the store) in {what}; under it now"
    return f"UNEXPLAINED: missed in {what} ({len(runs)} run(s) found)"


def _judged(soak: Any, memory: Any) -> list[int]:
    """The clocks of the runs that had ``memory`` in scope as new: its round's run (saved
    before the run listed the store) or the next (saved beside it); a merged memory's, the run
    that made it."""
    if memory.id in soak.saved:
        rnd = soak.saved[memory.id][0]
        return [now for r, now, _ in soak.commons if r in (rnd, rnd + 1)]
    return [int((memory.meta.extra.get("merge") or {}).get("merged_at") or 0)]
