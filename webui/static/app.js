// cortexgraph web view: plain JS over the JSON API of webui/app.py (no libraries, no network).
"use strict";

const $ = (sel) => document.querySelector(sel);
const el = (tag, attrs = {}, ...kids) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v; else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const kid of kids) node.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  return node;
};

// A pane shows the answer to its latest request only: two clicks in quick succession send two
// requests whose answers may come back in either order, and the older one must not win.
const latestRequest = {};
function newRequest(pane) {
  const n = (latestRequest[pane] || 0) + 1;
  latestRequest[pane] = n;
  return () => latestRequest[pane] === n;
}

async function api(path, options = {}) {
  const res = await fetch(path, options);
  const data = await res.json();
  if (!res.ok) throw new Error(data.error || data.detail || res.statusText);
  return data;
}

// -- search --------------------------------------------------------------------------------
// A hit's relevance is its text match (0-1) apart from decay; below the server's floor it is
// labelled weak, and a list with no strong hit says so instead of looking like ten answers.
async function search(query) {
  $("#results-status").textContent = "searching…";
  const current = newRequest("results");
  const data = await api(`/api/search?q=${encodeURIComponent(query)}&limit=10`);
  if (!current()) return;
  const list = $("#results");
  list.replaceChildren();
  for (const r of data.results) {
    const item = el("li", { class: r.weak ? "result weak" : "result", "data-memory": r.memory_id || "" },
      el("span", { class: "src" }, r.source.toUpperCase()), `${r.score.toFixed(2)} `,
      el("span", { class: r.weak ? "match weak-label" : "match", title: `text relevance ${r.relevance.toFixed(2)}` },
        r.weak ? "weak match" : "match"), " ",
      el("strong", {}, r.title), el("div", {}, r.preview));
    if (r.memory_id) item.addEventListener("click", () => { location.hash = `#/memory/${r.memory_id}`; });
    list.append(item);
  }
  const n = data.results.length;
  $("#results-status").textContent = data.strong
    ? `${n} result(s) for “${query}”, ${data.strong} strong`
    : `no strong match for “${query}”` + (n ? `: the ${n} closest, all weak` : "");
}

// -- one memory and its decay curve ----------------------------------------------------------
async function showMemory(id) {
  const current = newRequest("detail");
  let data;
  try {
    data = await api(`/api/memory/${encodeURIComponent(id)}`);
  } catch (e) {
    if (current()) throw e;
    return;
  }
  if (!current()) return;
  const m = data.memory;
  $("#detail").replaceChildren(
    el("div", {}, el("code", {}, m.id), ` · ${m.status} · used ${m.use_count}× · score now ${data.score_now}`),
    el("p", { class: "content" }, m.content),
    el("div", { class: "muted" }, [...(m.meta?.tags || m.tags || []).map((t) => `#${t}`), ...(m.entities || [])].join(" ")));
  drawCurve(data);
}

function drawCurve(data) {
  const svg = $("#curve"), W = 460, H = 180, pad = 28;
  const pts = data.curve, xs = pts.map((p) => p.days);
  const x0 = Math.min(...xs), x1 = Math.max(...xs);
  const ymax = Math.max(1, ...pts.map((p) => p.score));
  const X = (d) => pad + ((d - x0) / (x1 - x0 || 1)) * (W - 2 * pad);
  const Y = (s) => H - pad - (s / ymax) * (H - 2 * pad);
  const NS = "http://www.w3.org/2000/svg";
  const add = (tag, attrs) => { const n = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v); svg.append(n); return n; };
  svg.replaceChildren();
  const [dz0, dz1] = data.danger_zone;
  add("rect", { x: pad, y: Y(dz1), width: W - 2 * pad, height: Y(dz0) - Y(dz1), fill: "#fff3e0" });
  add("line", { x1: pad, x2: W - pad, y1: Y(data.forget_threshold), y2: Y(data.forget_threshold), stroke: "#c62828", "stroke-dasharray": "4 3" });
  add("line", { x1: X(0), x2: X(0), y1: pad, y2: H - pad, stroke: "#999" });
  add("polyline", { id: "curve-line", fill: "none", stroke: "#3949ab", "stroke-width": 2,
    points: pts.map((p) => `${X(p.days).toFixed(1)},${Y(p.score).toFixed(1)}`).join(" ") });
  add("text", { x: X(0) + 4, y: pad + 10, "font-size": 10 }).textContent = "now";
  add("text", { x: pad, y: H - 8, "font-size": 10 }).textContent = `${x0.toFixed(1)} d`;
  add("text", { x: W - pad - 30, y: H - 8, "font-size": 10 }).textContent = `+${x1.toFixed(0)} d`;
}

// -- graph (canvas, force-free: the server's seeded layout, like `cortexgraph graph`) ---------
const COLORS = { note: "#3949ab", memory: "#2e7d32", missing: "#bdbdbd" };
const LEGEND = { note: "vault note", memory: "short-term memory", missing: "linked note not in the vault" };
const view = { scale: 1, dx: 0, dy: 0, nodes: [], edges: [], byId: {}, drag: null, hover: null };

async function loadGraph() {
  const data = await api("/api/graph");
  view.nodes = data.nodes; view.edges = data.edges;
  view.byId = Object.fromEntries(data.nodes.map((n) => [n.id, n]));
  const xs = data.nodes.map((n) => n.x), ys = data.nodes.map((n) => n.y);
  view.box = { x0: Math.min(...xs, 0), x1: Math.max(...xs, 0), y0: Math.min(...ys, 0), y1: Math.max(...ys, 0) };
  $("#graph-count").textContent = `${data.nodes.length} nodes, ${data.edges.length} links`;
  const counts = {};
  for (const n of data.nodes) counts[n.kind] = (counts[n.kind] || 0) + 1;
  $("#legend").replaceChildren(...Object.entries(COLORS).map(([kind, color]) =>
    el("li", { "data-kind": kind }, el("span", { class: "swatch", style: `background:${color}` }),
      `${LEGEND[kind]} (${counts[kind] || 0})`)));
  drawGraph();
}

// The layout's bounding box fills the canvas, with room left for labels on the right.
function unit(n) { const b = view.box; return [(n.x - b.x0) / (b.x1 - b.x0 || 1), (n.y - b.y0) / (b.y1 - b.y0 || 1)]; }
function toScreen(n, c) {
  const [u, v] = unit(n), padX = 40, padY = 30, w = c.width - padX - 220, h = c.height - 2 * padY;
  return [(padX + u * w) * view.scale + view.dx, (padY + v * h) * view.scale + view.dy];
}

function drawGraph() {
  const c = $("#graph"), g = c.getContext("2d");
  g.clearRect(0, 0, c.width, c.height);
  g.strokeStyle = "rgba(0,0,0,0.15)";
  for (const e of view.edges) {
    const a = view.byId[e.source], b = view.byId[e.target];
    if (!a || !b) continue;
    const [ax, ay] = toScreen(a, c), [bx, by] = toScreen(b, c);
    g.beginPath(); g.moveTo(ax, ay); g.lineTo(bx, by); g.stroke();
  }
  for (const n of view.nodes) {
    const [x, y] = toScreen(n, c);
    g.fillStyle = COLORS[n.kind] || "#999";
    g.beginPath(); g.arc(x, y, 3 + Math.min(n.degree, 12) * 0.6, 0, 2 * Math.PI); g.fill();
  }
  if (view.nodes.length <= 40) {  // a small graph reads better with every label
    g.fillStyle = "#444"; g.font = "11px system-ui";
    for (const n of view.nodes) { const [x, y] = toScreen(n, c); g.fillText(n.label.slice(0, 40), x + 7, y + 4); }
  }
  if (view.hover) {
    const [x, y] = toScreen(view.hover, c);
    g.fillStyle = "#000"; g.font = "12px system-ui"; g.fillText(view.hover.label, x + 8, y - 8);
  }
}

function nodeAt(c, px, py) {
  let best = null, bestD = 100;
  for (const n of view.nodes) {
    const [x, y] = toScreen(n, c), d = (x - px) ** 2 + (y - py) ** 2;
    if (d < bestD) { best = n; bestD = d; }
  }
  return best;
}

function setupGraph() {
  const c = $("#graph");
  const pos = (ev) => { const r = c.getBoundingClientRect();
    return [(ev.clientX - r.left) * c.width / r.width, (ev.clientY - r.top) * c.height / r.height]; };
  c.addEventListener("mousedown", (ev) => {
    const [px, py] = pos(ev), node = nodeAt(c, px, py);
    view.drag = { node, px, py, moved: false };
  });
  c.addEventListener("mousemove", (ev) => {
    const [px, py] = pos(ev);
    if (view.drag) {
      const d = view.drag; d.moved = true;
      if (d.node) {
        const b = view.box;
        d.node.x += (px - d.px) * (b.x1 - b.x0 || 1) / ((c.width - 260) * view.scale);
        d.node.y += (py - d.py) * (b.y1 - b.y0 || 1) / ((c.height - 60) * view.scale);
      } else { view.dx += px - d.px; view.dy += py - d.py; }
      d.px = px; d.py = py;
    } else view.hover = nodeAt(c, px, py);
    drawGraph();
  });
  c.addEventListener("mouseup", () => {
    const d = view.drag; view.drag = null;
    if (d && d.node && !d.moved && d.node.id.startsWith("memory:")) location.hash = `#/memory/${d.node.id.slice(7)}`;
  });
  c.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const [px, py] = pos(ev), f = ev.deltaY < 0 ? 1.15 : 1 / 1.15;
    view.dx = px - (px - view.dx) * f; view.dy = py - (py - view.dy) * f; view.scale *= f;
    drawGraph();
  }, { passive: false });
}

// -- reviews ---------------------------------------------------------------------------------
async function loadReviews() {
  const data = await api("/api/reviews");
  const box = $("#reviews");
  box.replaceChildren();
  $("#reviews-count").textContent = `${data.reviews.length} open`;
  $("#reviews-badge").textContent = data.reviews.length ? `(${data.reviews.length})` : "";
  if (!data.reviews.length) box.append(el("p", { class: "muted" }, "Nothing waits for you."));
  for (const r of data.reviews) {
    const decide = (how) => async () => {
      const done = await api(`/api/reviews/${encodeURIComponent(r.id)}/${how}`,
        { method: "POST", headers: { "X-CortexGraph": "1" } });
      await Promise.all([loadReviews(), loadGraph()]);
      $("#review-result").textContent = `${r.id}: ${done.reason}`;
    };
    box.append(el("div", { class: "review", "data-issue": r.id },
      el("strong", {}, r.id), ` ${r.title}`,
      el("ul", {}, ...r.memories.map((m) => el("li", {}, el("a", { href: `#/memory/${m.id}` }, m.id.slice(0, 8)), " ", m.content))),
      el("button", { class: "approve", onclick: decide("approve") }, "Approve (merge)"), " ",
      el("button", { class: "reject", onclick: decide("reject") }, "Reject (keep apart)")));
  }
}

// -- runs ------------------------------------------------------------------------------------
async function loadRuns() {
  const data = await api("/api/runs");
  const body = $("#runs tbody");
  body.replaceChildren();
  for (const run of data.runs) {
    const summary = Object.entries(run.summaries || {}).map(([k, v]) => `${k}: ${v}`).join("\n");
    body.append(el("tr", {}, el("td", {}, new Date(run.finished_at * 1000).toLocaleString()),
      el("td", {}, (run.total_seconds || 0).toFixed(1)), el("td", { style: "white-space: pre-wrap" }, summary)));
  }
  if (!data.runs.length) body.append(el("tr", {}, el("td", { colspan: 3, class: "muted" }, "no runs recorded yet")));
}

$("#search-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const q = $("#q").value.trim();
  if (q && document.body.dataset.view !== "overview") location.hash = "#/";
  if (q) search(q).catch((e) => { $("#results-status").textContent = `error: ${e.message}`; });
});
