"""The web view in a real headless browser: Debian's chromium driven by Playwright.

Loads the page, searches, opens a memory's decay curve, approves a review and checks that the
store and the beads issue changed. Saves a screenshot and prints its path.
"""

from __future__ import annotations

import os
import shutil

import pytest

from cortexgraph.storage import open_store
from cortexgraph.storage.beads import open_tracker
from cortexgraph.storage.models import MemoryStatus

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]


def _browser_or_skip():
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
    return sync_playwright


@pytest.mark.slow
def test_search_graph_curve_and_approve_a_review_in_chromium(served, tmp_path):
    sync_playwright = _browser_or_skip()
    a, b, _c, _d = served["ids"]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1100})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(served["url"] + "/")
            page.wait_for_selector("body[data-ready='1']", timeout=60_000)
            # The graph: the same nodes `cortexgraph graph` draws.
            assert "nodes" in page.inner_text("#graph-count")
            # Search: STM and the promoted note.
            page.fill("#q", "postgres billing invoices")
            page.click("#search-form button")
            page.wait_for_selector("#results li", timeout=30_000)
            results = page.inner_text("#results")
            assert "PostgreSQL" in results
            # A memory's decay curve.
            page.click(f"#results li[data-memory='{a}']")
            page.wait_for_selector("#curve-line", timeout=30_000)
            assert len(page.get_attribute("#curve-line", "points").split()) > 10
            # The pending review, approved.
            review = f".review[data-issue='{served['issue']}']"
            page.wait_for_selector(review)
            page.click(f"{review} button.approve")
            page.wait_for_selector("#review-result:has-text('approved')", timeout=30_000)
            assert "Nothing waits for you" in page.inner_text("#reviews")
            assert "4 active scanned" in page.inner_text("#runs")
            shot = tmp_path / "cortexgraph.webui.png"
            page.screenshot(path=str(shot), full_page=True)
            print(f"\nweb view screenshot: {shot}")
            assert shot.stat().st_size > 10_000
            assert errors == []
        finally:
            browser.close()
    store = open_store(served["storage"])
    assert {store.get(a).status, store.get(b).status} == {MemoryStatus.ARCHIVED}
    merged = store.get(store.get(a).meta.extra["merged_into"])
    assert merged.status is MemoryStatus.ACTIVE and "PostgreSQL" in merged.content
    issue = open_tracker(served["storage"], "cg").get(served["issue"])
    assert issue.status == "closed" and "approved by the web view" in issue.close_reason
