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

// chain: the path being walked ({ query, moves, picks }) and its last /chain answer
const state = { move: "address", last: null, busy: false, chain: null, chainResult: null, maxChain: 5 };
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

// A link only to the web: a url from a metadata file must never run script (javascript:).
function safeUrl(url) {
  return typeof url === "string" && /^https?:\/\//i.test(url) ? url : null;
}

function paperNode(hit) {
  const url = safeUrl(hit.url);
  const id = hit.paper_id || "";
  if (!url) return id;
  return el("a", { class: "paper", href: url, target: "_blank", rel: "noopener noreferrer", title: url }, id || url);
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

// POST a JSON body; the parsed answer, or null after showing the service's error in the status.
async function postJSON(path, body) {
  const resp = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  const data = await resp.json().catch(() => ({ error: `HTTP ${resp.status}` }));
  if (!resp.ok) {
    setStatus(`Error: ${data.error || resp.statusText}`, true);
    return null;
  }
  return data;
}

async function search() {
  const query = $("query").value;
  if (!query.trim()) {
    setStatus("Type a research statement first.", true);
    $("query").focus();
    return;
  }
  if (state.busy) return;
  clearChain();
  state.busy = true;
  $("go").disabled = true;
  setStatus("Searching…");
  const all = state.move === "all";
  const body = requestBody();
  if (!all) body.move = state.move;
  try {
    const data = await postJSON(all ? "/moves" : "/search", body);
    if (!data) return;
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
    " · ",
    paperNode(hit),
  );
  const li = el(
    "li",
    { class: "hit", tabindex: "0", "data-candidate": hit.candidate_id, title: "Click to continue a path of moves from this sentence" },
    text,
  );
  if (ctx.childNodes.length) li.append(ctx);
  li.append(prov);
  li.addEventListener("click", (e) => {
    if (!e.target.closest("a, button")) selectHit(li, hit);
  });
  li.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && e.target === li) {
      e.preventDefault();
      selectHit(li, hit);
    }
  });
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

// ------------------------------------------------------------ move chains

function clearChain() {
  state.chain = null;
  state.chainResult = null;
  $("chain").hidden = true;
  $("path").replaceChildren();
}

// The next-move choice, shown inside the clicked result: the path continues from its sentence.
function selectHit(li, hit) {
  for (const n of document.querySelectorAll("li.hit.selected")) n.classList.remove("selected");
  for (const n of document.querySelectorAll(".next")) n.remove();
  li.classList.add("selected");
  const move = li.closest("section.column").dataset.move;
  const base = state.chain || { query: state.last.query, moves: [], picks: [] };
  const moves = base.moves.length ? base.moves : [move];
  const bar = el("div", { class: "next", role: "group", "aria-label": "Next move from this sentence" });
  if (moves.length >= state.maxChain) {
    bar.append(el("span", {}, `The path has ${moves.length} moves, the most a chain takes.`));
  } else {
    bar.append(el("span", { class: "lab" }, "Next move from here:"));
    for (const m of MOVES) {
      const b = el("button", { type: "button", class: `next-move ${m}`, "data-move": m }, LABELS[m]);
      b.addEventListener("click", () => runChain(
        { query: base.query, moves: [...moves, m], picks: [...base.picks, hit.candidate_id] },
      ));
      bar.append(b);
    }
  }
  li.append(bar);
  const first = bar.querySelector("button");
  if (first) first.focus();
}

async function runChain(chain) {
  if (state.busy) return;
  state.busy = true;
  setStatus(`Walking ${chain.moves.length} moves…`);
  const body = requestBody();
  delete body.query;
  Object.assign(body, chain, {
    prefer_other: $("prefer_other").value,
    exclude_own_paper: $("exclude_own_paper").checked,
  });
  try {
    const data = await postJSON("/chain", body);
    if (!data) return;
    state.chain = chain;
    state.chainResult = data;
    const last = data.steps[data.steps.length - 1];
    state.last = { query: data.query, k: data.k, moves: { [last.move]: last }, took_ms: data.took_ms };
    renderPath(data);
    render(state.last);
    const n = last.results.length;
    setStatus(`Step ${last.step}: ${n} result${n === 1 ? "" : "s"} in ${Math.round(data.took_ms)} ms · click one to go on`);
  } catch (err) {
    setStatus(`Error: ${err.message || err}`, true);
  } finally {
    state.busy = false;
  }
}

function renderPath(data) {
  const ol = $("path");
  ol.replaceChildren(el("li", { class: "start" }, el("span", { class: "lab" }, "Statement"), data.query));
  for (const s of data.steps) {
    const last = s.step === data.steps.length;
    const item = el("li", { class: `step ${s.move}` }, el("span", { class: `lab ${s.move}` }, `${s.step}. ${LABELS[s.move]}`));
    item.append(el("span", { class: "system", title: "the system that ranked this step" }, s.system));
    if (last) {
      item.append(el("span", { class: "open" }, `${s.results.length} results below`));
    } else {
      const c = s.chosen;
      item.append(
        el("span", { class: "chosen" }, `“${c.text}”`),
        el("span", { class: "src" }, ` ${c.title || "(untitled)"}${c.year ? ` (${c.year})` : ""} · `, paperNode(c)),
      );
    }
    ol.append(item);
  }
  $("chain").hidden = false;
}

// The path as plain text: the statement, then each step's move, system and chosen sentence.
function pathText(data) {
  const lines = [`Statement: ${data.query}`];
  for (const s of data.steps) {
    const c = s.chosen;
    const where = [c.title || "untitled", c.year, c.venue].filter(Boolean).join(", ");
    const pick = s.step === data.steps.length && s.pick === 1 ? "top result" : `rank ${c.rank}`;
    lines.push(`${s.step}. ${LABELS[s.move]} [${s.system}] -> ${c.text}`);
    lines.push(`   (${pick}; ${where}; ${c.url || c.paper_id || ""})`);
  }
  return lines.join("\n") + "\n";
}

async function onPathCopy(ev) {
  const b = ev.target.closest("button[data-path]");
  if (!b || !state.chainResult) return;
  if (b.dataset.path === "clear") {
    search(); // back to the statement's own results; search() forgets the path
    return;
  }
  const text = b.dataset.path === "json" ? JSON.stringify(state.chainResult, null, 2) : pathText(state.chainResult);
  const ok = await copyText(text);
  setStatus(ok ? `Copied the path as ${b.dataset.path === "json" ? "JSON" : "text"}` : "Copy failed: select and copy by hand", !ok);
}

// ------------------------------------------------------------ export

function bibEscape(s) {
  return String(s ?? "").replace(/[{}\\]/g, "");
}

// A Markdown link target ends at ")" or a space: those are percent-encoded (a DOI may hold them).
function mdUrl(url) {
  return url.replace(/[()\s]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`);
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
      const url = safeUrl(h.url);
      const id = url ? `[${h.paper_id || url}](${mdUrl(url)})` : `[${h.paper_id}]`;
      lines.push(`   — *${h.title || "untitled"}*${where ? ` (${where})` : ""}${h.section ? `, §${h.section}` : ""} ${id}`);
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
        (safeUrl(hit.url) ? `  url = {${bibEscape(hit.url)}},\n` : "") +
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
    state.maxChain = info.max_chain || state.maxChain;
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
  $("chain").addEventListener("click", onPathCopy);
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
