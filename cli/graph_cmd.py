"""`cortexgraph graph`: draw the vault and memory graph to a PNG or a standalone HTML page.

Register with ``app.command("graph")(graph_cmd.graph)`` in cli/main.py.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from cortexgraph.cli.cli_common import check_named_vault, existing_store_path
from cortexgraph.settings import load_settings
from cortexgraph.storage.errors import CortexGraphError
from cortexgraph.user_store import open_user_store

err = Console(stderr=True)
_COLORS = {"note": "#7c5cff", "memory": "#2bb673", "missing": "#bbbbbb"}
_LEGEND = {
    "note": "vault note",
    "memory": "short-term memory",
    "missing": "linked note not in the vault",
}


def graph(
    output: Annotated[
        Path, typer.Option("--output", "-o", help="A .png image or an .html page.")
    ] = Path("cortexgraph-graph.html"),
    vault: Annotated[Path | None, typer.Option("--vault", help="Obsidian vault.")] = None,
    storage_path: Annotated[
        Path | None,
        typer.Option("--storage-path", help="STM directory (default: CORTEXGRAPH_STORAGE_PATH)."),
    ] = None,
    memories: Annotated[bool, typer.Option(help="Include short-term memories.")] = True,
    max_nodes: Annotated[int, typer.Option(min=1, help="Keep the best-connected nodes.")] = 400,
    isolated: Annotated[
        bool, typer.Option(help="Also draw nodes without any link (a ring of dots).")
    ] = False,
) -> None:
    """Draw notes (linked by [[wikilinks]]) and memories (linked by relations)."""
    from cortexgraph.vault_sync.ltm_index import LTMIndex
    from cortexgraph.vault_sync.vault_graph import build_graph, trim_graph

    suffix = output.suffix.lower()
    if suffix not in (".png", ".html", ".htm"):
        raise typer.BadParameter("use a .png or .html file name", param_hint="--output")
    settings = load_settings(ltm_vault_path=vault, storage_path=storage_path)
    try:
        # A mistyped store or vault is refused, not drawn as an empty one.
        existing_store_path(settings, storage_path)
        check_named_vault(settings, vault)
        index = LTMIndex.open(settings.vault_path) if settings.vault_path.is_dir() else None
        mems, rels = [], []
        if memories and settings.storage_path.is_dir():
            store = open_user_store(settings)
            mems, rels = store.list(), store.relations()
    except CortexGraphError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    g = trim_graph(build_graph(index, mems, rels), max_nodes=max_nodes, isolated=isolated)
    if g.number_of_nodes() == 0:
        err.print("nothing to draw: the vault and the store are empty")
        raise typer.Exit(1)
    output.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".png":
        draw_png(g, output)
    else:
        output.write_text(render_html(g), encoding="utf-8")
    err.print(f"{g.number_of_nodes()} nodes, {g.number_of_edges()} links -> {output}")


def _layout(g) -> dict:
    from cortexgraph.vault_sync.vault_graph import layout

    return layout(g)


def draw_png(g, path: Path, labelled: int = 15) -> None:
    import matplotlib

    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt
    import networkx as nx
    from matplotlib.lines import Line2D

    pos = _layout(g)
    fig, ax = plt.subplots(figsize=(14, 10), dpi=100)
    degree = dict(g.degree)
    colors = [_COLORS.get(g.nodes[n].get("kind"), "#999999") for n in g]
    # Size by connectedness, so hubs read as hubs; edges faint so structure shows through.
    sizes = [30 + 12 * min(degree[n], 30) for n in g]
    nx.draw_networkx_edges(g, pos, ax=ax, alpha=0.15, width=0.6, arrows=False)
    nx.draw_networkx_nodes(g, pos, ax=ax, node_color=colors, node_size=sizes, alpha=0.9)
    # Label the best-connected nodes only: all labels of a big graph are unreadable.
    top = sorted(g, key=lambda n: (-degree[n], n))[: len(g) if len(g) <= 80 else labelled]
    labels = {n: str(g.nodes[n].get("label", n))[:32] for n in top}
    nx.draw_networkx_labels(g, pos, labels=labels, ax=ax, font_size=7)
    counts = {k: sum(1 for n in g if g.nodes[n].get("kind") == k) for k in _COLORS}
    handles = [
        Line2D([], [], marker="o", linestyle="", color=c, label=f"{k} ({counts[k]})")
        for k, c in _COLORS.items()
        if counts[k]
    ]
    ax.legend(handles=handles, loc="lower left", frameon=False)
    ax.set_title(
        f"cortexgraph: {len(g)} nodes, {g.number_of_edges()} links "
        f"(labels: the {len(top)} best connected)",
        fontsize=11,
    )
    ax.set_axis_off()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def render_html(g) -> str:
    """A self-contained page (inline SVG, no scripts from the network); hover shows titles."""
    pos = _layout(g)
    xs = [p[0] for p in pos.values()]
    ys = [p[1] for p in pos.values()]
    x0, y0 = min(xs), min(ys)
    span = max(max(xs) - x0, max(ys) - y0) or 1.0

    def at(n: str) -> tuple[float, float]:
        x, y = pos[n]
        return 20 + 960 * (x - x0) / span, 20 + 960 * (y - y0) / span

    lines = []
    for a, b in g.edges:
        (x1, y1), (x2, y2) = at(a), at(b)
        kind = html.escape(str(g.edges[a, b].get("kind", "")))
        lines.append(
            f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}">'
            f"<title>{kind}</title></line>"
        )
    dots = []
    for n in g:
        x, y = at(n)
        data = g.nodes[n]
        label = html.escape(str(data.get("label", n)))
        color = _COLORS.get(data.get("kind"), "#999")
        dots.append(
            f'<g><circle cx="{x:.1f}" cy="{y:.1f}" r="6" fill="{color}"/>'
            f'<text x="{x + 8:.1f}" y="{y + 4:.1f}">{label[:40]}</text>'
            f"<title>{html.escape(n)}</title></g>"
        )
    counts = {k: sum(1 for n in g if g.nodes[n].get("kind") == k) for k in _COLORS}
    legend = " ".join(
        f'<span class="key" data-kind="{k}"><svg width="12" height="12" aria-hidden="true">'
        f'<circle cx="6" cy="6" r="5" fill="{c}"/></svg> {html.escape(_LEGEND[k])} ({counts[k]})'
        "</span>"
        for k, c in _COLORS.items()
    )
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>cortexgraph graph</title>
<style>body{{font-family:sans-serif;margin:0}} line{{stroke:#999;stroke-opacity:.4}}
text{{font-size:9px;fill:#333}} svg.graph{{width:100vw;height:95vh}}
.key{{margin-left:1.2em;white-space:nowrap}}</style></head>
<body><p>&nbsp;{len(g)} nodes, {g.number_of_edges()} links. {legend}</p>
<svg class="graph" viewBox="0 0 1000 1000" xmlns="http://www.w3.org/2000/svg">
{chr(10).join(lines)}
{chr(10).join(dots)}
</svg></body></html>
"""


app = typer.Typer(help="Draw the vault/memory graph.")
app.command("graph")(graph)

__all__ = ["app", "draw_png", "graph", "render_html"]
