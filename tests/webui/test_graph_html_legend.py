"""`cortexgraph graph -o x.html` names its colours in words, not as a JSON object."""

from __future__ import annotations

import re

import networkx as nx

from cortexgraph.cli.graph_cmd import render_html


def test_graph_html_legend_names_each_colour_with_its_count() -> None:
    g = nx.Graph()
    g.add_node("note:a.md", kind="note", label="A <b>note</b>")
    g.add_node("memory:1", kind="memory", label="one")
    g.add_node("memory:2", kind="memory", label="two")
    g.add_edge("note:a.md", "memory:1", kind="promoted")
    g.add_edge("memory:1", "memory:2", kind="related")
    page = render_html(g)
    head = page.split('<svg class="graph"', 1)[0]
    assert "{" not in head.split("<body>", 1)[1]  # no JSON left in the visible text
    assert re.search(r'data-kind="note">.*fill="#7c5cff".*vault note \(1\)', head)
    assert re.search(r'data-kind="memory">.*short-term memory \(2\)', head)
    assert "linked note not in the vault (0)" in head
    assert "<b>note</b>" not in page  # labels stay text
