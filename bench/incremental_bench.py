"""Incremental consolidation (issue 32): what a run costs after N new saves, through the real CLI.

For each store size: a synthetic store (bench/_pipeline_data.synthetic: near-duplicate groups
among unrelated facts, ages spread over 30 days up to now, old memories' entities already read
as earlier runs would have), then ``cortexgraph-consolidate --json`` runs in a row, each a new
process, defaults otherwise (embeddings, the real vault and beads):

    full (cold)         --full, embeds the whole store
    full                --full again (embeddings cached): the baseline
    +100 saves          incremental, after 100 new memories
    +1000 saves         incremental, after 1,000 new memories
    no change           incremental, nothing saved since
    +1 save             incremental, after one new memory: what a run costs whatever its size
                        (the store's open, Prefect's five tasks, the beads commit, the state)

The "+100 / +1000 saves" rows save the way a user's assistant does (``--saves mcp``, the
default): ``save_memory`` calls (content, tags, entities) through the official ``mcp`` client
over stdio to ``cortexgraph-mcp`` with default settings, one call after another as an assistant
makes them. One server stays up for all of a store size's runs (Claude keeps it running); each
run starts once the server's background work is done (``cortexgraph://stats``:
``embeddings_pending`` 0, every saved memory's vector in the embedding cache on disk, and
``entities_pending`` false, their entities read by the server's child process;
``snapshot_pending`` false, the store's snapshot refreshed by the server), and after each
run the next stage waits for that again: a run leaves the texts its merges made to the server,
which embeds them in the background once the run's writes have settled
(mcp_server/store_pickup.py), as it would have in the hour between two hourly runs. The row's
last column says how long that took. Then the disk is given what that work wrote (``os.sync``,
``written_back``), as the hour between two runs gives it; ``--dirty`` starts the run at once.
``--saves store`` calls ``store.save`` in this process instead, with no server (no vectors
made before the run, and a run's merged texts embedded by the next run). Each row says which.

The table prints the agents' time (``total_seconds`` in --json), the wall time and the CPU
seconds (user + sys) of the process, and the incremental run's scope. One Prefect server serves
every run (PREFECT_API_URL), as a deployment has it. The package's modules are byte-compiled
first (``compile_package``), as an installed copy has them.

    .venv/bin/python bench/incremental_bench.py --sizes 10000
    .venv/bin/python bench/incremental_bench.py --sizes 100000 --work /tmp/cg-incr --embed-in-setup

``--work DIR`` keeps each size's built store (and its embedding cache) in DIR and reuses it
(the runs work on a copy). ``--embed-in-setup`` fills the embedding cache in the setup, in
batches through the same model and cache the CLI uses (``default_cache``), instead of in the
first full run: the table then has an "embed (setup)" row with its seconds, and no "full
(cold)" row. ``--hashed-vectors`` fills it instead with hashed bag-of-words unit vectors under
the model's name (seconds, not the tens of CPU-minutes MiniLM needs for 100k texts): the runs
then find other neighbours among the old memories than MiniLM would (the new memories are
embedded by MiniLM in the runs, as always), so only the timings of the steps around the
vectors stand for the real thing; the table says "hashed" in the embed row.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _machine import machine_line
from _pipeline_data import NOW, synthetic

from cortexgraph.storage import open_store
from cortexgraph.storage.models import MemoryMeta

CLI = str(Path(sys.executable).with_name("cortexgraph-consolidate"))
SERVER = str(Path(sys.executable).with_name("cortexgraph-mcp"))
READ = {"entities_found": "spacy+rules"}  # what the earlier runs' entity step left


def build(store_dir: Path, n: int, extra: int) -> list:
    """The store of ``n`` memories aged 0-30 days from now; returns ``extra`` more to save."""
    memories, _ = synthetic(n + extra)
    shift = int(time.time()) - NOW - 3600  # the generator's clock -> an hour ago
    aged = [
        replace(
            m,
            created_at=m.created_at + shift,
            last_used=m.last_used + shift,
            meta=MemoryMeta(tags=m.meta.tags, extra=READ),
        )
        for m in memories[:n]
    ]
    store = open_store(store_dir)
    store.put_many(aged)
    return memories[n:]


def save_new(store_dir: Path, memories: list) -> None:
    store = open_store(store_dir)
    for m in memories:
        store.save(m.content, tags=m.meta.tags, entities=m.entities)


def _payload(result: Any) -> dict:
    if getattr(result, "isError", False) or getattr(result, "is_error", False):
        raise SystemExit(f"save_memory failed: {result.content}")
    structured = getattr(result, "structuredContent", None)
    if structured is None:
        structured = getattr(result, "structured_content", None)
    if structured is not None:
        return structured.get("result", structured) if isinstance(structured, dict) else {}
    return dict(json.loads(result.content[0].text))


async def _background_done(session: Any) -> float:
    """Seconds until the server's background work is done: vectors saved to the cache by
    batch (saves, and what other processes wrote), entities read by a child, the store's
    snapshot refreshed once those writes settled (mcp_server/snapshot_upkeep.py)."""
    import anyio

    t0 = time.perf_counter()
    while True:
        stats = json.loads((await session.read_resource("cortexgraph://stats")).contents[0].text)
        pending = ("embeddings_pending", "entities_pending", "snapshot_pending")
        if not any(stats.get(name) for name in pending):
            return time.perf_counter() - t0
        await anyio.sleep(0.2)


def written_back(writeback: bool) -> None:
    """What the saves and the server's background work left unsynced, written to disk before
    a run (``os.sync``), as the kernel has it long before the next hourly run (it writes dirty
    pages back within vm.dirty_expire_centisecs, 30 s by default). Without this, the run's
    first fsync also waits for those tens of MB (ext4 commits them with its journal): a cost
    of the bench's timing, not of the run. ``--dirty`` leaves them, to show that case."""
    if writeback:
        os.sync()


async def _runs_through_mcp(
    store_dir: Path,
    vault: Path,
    env: dict,
    steps: list,
    record: Callable[..., None],
    writeback: bool = True,
) -> None:
    """Each step's memories saved through one stdio MCP session with cortexgraph-mcp (default
    settings) that stays up for every step; the step's run once the server's background work
    is done, then that work again (the run's merged texts) before the next step. ``record``
    gets each step's name, its run's figures and how the saves and the pickup went."""
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    vault.mkdir(parents=True, exist_ok=True)  # a named vault must exist
    server_env = {
        **env,
        "CORTEXGRAPH_STORAGE_PATH": str(store_dir),
        "LTM_VAULT_PATH": str(vault),
        "CORTEXGRAPH_LOG_LEVEL": "WARNING",
    }
    params = StdioServerParameters(command=SERVER, args=[], env=server_env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await _background_done(session)
        for name, memories, flags in steps:
            how = ""
            if memories:
                t0 = time.perf_counter()
                for m in memories:
                    args = {
                        "content": m.content,
                        "tags": list(m.meta.tags),
                        "entities": list(m.entities),
                    }
                    _payload(await session.call_tool("save_memory", args))
                saving = time.perf_counter() - t0
                idle = await _background_done(session)
                each = 1000 * saving / len(memories)
                how = f"mcp: saves {saving:.1f} s ({each:.0f} ms each), background done +{idle:.1f} s; "

            def run(flags: list[str] = flags, name: str = name) -> tuple[dict, float, float]:
                written_back(writeback)
                stop_before(name, store_dir, vault)
                return consolidate(store_dir, vault, env, *flags)

            data, wall, cpu = await anyio.to_thread.run_sync(run)
            picked = await _background_done(session)
            record(name, data, wall, cpu, f"{how}run's writes picked up +{picked:.1f} s")


def stop_before(name: str, store_dir: Path, vault: Path) -> None:
    """``BENCH_STOP_BEFORE=<run name>``: end the bench with that run's input on disk (its
    folders printed), for trials of one run on a copy of the filesystem it is on (run state,
    caches and notes are keyed by inode, so a copied folder is another store to them)."""
    if os.environ.get("BENCH_STOP_BEFORE") == name:
        print(f"stopped before {name!r}: --storage-path {store_dir} --vault {vault}", flush=True)
        os._exit(3)


def consolidate(store_dir: Path, vault: Path, env: dict, *flags: str) -> tuple[dict, float, float]:
    """The run's --json, its wall seconds and its process's CPU seconds (user + sys: the
    steadier figure on a shared machine, imports and Prefect's client included)."""
    args = [CLI, "--storage-path", str(store_dir), "--vault", str(vault), "--json", *flags]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1]), wall, cpu


def scope_of(data: dict) -> str:
    inc = data.get("incremental")
    if inc is None:
        return "full"
    return f"{inc['changed']} changed, {inc['crossing']} crossing"


def embed_all(store_dir: Path) -> float:
    """The store's active texts embedded into its cache, as the flow's warm_embeddings does
    (sorted, in batches of 1024); returns the seconds it took."""
    from cortexgraph.storage.embeddings import default_cache
    from cortexgraph.storage.models import MemoryStatus

    cache = default_cache(store_dir, threads=os.cpu_count() or 1)
    if cache is None:
        raise SystemExit("no embedding model installed")
    texts = sorted({m.content for m in open_store(store_dir).list(status=MemoryStatus.ACTIVE)})
    t0 = time.perf_counter()
    missing = cache.missing(texts)
    for i in range(0, len(missing), 1024):
        cache.embed(missing[i : i + 1024])
    cache.save()
    return time.perf_counter() - t0


class HashedVectors:
    """Bag-of-words vectors hashed into the model's width, unit length: texts sharing words
    are near, as paraphrases are for MiniLM. Named as the model, so the CLI's cache serves them."""

    def __init__(self, name: str, width: int = 384) -> None:
        self.name, self.width = name, width

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.width), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                h = zlib.crc32(word.strip(".,!?;:").encode())
                out[row, h % self.width] += 1.0 if h & 0x10000 else -1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)


def hash_all(store_dir: Path) -> float:
    """``embed_all`` with ``HashedVectors`` in the model's place."""
    from cortexgraph.storage.embedding_cache import EmbeddingCache
    from cortexgraph.storage.embeddings import default_embedder
    from cortexgraph.storage.models import MemoryStatus

    model = default_embedder()
    if model is None:
        raise SystemExit("no embedding model installed")
    cache = EmbeddingCache(HashedVectors(model.name), store_dir)
    texts = sorted({m.content for m in open_store(store_dir).list(status=MemoryStatus.ACTIVE)})
    t0 = time.perf_counter()
    cache.embed(cache.missing(texts))
    cache.save()
    return time.perf_counter() - t0


def prepared(n: int, work: Path, embed: str) -> tuple[Path, list, float | None]:
    """The built store of ``n`` (in ``work``, reused when there), the memories to save later,
    and the setup's embedding seconds (None when the first full run embeds)."""
    base = work / f"store-{n}-{embed}"
    done = base / "built.json"
    if done.exists():
        meta = json.loads(done.read_text())
    else:
        shutil.rmtree(base, ignore_errors=True)
        build(base / "store", n, 1100)  # the same generator as the saves below
        fill = {"minilm": embed_all, "hashed": hash_all}.get(embed)
        meta = {"embed_seconds": fill(base / "store") if fill else None}
        done.write_text(json.dumps(meta))
    memories, _ = synthetic(n + 1100)
    return base / "store", memories[n:], meta["embed_seconds"]


def bench(
    n: int, env: dict, rows: list[tuple], work: Path, embed: str, via: str, writeback: bool = True
) -> None:
    built, new, embed_seconds = prepared(n, work, embed)
    with tempfile.TemporaryDirectory(prefix="cg-incr-") as tmp:
        store_dir, vault = Path(tmp) / "store", Path(tmp) / "vault"
        vault.mkdir()
        shutil.copytree(built, store_dir)
        if embed_seconds is not None:
            what = "embed (setup)" if embed == "minilm" else "hashed vectors (setup)"
            rows.append((n, what, f"{embed_seconds:.2f}", "", "", "", "", "", "", "all", ""))
            print(" | ".join(str(c) for c in rows[-1]), flush=True)
        steps = [
            *([] if embed_seconds is not None else [("full (cold)", (), ["--full"])]),
            ("full", (), ["--full"]),
            ("+100 saves", new[:100], []),
            ("+1000 saves", new[100:1100], []),
            ("no change", (), []),
            # Last, so the rows above keep their inputs. Another seed of the same generator:
            # a new fact, not one of the memories saved above.
            ("+1 save", synthetic(50, seed=99)[0][:1], []),
        ]
        figures: dict[str, float] = {}

        def record(name: str, data: dict, wall: float, cpu: float, how: str) -> None:
            agents = data["total_seconds"]
            own = sum(data["seconds"].values())  # the five agents alone, no setup
            if name in ("full (cold)", "full"):
                figures[name] = agents
            if name == "full":
                figures["cpu"] = cpu
            base, cold = figures.get("full"), figures.get("full (cold)")
            base_cpu = figures.get("cpu")
            ratio = f"{agents / base:.3f}" if base and name != "full" else ""
            cpu_ratio = f"{cpu / base_cpu:.3f}" if base_cpu and name != "full" else ""
            to_cold = f"{agents / cold:.3f}" if cold and name != "full (cold)" else ""
            row = (
                n,
                name,
                f"{agents:.2f}",
                f"{own:.2f}",
                f"{wall:.1f}",
                f"{cpu:.1f}",
                ratio,
                cpu_ratio,
                to_cold,
                scope_of(data),
                how,
            )
            rows.append(row)
            print(" | ".join(str(c) for c in row), flush=True)
            if os.environ.get("BENCH_VERBOSE"):
                print("   ", {k: round(v, 2) for k, v in data["seconds"].items()}, data["notes"])

        if via == "mcp":
            import anyio

            anyio.run(_runs_through_mcp, store_dir, vault, env, steps, record, writeback)
            return
        for name, saves, flags in steps:
            how = ""
            if saves:
                t0 = time.perf_counter()
                save_new(store_dir, list(saves))
                how = f"store.save: {time.perf_counter() - t0:.1f} s"
            written_back(writeback)
            stop_before(name, store_dir, vault)
            record(name, *consolidate(store_dir, vault, env, *flags), how)


def compile_package() -> int:
    """Byte-compile cortexgraph's modules where they are, as a pip install or any first import
    leaves them. Where PYTHONDONTWRITEBYTECODE is set (this repository's sandbox sets it), an
    editable install has no .pyc files and every CLI process would compile ~200 of our modules
    from source: 0.17-0.26 s of each run that no installed copy pays. Returns the folders."""
    import compileall
    import importlib.util

    folders = set()
    for name in ("cortexgraph", *(f"cortexgraph.{p}" for p in PACKAGE_FOLDERS)):
        spec = importlib.util.find_spec(name)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            folders.add(folder)
    for folder in sorted(folders):
        compileall.compile_dir(folder, quiet=1, maxlevels=1, workers=1)
    return len(folders)


# The package's folders (pyproject's package-dir): each compiled with its direct subfolders.
PACKAGE_FOLDERS = (
    "storage",
    "agents",
    "flows",
    "cli",
    "hooks",
    "vault_sync",
    "mcp_server",
    "activation",
    "retrieval",
    "webui",
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[10_000])
    ap.add_argument("--work", type=Path, help="keep and reuse the built stores here")
    ap.add_argument(
        "--embed-in-setup", action="store_true", help="fill the embedding cache in the setup"
    )
    ap.add_argument(
        "--hashed-vectors",
        action="store_true",
        help="fill it with hashed bag-of-words vectors instead (timings only: see the doc)",
    )
    ap.add_argument(
        "--saves",
        choices=("mcp", "store"),
        default="mcp",
        help="save the new memories through the MCP server over stdio (default) or store.save",
    )
    ap.add_argument(
        "--dirty",
        action="store_true",
        help="run right after the background work, its writes not yet on disk (written_back)",
    )
    args = ap.parse_args()
    compiled = compile_package()
    print(f"byte-compiled {compiled} cortexgraph package folder(s) first (see compile_package)")
    from cortexgraph.flows.local_server import PrefectServerProcess

    server = PrefectServerProcess()
    if not server.wait_ready(120):
        raise SystemExit(f"prefect server did not come up: {server.output_tail()}")
    env = {**os.environ, "PREFECT_API_URL": server.api_url, "OMP_NUM_THREADS": "1"}
    rows: list[tuple] = []
    try:
        with tempfile.TemporaryDirectory(prefix="cg-incr-work-") as tmp:
            for n in args.sizes:
                embed = (
                    "hashed" if args.hashed_vectors else "minilm" if args.embed_in_setup else "run"
                )
                bench(n, env, rows, args.work or Path(tmp), embed, args.saves, not args.dirty)
    finally:
        server.stop()
    print(f"\nmachine: {machine_line()}")
    print(
        "| store | run | total_seconds | five agents s | wall s | process CPU s "
        "| / full | CPU / full | / full (cold) | scope | saved through |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for r in rows:
        print("| " + " | ".join(f"{c:,}" if isinstance(c, int) else str(c) for c in r) + " |")


if __name__ == "__main__":
    main()
