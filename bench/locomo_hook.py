"""The Claude Code hook's recall on LoCoMo dev, through the hook process, beside search_memory.

    python bench/locomo_hook.py [--limit-conversations N] [--jobs 2]

For each conversation: a fresh store, ``cortexgraph-mcp`` over stdio with default settings, every
turn saved with ``save_memory(text)`` (as bench/_locomo_mcp.py). Each question is then asked
three ways, all scored at 5 (the hook injects at most 5 memories):

1. ``search_memory(question, top_k=5)`` through the MCP client: the reference;
2. the UserPromptSubmit hook as Claude Code runs it, a ``cortexgraph-hook UserPromptSubmit``
   process with the prompt "Do you remember: <question>" on stdin, while the server runs
   (the hook asks the server's search over its recall endpoint, cortexgraph.recall_endpoint);
3. the same hook process after the server has stopped (its own keyword search over the JSONL).

The memory ids are read back from the hook's injected block. The gap printed is R@5 against
row 1. The data is read from shared/ and never copied into the repository.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _locomo_mcp import server_command  # noqa: E402
from locomo import DATA, load_scorer  # noqa: E402

from cortexgraph.hooks.recall import NO_ANSWER  # noqa: E402

ID_RE = re.compile(r"\bid ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b")
FELL_BACK: list[str] = []  # questions where the server did not answer the hook in time
ROWS = {
    "mcp": "search_memory(question, top_k=5) over MCP (reference)",
    "hook_server": "UserPromptSubmit hook process, server running (asks its search)",
    "hook_alone": "UserPromptSubmit hook process, no server (keywords over the JSONL)",
}


def hook_command() -> list[str]:
    return [str(Path(sys.executable).parent / "cortexgraph-hook"), "UserPromptSubmit"]


def run_hook(question: str, env: dict[str, str], cwd: Path) -> tuple[list[str], float]:
    """The memory ids the hook injects for a recall prompt about ``question``, and its time."""
    # "Do you remember when did ..." reads as nostalgia to the intent patterns ("remember
    # when we ..."), so the question is set apart: what is measured is the ranking.
    prompt = f"Do you remember: {question}"
    payload = {
        "hook_event_name": "UserPromptSubmit",
        "session_id": "locomo",
        "cwd": str(cwd),
        "prompt": prompt,
    }
    t = time.perf_counter()
    out = subprocess.run(
        hook_command(), input=json.dumps(payload), capture_output=True, text=True, env=env
    )
    took = time.perf_counter() - t
    if out.returncode != 0:
        raise SystemExit(f"hook failed: {out.stderr[:300]}")
    if NO_ANSWER in out.stderr:
        FELL_BACK.append(question)
    if not out.stdout.strip():
        return [], took
    context = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    return ID_RE.findall(context), took


def hooks_for(
    questions: list[dict[str, Any]], env: dict[str, str], cwd: Path, jobs: int
) -> list[tuple[list[str], float]]:
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(lambda q: run_hook(q["question"], env, cwd), questions))


async def _conversation(
    conv: dict[str, Any], env: dict[str, str], home: Path, jobs: int
) -> dict[str, list[tuple[list[str], float]]]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=server_command(), args=[], env=env)
    found: dict[str, list[tuple[list[str], float]]] = {k: [] for k in ROWS}
    dia: dict[str, str] = {}
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        for m in conv["memories"]:
            res = await s.call_tool("save_memory", {"content": m["text"]})
            dia[json.loads(res.content[0].text)["memory_id"]] = m["id"]
        for q in conv["questions"]:
            t = time.perf_counter()
            res = await s.call_tool("search_memory", {"query": q["question"], "top_k": 5})
            took = time.perf_counter() - t
            ids = [r["id"] for r in json.loads(res.content[0].text)["results"]]
            found["mcp"].append((ids, took))
        # The hook processes run while the server is up (it answers their searches).
        found["hook_server"] = await asyncio.to_thread(
            hooks_for, conv["questions"], env, home, jobs
        )
    found["hook_alone"] = hooks_for(conv["questions"], env, home, jobs)
    return {k: [([dia[i] for i in ids if i in dia], t) for ids, t in v] for k, v in found.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="?", default=str(DATA))
    ap.add_argument("--limit-conversations", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1, help="hook processes at once")
    args = ap.parse_args(argv)
    lr = load_scorer()
    convs, _ = lr.load_locomo(args.data, [1, 2, 3, 4])
    if args.limit_conversations:
        convs = convs[: args.limit_conversations]
    n_q = sum(len(c["questions"]) for c in convs)
    console = Console()
    console.print(f"# {args.data}: {len(convs)} conversations, {n_q} questions")
    rows: dict[str, list[dict[str, Any]]] = {k: [] for k in ROWS}
    lat: dict[str, list[float]] = {k: [] for k in ROWS}
    with tempfile.TemporaryDirectory() as d, Progress(console=console) as progress:
        task = progress.add_task("conversations", total=len(convs))
        for conv in convs:
            home = Path(d) / conv["id"]
            home.mkdir()
            (home / "vault").mkdir()  # a named vault must exist
            env = {
                k: v for k, v in os.environ.items() if not k.startswith(("CORTEXGRAPH_", "LTM_"))
            }
            env.update(
                HOME=str(home),
                CORTEXGRAPH_STORAGE_PATH=str(home / "store"),
                LTM_VAULT_PATH=str(home / "vault"),
                CORTEXGRAPH_LOG_LEVEL="WARNING",
            )
            found = asyncio.run(_conversation(conv, env, home, args.jobs))
            for key, answers in found.items():
                for q, (ranked, took) in zip(conv["questions"], answers, strict=True):
                    rows[key].append({**q, "scores": lr.score_one(ranked, q["gold"], [5])})
                    lat[key].append(took)
            progress.advance(task)
    tables = {k: lr.aggregate(v, ["R@5", "Any@5", "MRR"])["overall"] for k, v in rows.items()}
    ref = tables["mcp"]["R@5"]
    out = Table(
        title=f"The hook's recall vs search_memory: LoCoMo dev, {n_q} questions, defaults, "
        f"scored at 5 ({args.jobs} hook process(es) at once)"
    )
    for col in ("path", "R@5", "gap to search_memory", "MRR@5", "p50 ms", "p95 ms"):
        out.add_column(col, justify="left" if col == "path" else "right")
    for key, label in ROWS.items():
        xs = sorted(lat[key])
        out.add_row(
            label,
            f"{tables[key]['R@5']:.3f}",
            "-" if key == "mcp" else f"{tables[key]['R@5'] - ref:+.3f}",
            f"{tables[key]['MRR']:.3f}",
            f"{1000 * statistics.median(xs):.0f}",
            f"{1000 * xs[min(len(xs) - 1, int(0.95 * len(xs)))]:.0f}",
        )
    console.print(out)
    console.print(
        f"The running server did not answer the hook within its 1 s for {len(FELL_BACK)} of "
        f"{n_q} questions (those fell back to keywords, counted in the server row)."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
