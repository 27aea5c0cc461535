"""The web view in a real headless browser: Debian's chromium driven by Playwright.

Loads the page, searches, opens a memory's decay curve, approves a review and checks that the
store and the beads issue changed. Saves a screenshot and prints its path. One browser serves
the whole module (tests/webui/conftest.py's ``browser``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from cortexgraph.storage import open_store
from cortexgraph.storage.beads import open_tracker
from cortexgraph.storage.models import MemoryStatus

# `CORTEXGRAPH_SCREENSHOTS=docs/img pytest tests/webui/test_webui_browser.py` refreshes the
# docs' screenshots; otherwise they go to the test's tmp_path only.
SHOTS = os.environ.get("CORTEXGRAPH_SCREENSHOTS")


def _shot(page, tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"webui-{name}.png"
    page.screenshot(path=str(path))
    if SHOTS:
        from PIL import Image  # matplotlib's dependency: a 64-colour PNG keeps docs small

        target = Path(SHOTS) / path.name
        Image.open(path).convert("RGB").quantize(64).save(target, optimize=True)
    return path


def _no_sideways_scroll(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


@pytest.mark.slow
def test_search_graph_curve_and_approve_a_review_in_chromium(served, browser, tmp_path):
    a, b, _c, _d = served["ids"]
    page = browser.new_page(viewport={"width": 1280, "height": 1100})
    try:
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
        page.click("nav a[data-view='reviews']")
        review = f".review[data-issue='{served['issue']}']"
        page.wait_for_selector(review)
        page.click(f"{review} button.approve")
        page.wait_for_selector("#review-result:has-text('approved')", timeout=30_000)
        assert "Nothing waits for you" in page.inner_text("#reviews")
        page.click("nav a[data-view='overview']")
        page.wait_for_selector("#runs-section:not([hidden])")
        assert "4 active scanned" in page.inner_text("#runs")
        shot = tmp_path / "cortexgraph.webui.png"
        page.screenshot(path=str(shot), full_page=True)
        print(f"\nweb view screenshot: {shot}")
        assert shot.stat().st_size > 10_000
        assert errors == []
    finally:
        page.close()
    store = open_store(served["storage"])
    assert {store.get(a).status, store.get(b).status} == {MemoryStatus.ARCHIVED}
    merged = store.get(store.get(a).meta.extra["merged_into"])
    assert merged.status is MemoryStatus.ACTIVE and "PostgreSQL" in merged.content
    issue = open_tracker(served["storage"], "cg").get(served["issue"])
    assert issue.status == "closed" and "approved by the web view" in issue.close_reason


@pytest.mark.slow
def test_list_filters_paging_history_undo_legend_and_weak_hits_in_chromium(
    served, browser, tmp_path
):
    a, b, c, d = served["ids"]
    page = browser.new_page(viewport={"width": 1200, "height": 860})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(served["url"] + "/")
        page.wait_for_selector("body[data-ready='1']", timeout=60_000)
        legend = page.inner_text("#legend")
        assert re.search(r"vault note \(\d+\)", legend), legend
        assert re.search(r"short-term memory \(\d+\)", legend), legend
        # A hit found only through its link to a match is labelled weak; the match is not.
        page.fill("#q", "hermetic testcontainers")
        page.click("#search-form button")
        page.wait_for_selector("#results-status:has-text('1 strong')", timeout=30_000)
        assert page.locator(f"#results li.weak[data-memory='{a}']").count() == 1
        assert page.locator(f"#results li:not(.weak)[data-memory='{c}']").count() == 1
        _shot(page, tmp_path, "overview")
        # A nonsense query: its hits are labelled weak and the status says so.
        page.fill("#q", "zorblax quindle frumious")
        page.click("#search-form button")
        page.wait_for_selector("#results-status:has-text('no strong match')", timeout=30_000)
        assert page.locator("#results li.weak").count() == page.locator("#results li").count()
        # The memory list: filters and paging, kept in the address.
        page.goto(served["url"] + "/#/memories?limit=2")
        page.wait_for_selector("#page-info:has-text('1–2 of 4')", timeout=30_000)
        page.click("#next-page")
        page.wait_for_selector("#page-info:has-text('3–4 of 4')")
        page.select_option("#filters select[name=status]", "promoted")
        page.wait_for_selector("#page-info:has-text('1–1 of 1')")
        assert page.locator("#memory-list tbody tr").get_attribute("data-memory") == d
        page.select_option("#filters select[name=status]", "")
        page.wait_for_selector("#page-info:has-text('of 4')")
        page.fill("#filters input[name=tag]", "billing")
        page.click("#filters button[type=submit]")
        page.wait_for_selector("#page-info:has-text('of 2')")
        rows = page.locator("#memory-list tbody tr")
        assert {rows.nth(i).get_attribute("data-memory") for i in range(2)} == {a, b}
        page.goto(served["url"] + "/#/memories")
        page.wait_for_selector("#page-info:has-text('1–4 of 4')")
        _shot(page, tmp_path, "memories")
        # A memory's page: history with the undo of its promotion, and its note.
        page.click(f"#memory-list tr[data-memory='{d}'] a")
        page.wait_for_selector("#history tr[data-event='promoted'] button.undo", timeout=30_000)
        assert "promoted to" in page.inner_text("#notes")
        _shot(page, tmp_path, "memory")
        page.click("#history tr[data-event='promoted'] button.undo")
        page.wait_for_selector("#undo-result:has-text('short-term again')", timeout=30_000)
        assert page.locator("#history button.undo").count() == 0
        notes = page.inner_text("#notes")
        assert "promoted to" not in notes and "entity PostgreSQL" in notes
        # Stored text is shown as text in the list and on its page, never run as HTML.
        hostile = '<img src=x onerror="document.body.dataset.pwned=1">'
        bad = open_store(served["storage"]).save(hostile, tags=["x"], now=served["now"])
        page.goto(served["url"] + "/#/memories?tag=x")
        page.wait_for_selector(f"#memory-list tr[data-memory='{bad.id}']", timeout=30_000)
        assert hostile in page.inner_text("#memory-list")
        page.click(f"#memory-list tr[data-memory='{bad.id}'] a")
        # Wait for this memory's id: the pane still holds the memory opened before it.
        page.wait_for_selector(f"#detail code:has-text('{bad.id}')", timeout=30_000)
        assert page.inner_text("#detail .content") == hostile
        assert page.locator("#detail img, #memory-list img").count() == 0
        assert page.evaluate("document.body.dataset.pwned") is None
        assert errors == []
    finally:
        page.close()
    assert open_store(served["storage"]).get(d).status is MemoryStatus.ACTIVE


@pytest.mark.slow
def test_an_older_answer_never_replaces_the_memory_opened_after_it_in_chromium(served, browser):
    """Open memory A, then B before A's answer arrives: the pane shows B once A's comes."""
    a, _b, c, _d = served["ids"]
    page = browser.new_page(viewport={"width": 1200, "height": 860})
    held: list = []
    try:
        page.goto(served["url"] + "/")
        page.wait_for_selector("body[data-ready='1']", timeout=60_000)
        # A's answer is held until the test releases it.
        page.route(f"**/api/memory/{a}", lambda route: held.append(route))
        page.evaluate(f"location.hash = '#/memory/{a}'")
        page.wait_for_selector("#history tr[data-event='saved']", timeout=30_000)
        assert len(held) == 1
        page.evaluate(f"location.hash = '#/memory/{c}'")
        page.wait_for_selector(f"#detail code:has-text('{c}')", timeout=30_000)
        with page.expect_response(lambda r: r.url.endswith(f"/api/memory/{a}")):
            held[0].continue_()
        # The late answer has been read and handled by the time a later task runs.
        page.evaluate("() => new Promise((done) => setTimeout(done, 300))")
        assert c in page.inner_text("#detail code")
        assert a not in page.inner_text("#detail")
    finally:
        page.close()


@pytest.mark.slow
def test_every_page_fits_a_400_px_window_in_chromium(served, browser, tmp_path):
    a = served["ids"][0]
    page = browser.new_page(viewport={"width": 400, "height": 860})
    try:
        page.goto(served["url"] + "/")
        page.wait_for_selector("body[data-ready='1']", timeout=60_000)
        assert _no_sideways_scroll(page)
        _shot(page, tmp_path, "narrow-overview")
        page.goto(served["url"] + "/#/memories")
        page.wait_for_selector("#page-info:has-text('of 4')", timeout=30_000)
        assert _no_sideways_scroll(page)
        _shot(page, tmp_path, "narrow-memories")
        page.goto(served["url"] + f"/#/memory/{a}")
        page.wait_for_selector("#history tr[data-event='saved']", timeout=30_000)
        page.wait_for_selector("#curve-line")
        assert _no_sideways_scroll(page)
        _shot(page, tmp_path, "narrow-memory")
    finally:
        page.close()
