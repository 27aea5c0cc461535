"""1.x's settings and CLI through real processes: the MCP server over stdio, the maintenance
and consolidation CLIs."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import anyio
from compat_helpers import PARAPHRASES, PYTHON, clean_env, payload
from mcp import Client, StdioServerParameters

from cortexgraph.storage import open_store

BIN = Path(PYTHON).parent


def test_maintenance_storage_path_before_the_command_and_the_compaction_hint(tmp_path):
    store = open_store(tmp_path / "stm")
    keep = store.save("kept")
    gone = store.save("deleted later")
    store.touch(keep.id)
    store.delete(gone.id)
    env = clean_env(tmp_path / "elsewhere")
    cli = str(BIN / "cortexgraph-maintenance")
    first = subprocess.run(
        [cli, "--storage-path", str(tmp_path / "stm"), "stats", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert first.returncode == 0, first.stderr
    stats = json.loads(first.stdout)
    assert stats["storage_path"] == str(tmp_path / "stm") and stats["memories"] == 1
    assert (stats["live_records"], stats["lines_on_disk"]) == (1, 4)
    assert (
        stats["compact_would_remove_lines"] == 3
        and "compact would drop 3" in stats["compaction_hint"]
    )
    after = subprocess.run(
        [cli, "compact", "--storage-path", str(tmp_path / "stm"), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    report = json.loads(after.stdout)
    assert report["bytes_before"] - report["bytes_after"] == stats["compact_would_reclaim_bytes"]
    again = json.loads(
        subprocess.run(
            [cli, "stats", "--storage-path", str(tmp_path / "stm"), "--json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        ).stdout
    )
    assert again["compaction_hint"] == "nothing to compact"


def test_consolidation_interval_decides_the_scheduled_cli_run(tmp_path):
    (tmp_path / "stm").mkdir()
    runs = tmp_path / "stm" / "consolidation-runs.jsonl"
    runs.write_text(json.dumps({"finished_at": time.time() - 1.5 * 3600}) + "\n")
    env = clean_env(tmp_path, CORTEXGRAPH_CONSOLIDATION_INTERVAL="7200")
    done = subprocess.run(
        [str(BIN / "cortexgraph-consolidate"), "--scheduled", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["skipped"] and "< 2 h" in out["reason"]


def test_settings_reach_the_tools_in_a_real_server_process(tmp_path):
    store = open_store(tmp_path / "stm")
    ids = [store.save(t).id for t in PARAPHRASES]
    store.save("Deploys go out on Thursday afternoons only")
    store.save("Deploys go out only on Thursday afternoons")
    env = clean_env(
        tmp_path,
        CORTEXGRAPH_AUTO_REINFORCE="false",
        CORTEXGRAPH_CLUSTER_THRESHOLD="0.6",
        CORTEXGRAPH_MIN_CLUSTER_SIZE="3",
        CORTEXGRAPH_ENABLE_EMBEDDINGS="true",
    )
    params = StdioServerParameters(command=PYTHON, args=["-m", "cortexgraph.mcp_server"], env=env)

    async def go():
        async with Client(params) as client:
            observed = payload(
                await client.call_tool("observe_memory_usage", {"memory_ids": ids[:1]})
            )
            clusters = payload(await client.call_tool("cluster_memories", {}))
            return observed, clusters

    observed, clusters = anyio.run(go)
    assert observed["reinforced"] is False
    assert open_store(tmp_path / "stm").get(ids[0]).use_count == 0
    assert clusters["similarity"].startswith("embeddings") and clusters["threshold"] == 0.6
    assert [set(c["memory_ids"]) for c in clusters["clusters"]] == [set(ids)]  # no pair of 2
