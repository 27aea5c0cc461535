"""A seeded store, vault and issue repo, and `cortexgraph serve --ui` running on it."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from child_env import child_env

ROOT = Path(__file__).resolve().parents[2]
NOW = time.time()


@pytest.fixture
def seeded(tmp_path: Path) -> dict:
    from cortexgraph.storage import open_store
    from cortexgraph.storage.beads import open_tracker
    from cortexgraph.vault_sync import ObsidianNoteSink, promote_memory

    storage, vault = tmp_path / "store", tmp_path / "vault"
    store = open_store(storage)
    a = store.save("Billing invoices are stored in PostgreSQL 16", tags=["billing"], now=NOW)
    b = store.save(
        "The billing service keeps its invoices in PostgreSQL", tags=["billing"], now=NOW
    )
    c = store.save("Sam wants hermetic tests with testcontainers", tags=["testing"], now=NOW)
    d = store.save(
        "We chose PostgreSQL 16 for billing: row-level security", entities=["PostgreSQL"], now=NOW
    )
    store.add_relation(a.id, c.id, "related", now=NOW)
    with ObsidianNoteSink(vault) as sink:
        promote_memory(store, sink, d.id, reason="forced", now=NOW, force=True)
    tracker = open_tracker(storage, "cg")
    issue = tracker.create(
        "Review 2 similar memories (cohesion 0.74)",
        labels=["consolidation:cluster", "action:review"],
        metadata={"memory_ids": [a.id, b.id], "cohesion": 0.74, "cluster_id": "c-test"},
    )
    run = {
        "finished_at": NOW - 60,
        "dry_run": False,
        "agents": ["decay"],
        "total_seconds": 1.5,
        "seconds": {"decay": 1.5},
        "summaries": {"decay": "4 active scanned"},
        "notes": [],
    }
    (storage / "consolidation-runs.jsonl").write_text(json.dumps(run) + "\n")
    ids = (a.id, b.id, c.id, d.id)
    # "now": the seeding time; a test module that did `from conftest import NOW` could get
    # another folder's conftest (both are named conftest), whose NOW is fixed in 2025.
    return {"storage": storage, "vault": vault, "ids": ids, "issue": issue.id, "now": NOW}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def served(seeded: dict):
    """The real CLI's web view on a free port; yields its base URL."""
    port = _free_port()
    env = child_env(
        CORTEXGRAPH_STORAGE_PATH=str(seeded["storage"]),
        LTM_VAULT_PATH=str(seeded["vault"]),
        # the related expansion is off by default; the pages show a link-only hit as weak
        CORTEXGRAPH_SEARCH_RELATED_WEIGHT="0.15",
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cortexgraph.cli.main",
            "serve",
            "--ui",
            "--no-embeddings",
            "--port",
            str(port),
        ],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(url + "/api/runs", timeout=2).read()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"the web view did not start: {proc.stdout.read()[-3000:]}")
            time.sleep(0.3)
    try:
        yield {**seeded, "url": url}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def browser():
    """Debian's chromium through Playwright, launched once per test module."""
    import os
    import shutil

    if not os.path.exists(CHROMIUM) or shutil.which("chromium") is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing in CI: .ci/run installs it with apt-get")
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("playwright is missing in CI: it is a dev extra")
        pytest.skip("playwright is not installed (pip install -e '.[dev]')")
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        try:
            yield launched
        finally:
            launched.close()
