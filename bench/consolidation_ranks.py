"""Which questions a consolidation run moves, and what moved above their answer.

    python bench/consolidation_ranks.py [DATA] [--limit N] [--keep DIR] [--wait S]

The same path as ../shared/bench/locomo_consolidation.py (every turn saved through MCP with
``save_memory(content)``, every question asked with ``search_memory`` and ``search_unified``,
one live ``run_consolidation``, every question again; a merged memory credited with its
sources), but it keeps each question's ranking with what the server said of every hit, and
prints the questions whose first answering turn moved, with what now ranks above it: a merged
memory, an archived memory, a vault note, or a memory whose entities the run changed.
``--keep DIR`` keeps each conversation's store as it was before the run and after it
(``DIR/<conversation>/before|after``) and the rankings (``DIR/rankings.jsonl``) for offline
ablations. ``--wait`` is the pause after the saves (the shared bench's 2 s by default; the
background embedder may not have caught up by then, so "before" is partly ranked by BM25).
No LoCoMo text is written here except into DIR, which the caller chooses (keep it outside the
repository).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared" / "bench"
TOOLS = ("search_memory", "search_unified")


def _shared() -> tuple[Any, Any]:
    sys.path.insert(0, str(SHARED))
    import locomo_consolidation as lc  # type: ignore[import-not-found]
    import locomo_retrieval as lr  # type: ignore[import-not-found]

    return lc, lr


def _entities(store: Path) -> dict[str, tuple[str, ...]]:
    """memory id -> entities, the last record of each memory in the store's JSONL."""
    out: dict[str, tuple[str, ...]] = {}
    for line in (store / "memories.jsonl").read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and isinstance(rec.get("id"), str):
            out[rec["id"]] = tuple(rec.get("entities") or ())
    return out


async def _conversation(
    conv: dict[str, Any], server: str, env: dict[str, str], wait: float, keep: Path | None
) -> list[dict[str, Any]]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    lc, _ = _shared()
    store = Path(env["CORTEXGRAPH_STORAGE_PATH"])
    rows: list[dict[str, Any]] = []
    params = StdioServerParameters(command=server, args=[], env=env)
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        id2dia: dict[str, str] = {}
        for m in conv["memories"]:
            res = await s.call_tool("save_memory", {"content": m["text"]})
            id2dia[lc.ids_in(lc.payload(res))[0]] = m["id"]

        async def ask(when: str, merged: dict[str, list[str]]) -> None:
            for q in conv["queries"]:
                for tool in TOOLS:
                    args: dict[str, Any] = {"query": q["question"]}
                    args.update({"top_k": 10} if tool == "search_memory" else {"limit": 10})
                    if tool == "search_unified":
                        args["verbose"] = True
                    got = lc.payload(await s.call_tool(tool, args))
                    hits = []
                    for h in got.get("results", []) if isinstance(got, dict) else []:
                        mid = h.get("id") or h.get("memory_id")
                        hits.append(
                            {
                                "id": mid,
                                "dia": lc.expand(mid, merged, id2dia) if mid else [],
                                "merged": mid in merged,
                                "archived": bool(h.get("archived")),
                                "note": h.get("note_path"),
                                "score": h.get("score"),
                            }
                        )
                    rows.append({"qid": q["qid"], "tool": tool, "when": when, "hits": hits})

        await asyncio.sleep(wait)
        await ask("before", {})
        if keep is not None:
            shutil.copytree(store, keep / conv["conversation"] / "before")
        await s.call_tool("run_consolidation", {"dry_run": False})
        merged = lc.merged_sources(store)
        await ask("after", merged)
    if keep is not None:
        shutil.copytree(store, keep / conv["conversation"] / "after")
    return rows


def first_gold(hits: list[dict[str, Any]], gold: set[str]) -> int | None:
    """Rank (1-based, over the scorer's deduplicated turn list) of the first answering turn."""
    seen: list[str] = []
    for h in hits:
        for d in h["dia"]:
            if d not in seen:
                seen.append(d)
                if d in gold:
                    return len(seen)
    return None


def _why(hit: dict[str, Any], entities_changed: set[str]) -> str:
    if hit["note"] and not hit["id"]:
        return "vault note"
    if hit["merged"]:
        return "merged memory"
    if hit["archived"]:
        return "archived memory"
    if hit["id"] in entities_changed:
        return "entities added by the run"
    return "other"


def report(rows: list[dict[str, Any]], gold: dict[str, set[str]], changed: set[str]) -> None:
    by = {(r["qid"], r["tool"], r["when"]): r["hits"] for r in rows}
    for tool in TOOLS:
        worse: list[tuple[str, int | None, int | None]] = []
        better = 0
        causes: Counter[str] = Counter()
        for qid, g in gold.items():
            if (qid, tool, "before") not in by:
                continue
            b = first_gold(by[qid, tool, "before"], g)
            a = first_gold(by[qid, tool, "after"], g)
            rb, ra = 1 / b if b else 0.0, 1 / a if a else 0.0
            if ra < rb:
                worse.append((qid, b, a))
                before_ids = {h["id"] for h in by[qid, tool, "before"][: b or 10]}
                for h in by[qid, tool, "after"][: (a or 11) - 1]:
                    if h["id"] not in before_ids:
                        causes[_why(h, changed)] += 1
            elif ra > rb:
                better += 1
        print(f"{tool}: {len(worse)} questions lost rank, {better} gained")
        for qid, b, a in worse:
            print(f"  {qid}: first answer at {b} -> {a}")
        print(f"  new hits above the answer: {dict(causes)}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "data", nargs="?", default=str(SHARED.parent / "data/locomo_dev/locomo_dev.json")
    )
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--keep", type=Path, default=None)
    ap.add_argument("--wait", type=float, default=2.0)
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args(argv)
    _, lr = _shared()
    convs, _ = lr.load_locomo(args.data, [1, 2, 3, 4])
    if args.limit:
        convs = convs[: args.limit]
    gold = {q["qid"]: set(q["gold"]) for c in convs for q in c["questions"]}
    server = shutil.which("cortexgraph-mcp") or str(Path(sys.executable).parent / "cortexgraph-mcp")
    rows: list[dict[str, Any]] = []
    changed: set[str] = set()
    with tempfile.TemporaryDirectory() as d:
        for c in convs:
            task = {
                "conversation": c["id"],
                "memories": c["memories"],
                "queries": [{"qid": q["qid"], "question": q["question"]} for q in c["questions"]],
            }
            home = Path(d) / c["id"]
            home.mkdir()
            (home / "vault").mkdir()  # a named vault must exist
            env = dict(os.environ, **dict(kv.split("=", 1) for kv in args.env))
            env.update(
                HOME=str(home),
                CORTEXGRAPH_STORAGE_PATH=str(home / "store"),
                LTM_VAULT_PATH=str(home / "vault"),
            )
            keep = args.keep
            if keep is not None:
                keep.mkdir(parents=True, exist_ok=True)
            rows += asyncio.run(_conversation(task, server, env, args.wait, keep))
            if keep is not None:
                b = _entities(keep / c["id"] / "before")
                a = _entities(keep / c["id"] / "after")
                changed |= {i for i, e in a.items() if i in b and set(e) != set(b[i])}
            print(f"{c['id']}: done", file=sys.stderr)
    if args.keep is not None:
        with open(args.keep / "rankings.jsonl", "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    report(rows, gold, changed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
