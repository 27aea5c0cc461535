// cortexgraph web view, the review pages: a hash router (#/, #/memories?…, #/memory/ID,
// #/reviews), the memory list with filters and paging, and a memory's history with undo.
// Stored text only ever goes in as text nodes (el() in app.js), never as HTML.
"use strict";

const VIEWS = ["overview", "memories", "memory", "reviews"];
const AGES = { "": "any age", "max:1": "today", "max:7": "this week", "min:30": "older than 30 d", "min:90": "older than 90 d" };

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [path, query = ""] = raw.split("?");
  const [view, arg] = path.split("/");
  return { view: VIEWS.includes(view) ? view : "overview", arg: arg ? decodeURIComponent(arg) : "", params: new URLSearchParams(query) };
}

async function route() {
  const { view, arg, params } = parseHash();
  document.body.dataset.view = view;
  for (const s of document.querySelectorAll("section[data-in]")) s.hidden = !s.dataset.in.split(" ").includes(view);
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("current", a.dataset.view === view);
  if (view === "memories") await loadMemories(params);
  if (view === "memory" && arg) {
    $("#undo-result").textContent = "";
    await Promise.all([showMemory(arg).catch((e) => { $("#detail").textContent = e.message; $("#curve").replaceChildren(); }), loadHistory(arg)]);
  }
}

// -- the memory list -------------------------------------------------------------------------
function fillSelect(select, options, chosen) {
  select.replaceChildren(...Object.entries(options).map(([value, label]) => {
    const o = el("option", { value }, label); if (value === chosen) o.selected = true; return o; }));
}

async function loadMemories(params) {
  const q = new URLSearchParams();
  for (const k of ["status", "tag", "entity", "offset", "limit"]) if (params.get(k)) q.set(k, params.get(k));
  const [bound, days] = (params.get("age") || ":").split(":");
  if (bound) q.set(`${bound}_age_days`, days);
  const current = newRequest("list");
  const data = await api(`/api/memories?${q}`);
  if (!current()) return;
  const f = $("#filters");
  fillSelect(f.status, { "": "any status", ...Object.fromEntries(data.choices.status.map((s) => [s, s])) }, params.get("status") || "");
  fillSelect(f.age, AGES, params.get("age") || "");
  f.tag.value = params.get("tag") || ""; f.entity.value = params.get("entity") || "";
  $("#tag-choices").replaceChildren(...data.choices.tags.map((t) => el("option", { value: t })));
  $("#entity-choices").replaceChildren(...data.choices.entities.map((t) => el("option", { value: t })));
  const body = $("#memory-list tbody");
  body.replaceChildren();
  for (const m of data.items) {
    body.append(el("tr", { "data-memory": m.id },
      el("td", {}, el("a", { href: `#/memory/${m.id}` }, m.id.slice(0, 8))),
      el("td", {}, el("span", { class: `status ${m.status}` }, m.status)),
      el("td", { class: "preview" }, m.preview, el("div", { class: "muted" },
        [...m.tags.map((t) => `#${t}`), ...m.entities].join(" "))),
      el("td", {}, `${m.age_days} d`), el("td", {}, m.score.toFixed(2))));
  }
  if (!data.items.length) body.append(el("tr", {}, el("td", { colspan: 5, class: "muted" }, "no memory matches these filters")));
  const first = data.total ? data.offset + 1 : 0, last = data.offset + data.items.length;
  $("#page-info").textContent = `${first}–${last} of ${data.total}`;
  const go = (offset) => () => { params.set("offset", String(Math.max(0, offset))); location.hash = `#/memories?${params}`; };
  $("#prev-page").disabled = data.offset <= 0;
  $("#next-page").disabled = last >= data.total;
  $("#prev-page").onclick = go(data.offset - data.limit);
  $("#next-page").onclick = go(data.offset + data.limit);
}

function setupFilters() {
  $("#filters").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const f = ev.target, old = parseHash().params, p = new URLSearchParams();
    for (const k of ["status", "tag", "entity", "age"]) if (f[k].value.trim()) p.set(k, f[k].value.trim());
    if (old.get("limit")) p.set("limit", old.get("limit"));
    location.hash = `#/memories?${p}`;
  });
  for (const name of ["status", "age"]) $("#filters")[name].addEventListener("change", () => $("#filters").requestSubmit());
}

// -- one memory: history with undo, links, notes ---------------------------------------------
async function loadHistory(id) {
  const current = newRequest("history");
  const data = await api(`/api/memory/${encodeURIComponent(id)}/history`);
  if (!current()) return;
  const body = $("#history tbody");
  body.replaceChildren();
  for (const e of data.history) {
    const cell = el("td", {});
    if (e.undo) cell.append(el("button", { class: "undo", "data-action": e.undo.action, onclick: () => undo(id, e.undo) }, e.undo.label));
    body.append(el("tr", { "data-event": e.event }, el("td", { class: "when" }, (e.time || "?").replace("T", " ")), el("td", {}, e.event),
      el("td", { class: "cause" }, e.cause), el("td", {}, e.source), cell));
  }
  $("#notes").replaceChildren(...(data.notes.length ? data.notes.map((n) =>
    el("li", {}, el("strong", {}, n.title), ` (${n.why}) `, el("code", {}, n.path)))
    : [el("li", { class: "muted" }, "no vault note yet")]));
  $("#relations").replaceChildren(...(data.relations.length ? data.relations.map((r) =>
    el("li", {}, `${r.type} `, el("a", { href: `#/memory/${r.id}` }, r.id.slice(0, 8))))
    : [el("li", { class: "muted" }, "no linked memory")]));
}

async function undo(id, offer) {
  let said;
  try {
    const done = await api(`/api/memory/${encodeURIComponent(offer.target)}/undo/${offer.action}`,
      { method: "POST", headers: { "X-CortexGraph": "1" } });
    said = done.detail;
  } catch (e) { said = `not undone: ${e.message}`; }
  await Promise.all([showMemory(id).catch(() => {}), loadHistory(id), loadGraph(), loadReviews()]);
  $("#undo-result").textContent = said;  // after the page shows the memory as it is now
}

setupFilters();
setupGraph();
window.addEventListener("hashchange", route);
Promise.all([loadGraph(), loadReviews(), loadRuns(), route()])
  .then(() => document.body.setAttribute("data-ready", "1"))
  .catch((e) => { document.body.setAttribute("data-error", e.message); });
