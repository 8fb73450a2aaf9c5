// Ratio inspiration search page. No framework, no network beyond this server.
// All user and corpus text goes into the page through textContent, never innerHTML.
"use strict";

const MOVES = ["address", "broaden", "specify"];
const LABELS = { address: "Address", broaden: "Broaden", specify: "Specify" };
const HINTS = {
  address: "approaches or insights that address the problem",
  broaden: "broader, more general formulations",
  specify: "concrete instances and narrower cases",
};

const state = { move: "address", last: null, busy: false };
const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined) continue;
    if (k === "class") node.className = v;
    else node.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined || c === "") continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function setMove(move) {
  state.move = move;
  for (const b of document.querySelectorAll(".move")) {
    b.setAttribute("aria-checked", String(b.dataset.move === move));
  }
}

function setStatus(text, isError) {
  const s = $("status");
  s.textContent = text;
  s.classList.toggle("error", Boolean(isError));
}

function requestBody() {
  const body = { query: $("query").value, k: Number($("k").value) };
  const r = $("retriever").value;
  if (r && r !== "auto") body.retriever = r;
  for (const f of ["year_min", "year_max"]) {
    const v = $(f).value.trim();
    if (v !== "") body[f] = Number(v);
  }
  const venue = $("venue").value;
  if (venue) body.venue = venue;
  const ex = $("exclude_paper").value.trim();
  if (ex) body.exclude_paper = ex;
  return body;
}

async function search() {
  const query = $("query").value;
  if (!query.trim()) {
    setStatus("Type a research statement first.", true);
    $("query").focus();
    return;
  }
  if (state.busy) return;
  state.busy = true;
  $("go").disabled = true;
  setStatus("Searching…");
  const all = state.move === "all";
  const body = requestBody();
  if (!all) body.move = state.move;
  try {
    const resp = await fetch(all ? "/moves" : "/search", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    const data = await resp.json().catch(() => ({ error: `HTTP ${resp.status}` }));
    if (!resp.ok) {
      setStatus(`Error: ${data.error || resp.statusText}`, true);
      return;
    }
    state.last = all ? data : { query: data.query, k: data.k, moves: { [data.move]: data }, took_ms: data.took_ms };
    render(state.last);
    const n = Object.values(state.last.moves).reduce((a, m) => a + m.results.length, 0);
    setStatus(`${n} result${n === 1 ? "" : "s"} in ${Math.round(data.took_ms)} ms`);
  } catch (err) {
    setStatus(`Error: ${err.message || err}`, true);
  } finally {
    state.busy = false;
    $("go").disabled = false;
  }
}

function hitNode(hit) {
  const text = el("p", { class: "text" }, el("span", { class: "rank" }, `${hit.rank}.`), hit.text);
  const ctx = el("div", { class: "ctx" });
  if (hit.context && hit.context.prev) ctx.append(el("p", {}, el("span", { class: "lab" }, "before"), hit.context.prev));
  if (hit.context && hit.context.next) ctx.append(el("p", {}, el("span", { class: "lab" }, "after"), hit.context.next));
  const where = [hit.year, hit.venue].filter((x) => x !== null && x !== undefined && x !== "").join(", ");
  const prov = el(
    "div",
    { class: "prov" },
    el("span", { class: "score", title: `score from ${hit.retriever}` }, hit.score.toFixed(3)),
    el("span", { class: "title" }, hit.title || "(untitled)"),
    where ? ` (${where})` : "",
    hit.section ? ` · §${hit.section}` : "",
    ` · ${hit.paper_id || ""}`,
  );
  const li = el("li", { class: "hit", tabindex: "0", "data-candidate": hit.candidate_id }, text);
  if (ctx.childNodes.length) li.append(ctx);
  li.append(prov);
  return li;
}

function columnNode(move, resp) {
  const col = el("section", { class: "column", "data-move": move, "aria-label": LABELS[move] });
  col.append(el("h2", { class: move }, `${LABELS[move]} `, el("small", { class: "note" }, HINTS[move])));
  const agnostic = resp.note && resp.note.includes("not specific");
  col.append(
    el(
      "p",
      { class: "note", title: resp.note || "" },
      `retriever: ${resp.retriever}`,
      agnostic ? " · move-agnostic (no model trained for this move)" : resp.note ? ` · ${resp.note}` : "",
    ),
  );
  if (!resp.results.length) {
    col.append(el("p", { class: "empty" }, "No results (try fewer filters)."));
  } else {
    const ol = el("ol", { class: "hits" });
    for (const h of resp.results) ol.append(hitNode(h));
    col.append(ol);
  }
  return col;
}

function render(data) {
  const out = $("results");
  out.replaceChildren();
  const moves = MOVES.filter((m) => data.moves[m]);
  const wrap = el("div", { class: moves.length > 1 ? "columns" : "single" });
  for (const m of moves) wrap.append(columnNode(m, data.moves[m]));
  out.append(wrap);
  $("export").hidden = false;
}

// ------------------------------------------------------------ export

function bibEscape(s) {
  return String(s ?? "").replace(/[{}\\]/g, "");
}

function asMarkdown(data) {
  const lines = [`# Inspirations for: ${data.query}`, ""];
  for (const m of MOVES) {
    const r = data.moves[m];
    if (!r) continue;
    lines.push(`## ${LABELS[m]} (${r.retriever})`, "");
    for (const h of r.results) {
      const where = [h.year, h.venue].filter(Boolean).join(", ");
      lines.push(`${h.rank}. ${h.text}`);
      lines.push(`   — *${h.title || "untitled"}*${where ? ` (${where})` : ""}${h.section ? `, §${h.section}` : ""} [${h.paper_id}]`);
    }
    lines.push("");
  }
  return lines.join("\n");
}

function asBibtex(data) {
  const seen = new Map();
  for (const m of MOVES) {
    const r = data.moves[m];
    if (!r) continue;
    for (const h of r.results) {
      if (!h.paper_id) continue;
      const e = seen.get(h.paper_id) || { hit: h, moves: new Set() };
      e.moves.add(m);
      seen.set(h.paper_id, e);
    }
  }
  const out = [];
  for (const [id, { hit, moves }] of seen) {
    const key = String(id).replace(/[^A-Za-z0-9_:-]/g, "_");
    out.push(
      `@misc{${key},\n  title = {${bibEscape(hit.title || "untitled")}},\n` +
        (hit.year ? `  year = {${hit.year}},\n` : "") +
        (hit.venue ? `  howpublished = {${bibEscape(hit.venue)}},\n` : "") +
        `  note = {paper id ${bibEscape(id)}; retrieved by Ratio for ${[...moves].join(", ")}}\n}`,
    );
  }
  return out.join("\n\n") + "\n";
}

function exported(kind) {
  const data = state.last;
  if (kind === "json") return { text: JSON.stringify(data, null, 2), mime: "application/json", ext: "json" };
  if (kind === "md") return { text: asMarkdown(data), mime: "text/markdown", ext: "md" };
  return { text: asBibtex(data), mime: "application/x-bibtex", ext: "bib" };
}

async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch (_) {
    const ta = el("textarea", { "aria-hidden": "true" });
    ta.value = text;
    ta.style.position = "fixed";
    ta.style.opacity = "0";
    document.body.append(ta);
    ta.select();
    const ok = document.execCommand && document.execCommand("copy");
    ta.remove();
    return Boolean(ok);
  }
}

async function onExport(ev) {
  const b = ev.target.closest("button[data-export]");
  if (!b || !state.last) return;
  const { text, mime, ext } = exported(b.dataset.export);
  if (b.dataset.action === "download") {
    const url = URL.createObjectURL(new Blob([text], { type: mime }));
    const a = el("a", { href: url, download: `ratio-inspirations.${ext}` });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
    setStatus(`Downloaded ratio-inspirations.${ext}`);
  } else {
    const ok = await copyText(text);
    setStatus(ok ? `Copied ${b.textContent.replace("Copy ", "")} to the clipboard` : "Copy failed: select and copy by hand", !ok);
  }
}

// ------------------------------------------------------------ wiring

async function loadInfo() {
  try {
    const info = await (await fetch("/info")).json();
    const sel = $("retriever");
    for (const name of info.retrievers) {
      if (name === "auto") continue;
      sel.append(el("option", { value: name }, name));
    }
    const venue = $("venue");
    for (const v of info.pool.venues) venue.append(el("option", { value: v }, v));
    const per = MOVES.map((m) => `${LABELS[m]}: ${info.per_move[m]}`).join(", ");
    $("pool-info").textContent = `${info.pool.candidates.toLocaleString()} candidate sentences · ${per}`;
    const shipped = Object.values(info.shipped || {})[0];
    if (shipped) {
      $("pool-info").append(" · ", el("a", { href: shipped.card, target: "_blank" }, `${shipped.name} model card`));
    }
  } catch (_) {
    $("pool-info").textContent = "server info unavailable";
  }
}

function isTyping(target) {
  return target && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName));
}

document.addEventListener("DOMContentLoaded", () => {
  $("search-form").addEventListener("submit", (e) => {
    e.preventDefault();
    search();
  });
  $("query").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      search();
    }
  });
  for (const b of document.querySelectorAll(".move")) {
    b.addEventListener("click", () => {
      setMove(b.dataset.move);
      if ($("query").value.trim()) search();
    });
  }
  $("export").addEventListener("click", onExport);
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || isTyping(e.target)) return;
    const map = { 1: "address", 2: "broaden", 3: "specify", a: "all", A: "all" };
    if (map[e.key]) {
      e.preventDefault();
      setMove(map[e.key]);
      const btn = document.querySelector(`.move[data-move="${map[e.key]}"]`);
      if (btn) btn.focus();
      if ($("query").value.trim()) search();
    } else if (e.key === "/") {
      e.preventDefault();
      $("query").focus();
    }
  });
  loadInfo();
  $("query").focus();
});
