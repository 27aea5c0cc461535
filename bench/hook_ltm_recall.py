"""What recalling promoted memories costs the hooks without a server: CPU seconds per process.

    OMP_NUM_THREADS=1 python bench/hook_ltm_recall.py [--memories 10000] [--runs 15] [--base main]

The same stores are read by two source trees, each laid out as the installed package
(``pyproject.toml``'s package-dir) in a temporary folder: ``--base`` (a git ref, by default
main) and this working tree. Each scenario is a fresh ``python -m cortexgraph.hooks EVENT``
process with JSON on stdin, as Claude Code runs it; the two trees alternate run by run, so
load drifts hit both alike. CPU is the child's user+sys time (os.wait4), which load distorts
less than wall time. Stores: hooks_bench's 10k memories with the authentication decision
active, and the same with 5% of the memories promoted (notes written to the vault, the
decision among them), so that the promoted decision's note is read before the prompt.

Then the server's side, in this process: what one recall endpoint request costs before (a
``store.search`` of active memories) and after (the vault index's refresh, then
``search_unified``), BM25 only, on the promoted store with 1,500 notes a person wrote added.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _machine import machine_line  # noqa: E402
from hooks_bench import RECALL, build_store  # noqa: E402

PROMOTED_SHARE = 0.05


def lay_out(tree: Path, dest: Path) -> Path:
    """``tree``'s packages under ``dest/cortexgraph`` as an install places them; returns dest."""
    mapping = tomllib.loads((tree / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-dir"
    ]
    for name, folder in sorted(mapping.items(), key=lambda kv: kv[0].count(".")):
        target = dest.joinpath(*name.split("."))
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
        shutil.copytree(tree / folder, target, dirs_exist_ok=True, ignore=ignore)
    return dest


def export(ref: str, dest: Path) -> Path:
    dest.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def promote_some(store: Path, vault: Path, now: float) -> int:
    """Mark PROMOTED_SHARE of the memories (the decision among them) promoted, notes written."""
    from cortexgraph.storage.models import Memory
    from cortexgraph.vault_sync.note_format import note_text, render_note
    from cortexgraph.vault_sync.note_names import note_name

    file = store / "memories.jsonl"
    rows = [json.loads(line) for line in file.read_text().splitlines()]
    rng = random.Random(11)
    chosen = {i for i in range(len(rows)) if rng.random() < PROMOTED_SHARE}
    chosen |= {i for i, r in enumerate(rows) if "OAuth2 with PKCE" in r["content"]}
    folder = vault / "cortexgraph"
    folder.mkdir(parents=True)
    for i in chosen:
        memory = Memory.from_json(rows[i])
        name = note_name(memory)
        rel = f"cortexgraph/{name.stem}-{i}.md"
        rendered = render_note(memory, name, now=now)
        (vault / rel).write_text(note_text(rendered.metadata, rendered.body), "utf-8")
        rows[i].update(status="promoted", promoted_at=int(now), promoted_to=rel)
    file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return len(chosen)


def run_hook(argv: list[str], payload: dict, env: dict[str, str]) -> tuple[float, float, str]:
    """(CPU seconds, wall ms, stdout) of one hook process."""
    t = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tempfile.gettempdir(),
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write(json.dumps(payload).encode())
    proc.stdin.close()
    out, err = proc.stdout.read().decode(), proc.stderr.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = (time.perf_counter() - t) * 1000
    if proc.returncode != 0:
        raise SystemExit(f"{argv} failed: {err}")
    return usage.ru_utime + usage.ru_stime, wall, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--memories", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--base", default="main", help="git ref to compare with")
    args = ap.parse_args()
    now = time.time()
    work = Path(tempfile.mkdtemp(prefix="cg-ltm-bench-"))
    trees = {
        args.base: lay_out(export(args.base, work / "base-src"), work / "base"),
        "this tree": lay_out(ROOT, work / "this"),
    }
    stores: dict[str, Path] = {}
    for label in ("all active", "5% promoted"):
        folder = work / label.replace(" ", "-").replace("%", "pct")
        build_store(folder / "store", args.memories, now)
        if label != "all active":
            promote_some(folder / "store", folder / "vault", now)
        stores[label] = folder / "store"
    project = work / "ledgerly"
    project.mkdir()
    base = {"session_id": "bench", "transcript_path": "", "cwd": str(project)}
    scenarios = [
        ("UserPromptSubmit recall", "user-prompt-submit", {"prompt": RECALL}),
        ("SessionStart startup", "session-start", {"source": "startup"}),
    ]
    cells: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    shown: dict[tuple[str, str], str] = {}
    for _ in range(args.runs):
        for scenario, event, payload in scenarios:
            for label, store in stores.items():
                for tree_name, tree in trees.items():
                    env = {
                        k: v
                        for k, v in os.environ.items()
                        if not k.startswith(("CORTEXGRAPH_", "CLAUDE_", "LTM_"))
                    }
                    env.update(
                        CORTEXGRAPH_STORAGE_PATH=str(store),
                        CORTEXGRAPH_HOOK_STATE_DIR=str(work / "state"),
                        PYTHONPATH=str(tree),
                        OMP_NUM_THREADS="1",
                    )
                    argv = [sys.executable, "-m", "cortexgraph.hooks", event]
                    cpu, wall, out = run_hook(argv, {**base, **payload}, env)
                    cells.setdefault((scenario, label, tree_name), []).append((cpu, wall))
                    if scenario.startswith("UserPrompt"):
                        shown[(label, tree_name)] = out
    table = Table(title=f"Hooks without a server, {args.memories:,} memories, {args.runs} runs")
    for col in ("scenario", "store", "tree", "CPU s median", "CPU s mean", "wall ms median"):
        table.add_column(col)
    for (scenario, label, tree_name), values in cells.items():
        cpus = [c for c, _ in values]
        table.add_row(
            scenario,
            label,
            tree_name,
            f"{statistics.median(cpus):.3f}",
            f"{statistics.mean(cpus):.3f}",
            f"{statistics.median([w for _, w in values]):.0f}",
        )
    console = Console(width=130)
    console.print(table)
    for (label, tree_name), out in shown.items():
        found = "OAuth2 with PKCE" in out
        ltm = "LTM note" in out
        console.print(f"recall, {label}, {tree_name}: decision shown {found}, LTM label {ltm}")
    server_side(console, stores["5% promoted"], stores["5% promoted"].parent / "vault")
    console.print(machine_line())
    shutil.rmtree(work, ignore_errors=True)


def server_side(console: Console, store_path: Path, vault: Path, own_notes: int = 1500) -> None:
    import resource

    from cortexgraph.storage import open_store
    from cortexgraph.storage.models import MemoryStatus
    from cortexgraph.vault_sync.ltm_index import LTMIndex
    from cortexgraph.vault_sync.unified_search import search_unified

    for i in range(own_notes):
        (vault / f"own-{i}.md").write_text(f"# Own {i}\n\nNote {i} on the deploy pipeline.\n")
    store = open_store(store_path)
    index = LTMIndex.open(vault)
    queries = [RECALL, "deploy pipeline tuesday", "postgres money cents", "team lunch", "kafka"]

    def cpu_ms() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return (r.ru_utime + r.ru_stime) * 1000

    def before(q: str) -> None:
        store.search(q, top_k=5, status=MemoryStatus.ACTIVE, use_embeddings=False)

    def after(q: str) -> None:
        index.refresh()
        search_unified(store, index, q, limit=5, archive_weight=0.0, use_embeddings=False)

    for name, request in (("store.search, active (before)", before), ("search_unified", after)):
        request(queries[0])
        times = []
        for _ in range(6):
            for q in queries:
                t = cpu_ms()
                request(q)
                times.append(cpu_ms() - t)
        console.print(
            f"endpoint request, {name}: CPU ms median {statistics.median(times):.1f}, "
            f"max {max(times):.1f} ({len(index.notes):,} notes)"
        )


if __name__ == "__main__":
    main()
