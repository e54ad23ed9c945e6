// readgaze review, 1 of 3: the API client and the trial list (then trial.js, app.js).
"use strict";

const TOKEN = window.READGAZE_TOKEN;
const PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
                 "#bcbd22", "#7f7f7f"];
const $ = (id) => document.getElementById(id);
const timings = (window.readgazeTimings = {});

const LIST_KEYS = "↑/↓ select · Enter open · w worst first · / filter · PgUp/PgDn page · click a header to sort";
const TRIAL_KEYS = "n/p next/prev trial · ←/→ fixation · Shift+←/→ select run · ↑/↓ move run a line · " +
                   "v/0-9 view · a accept view's method · x exclude/include · z undo · y redo · Esc list";

async function api(path, body) {
  const opts = { headers: { "X-Readgaze-Token": TOKEN } };
  if (body !== undefined) {
    opts.method = "POST";
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const r = await fetch(path, opts);
  const data = await r.json().catch(() => ({ error: r.status + " " + r.statusText }));
  if (!r.ok) throw new Error(data.error || r.statusText);
  return data;
}

function say(text, error = false) {
  const m = $("message");
  m.textContent = text;
  m.className = error ? "error" : "";
}

const esc = (s) => String(s ?? "").replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
const pct = (v) => (v === null || v === undefined ? "–" : (100 * v).toFixed(1) + " %");

// ---------------------------------------------------------------------------------------------- the list
const saved = JSON.parse(sessionStorage.getItem("readgaze-list") || "null");
const list = Object.assign({ offset: 0, limit: 50, sort: "agreement", desc: false, q: "", status: "all" }, saved || {},
                           { rows: [], total: 0, sel: 0 });

function saveList() {
  const { offset, limit, sort, desc, q, status } = list;
  sessionStorage.setItem("readgaze-list", JSON.stringify({ offset, limit, sort, desc, q, status }));
}

async function loadList() {
  const t0 = performance.now();
  const p = new URLSearchParams({ offset: list.offset, limit: list.limit, sort: list.sort, desc: list.desc ? 1 : 0,
                                  q: list.q, status: list.status });
  const page = await api("api/trials?" + p);
  list.rows = page.rows;
  list.total = page.total;
  $("qc").textContent = page.qc.length ? "prep's QC: " + page.qc.join(" · ") : "";
  list.sel = Math.min(list.sel, Math.max(0, list.rows.length - 1));
  saveList();
  renderList();
  timings.listTotal = performance.now() - t0;
  performance.measure("readgaze-list", { start: t0, end: performance.now() });
}

function renderList() {
  const body = list.rows.map((r, k) => {
    const low = (v) => (v !== null && v < 0.95 ? ' class="num low"' : ' class="num"');
    return `<tr data-k="${k}"${k === list.sel ? ' class="selected"' : ""}><td>${esc(r.trial_id)}</td>` +
      `<td>${esc(r.participant_id)}</td><td>${esc(r.item_id)}</td><td>${esc(r.label)}</td>` +
      `<td class="num">${r.n_fixations}</td><td${low(r.line_agreement_vote)}>${pct(r.line_agreement_vote)}</td>` +
      `<td${low(r.line_agreement_slice)}>${pct(r.line_agreement_slice)}</td><td class="num">${r.off_text}</td>` +
      `<td class="num">${r.off_screen}</td><td class="num">${r.index_gaps}</td>` +
      `<td class="status-${r.status}" title="${esc(r.excluded)}">${esc(r.status)}${r.excluded ? ": " + esc(r.excluded) : ""}</td></tr>`;
  }).join("");
  document.querySelector("#trials tbody").innerHTML = body;
  const last = Math.min(list.offset + list.limit, list.total);
  $("range").textContent = list.total ? `${list.offset + 1}–${last} of ${list.total}` : "no trials";
  document.querySelectorAll("#trials th").forEach((th) => {
    const on = th.dataset.sort === list.sort || (list.sort === "agreement" && th.dataset.sort === "line_agreement_vote");
    th.className = (on ? "sorted" : "") + (on && list.desc ? " desc" : "");
  });
  $("filter").value = list.q;
  $("status").value = list.status;
}

function selectRow(k) {
  list.sel = Math.max(0, Math.min(k, list.rows.length - 1));
  document.querySelectorAll("#trials tbody tr").forEach((tr, i) => tr.classList.toggle("selected", i === list.sel));
  document.querySelector("#trials tbody tr.selected")?.scrollIntoView({ block: "nearest" });
}

async function worstFirst() {
  Object.assign(list, { sort: "agreement", desc: false, offset: 0, sel: 0 });
  await loadList();
}

async function page(step) {
  const next = list.offset + step * list.limit;
  if (next < 0 || next >= list.total) return false;
  list.offset = next;
  list.sel = step > 0 ? 0 : list.limit - 1;
  await loadList();
  return true;
}

