// readgaze review: the trial list and the trial view. Plain JS, no build step; talks to the JSON API of
// readgaze/review/server.py with the page's access token. Keyboard first (the keys are shown in the header).
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
      `<td class="num">${r.off_screen}</td>` +
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

// --------------------------------------------------------------------------------------------- the trial
const trial = { data: null, view: "current", lines: {}, cursor: 0, anchor: null, undo: [], redo: [] };

function showList(reload = true) {
  $("trial-view").hidden = true;
  $("list-view").hidden = false;
  $("keys").textContent = LIST_KEYS;
  if (location.hash) history.replaceState(null, "", location.pathname + location.search);
  if (reload) loadList().catch((e) => say(e.message, true));
}

async function openTrial(id, { keepHistory = false } = {}) {
  const t0 = performance.now();
  const data = await api("api/trials/" + encodeURIComponent(id));
  if (!keepHistory || !trial.data || trial.data.trial_id !== id) {
    Object.assign(trial, { cursor: 0, anchor: null, undo: [], redo: [], lines: {} });
    if (!["raw", "shipped", "current"].includes(trial.view)) trial.view = "current";
  }
  trial.data = data;
  trial.lines.shipped = data.fixations.shipped;
  trial.lines.current = data.fixations.current;
  $("list-view").hidden = true;
  $("trial-view").hidden = false;
  $("keys").textContent = TRIAL_KEYS;
  history.replaceState(null, "", location.pathname + location.search + "#trial=" + encodeURIComponent(id));
  const k = list.rows.findIndex((r) => r.trial_id === id);
  if (k >= 0) list.sel = k;
  if (!["shipped", "current"].includes(trial.view)) await ensureLines(trial.view);
  await ensureLines("vote").catch(() => null);  // the consensus the current lines are ringed against
  const t1 = performance.now();
  renderTrial();
  timings.trialRender = performance.now() - t1;
  timings.trialTotal = performance.now() - t0;
  performance.measure("readgaze-trial-render", { start: t1, end: performance.now() });
}

async function ensureLines(view) {
  const method = view === "raw" ? "attach" : view;
  if (!trial.lines[method]) {
    const got = await api(`api/trials/${encodeURIComponent(trial.data.trial_id)}/lines/${method}`);
    trial.lines[method] = got.lines;
  }
  return trial.lines[method];
}

function viewLines() {
  return trial.view === "raw" ? trial.lines.attach : trial.lines[trial.view];
}

function selection() {
  const a = trial.anchor === null ? trial.cursor : trial.anchor;
  return [Math.min(a, trial.cursor), Math.max(a, trial.cursor)];
}

function renderTrial() {
  const d = trial.data, f = d.fixations, w = d.words, ly = d.line_y_px;
  const lines = viewLines() || f.current;
  const raw = trial.view === "raw";
  const n = f.x_px.length;
  const pitch = ly.length > 1 ? (ly[ly.length - 1] - ly[0]) / (ly.length - 1) : 40;
  const xs = w.left_px.concat(w.right_px), ys = w.top_px.concat(w.bottom_px);
  for (let i = 0; i < n; i++) { xs.push(f.x_px[i]); ys.push(f.y_px[i]); }
  const x0 = Math.min(...xs) - 1.6 * pitch, x1 = Math.max(...xs) + pitch;  // line numbers left of everything
  const y0 = Math.min(...ys) - pitch, y1 = Math.max(...ys) + pitch;
  const svg = $("scene");
  svg.setAttribute("viewBox", `${x0} ${y0} ${x1 - x0} ${y1 - y0}`);
  svg.style.aspectRatio = `${x1 - x0} / ${y1 - y0}`;
  const out = [];
  const left = Math.min(...w.left_px);
  ly.forEach((y, k) => {
    out.push(`<line class="midline" x1="${left}" x2="${Math.max(...w.right_px)}" y1="${y}" y2="${y}"/>`);
    out.push(`<text class="lineno" x="${x0 + 0.3 * pitch}" y="${y + pitch * 0.15}" font-size="${pitch * 0.4}" ` +
             `fill="${PALETTE[k % PALETTE.length]}">${k}</text>`);
  });
  // monospace glyphs are about 0.6 em wide: the font fits the boxes' median width per character
  const perChar = w.left_px.map((l, i) => (w.right_px[i] - l) / Math.max(1, String(w.word[i] ?? "").length + 1))
    .sort((a, b) => a - b);
  const fs = Math.min(pitch * 0.3, (perChar[perChar.length >> 1] || pitch * 0.2) / 0.6);
  for (let i = 0; i < w.left_px.length; i++) {
    out.push(`<rect class="box" x="${w.left_px[i]}" y="${w.top_px[i]}" width="${w.right_px[i] - w.left_px[i]}" ` +
             `height="${w.bottom_px[i] - w.top_px[i]}"/>`);
    out.push(`<text class="word" x="${w.left_px[i] + 2}" y="${(w.top_px[i] + w.bottom_px[i]) / 2 + fs / 3}" ` +
             `font-size="${fs}">${esc(w.word[i])}</text>`);
  }
  const px = f.x_px, py = new Array(n);
  for (let i = 0; i < n; i++) py[i] = raw || lines[i] === null || lines[i] === undefined ? f.y_px[i] : ly[lines[i]];
  let path = "";
  for (let i = 0; i < n; i++) path += (i ? "L" : "M") + px[i].toFixed(1) + " " + py[i].toFixed(1);
  out.push(`<path class="sacc" d="${path}"/>`);
  const [s0, s1] = selection();
  const vote = trial.lines.vote;
  const compare = ["current", "shipped"].includes(trial.view) ? vote || f.shipped : f.current;
  let differ = 0;
  for (let i = 0; i < n; i++) {
    const r = pitch * 0.12 * Math.sqrt(Math.max(f.duration_ms[i], 20) / 200);
    const line = lines[i];
    const colour = line === null || line === undefined ? "#999" : PALETTE[line % PALETTE.length];
    const cls = "fix" + (i >= s0 && i <= s1 ? " sel" : "") + (i === trial.cursor ? " cursor" : "");
    out.push(`<circle class="${cls}" data-i="${i}" cx="${px[i]}" cy="${py[i]}" r="${r.toFixed(1)}" fill="${colour}">` +
             `<title>fixation ${f.fixation_index[i]}: ${f.duration_ms[i]} ms, line ${line}</title></circle>`);
    if (trial.view !== "vote" && compare[i] !== line) {
      differ++;
      out.push(`<circle class="disagree" cx="${px[i]}" cy="${py[i]}" r="${(r + pitch * 0.08).toFixed(1)}"/>`);
    }
  }
  svg.innerHTML = out.join("");
  svg.getBBox();  // layout now, inside the timed render
  $("trial-view").classList.toggle("excluded", !!d.excluded);
  $("trial-title").textContent = `trial ${d.trial_id}`;
  const k = list.rows.findIndex((r) => r.trial_id === d.trial_id);
  $("trial-info").textContent = `participant ${d.participant_id ?? "–"} · item ${d.item_id ?? "–"} · ` +
    `${n} fixations · agreement vote ${pct(d.line_agreement_vote)}, slice ${pct(d.line_agreement_slice)}` +
    (d.excluded ? ` · EXCLUDED: ${d.excluded}` : "") +
    (d.stale_corrections ? ` · ${d.stale_corrections} stale correction(s) ignored` : "") +
    (k >= 0 ? ` · ${list.offset + k + 1} of ${list.total} in the list` : "");
  const viewSel = $("view");
  if (viewSel.options.length !== d.methods.length) {
    viewSel.innerHTML = d.methods.map((m, i) => `<option value="${m}">${i <= 9 ? i + ": " : ""}${m}</option>`).join("");
  }
  viewSel.value = trial.view;
  const against = ["current", "shipped"].includes(trial.view) ? (vote ? "the vote" : "the shipped lines")
    : "the current lines";
  $("legend").textContent = `colour: line in view "${trial.view}"; ` + (raw ? "positions: recorded y. " :
    "positions: x as recorded, y at the assigned line. ") + (trial.view === "vote" ? "" :
    `${differ} fixation(s) ringed where the view differs from ${against}. `) +
    `Selected: fixations ${f.fixation_index[s0]}–${f.fixation_index[s1]} (${s1 - s0 + 1}).`;
}

async function setView(view) {
  if (!trial.data.methods.includes(view)) return;
  if (!["shipped", "current"].includes(view)) await ensureLines(view);
  trial.view = view;
  renderTrial();
}

async function post(body, note) {
  const d = trial.data;
  const row = await api(`api/trials/${encodeURIComponent(d.trial_id)}/corrections`,
                        Object.assign({ fingerprint: d.fingerprint }, body));
  await openTrial(d.trial_id, { keepHistory: true });
  say(`saved correction ${row.correction_id}: ${note}`);
  return row;
}

// a move between two line lists, for the fixations whose line changes and is known on both sides
function moveBetween(row, from, to, reason) {
  const k = row.fixation_index.map((_, i) => i).filter((i) => from[i] !== null && to[i] !== null && from[i] !== to[i]);
  return { kind: "move", fixation_index: k.map((i) => row.fixation_index[i]), line_before: k.map((i) => from[i]),
           line_after: k.map((i) => to[i]), reason };
}

function inverse(row) {
  if (row.kind === "exclude") return { kind: "include", reason: "undo" };
  if (row.kind === "include") return { kind: "exclude", reason: row.reason || "redo" };
  return moveBetween(row, row.line_after, row.line_before, "undo");
}

function forward(row) {
  if (row.kind === "exclude" || row.kind === "include") return { kind: row.kind, reason: row.reason };
  return row.kind === "method" ? { kind: "method", method: row.method, reason: "redo" }
    : moveBetween(row, row.line_before, row.line_after, "redo");
}

async function change(body, note) {
  const row = await post(body, note);
  if (row.kind !== "move" || row.fixation_index.length) trial.undo.push(row);
  trial.redo = [];
}

async function moveRun(step) {
  const f = trial.data.fixations, n_lines = trial.data.line_y_px.length;
  const [s0, s1] = selection();
  const idx = [], before = [], after = [];
  for (let i = s0; i <= s1; i++) {
    const line = f.current[i];
    if (line === null) continue;
    const to = line + step;
    if (to < 0 || to >= n_lines) continue;
    idx.push(f.fixation_index[i]); before.push(line); after.push(to);
  }
  if (!idx.length) return say("nothing to move: the run is at the text's edge", true);
  trial.view = "current";
  await change({ kind: "move", fixation_index: idx, line_before: before, line_after: after },
               `${idx.length} fixation(s) moved ${step > 0 ? "down" : "up"} a line`);
}

async function acceptView() {
  const v = trial.view;
  if (v === "current" || v === "shipped") return say(`pick a method view to accept (v or 0-9); "${v}" is not a method`, true);
  const method = v === "raw" ? "attach" : v;
  trial.view = "current";
  await change({ kind: "method", method }, `method ${method} accepted for the whole trial`);
}

async function undo(stack, other, make, word) {
  const row = stack.pop();
  if (!row) return say(`nothing to ${word}`);
  const body = make(row);
  if (body.kind === "move" && !body.fixation_index.length) {  // nothing left to change: a no-op, not an error
    other.push(row);
    return say(`${word}: no line to change`);
  }
  try {
    await post(body, word);
  } catch (e) {
    stack.push(row);
    throw e;
  }
  other.push(row);
}

function showExclude() {
  if (trial.data.excluded) return change({ kind: "include", reason: "included again" }, "trial included again");
  $("exclude-form").hidden = false;
  $("exclude-reason").focus();
  $("exclude-reason").select();
}

async function nextTrial(step) {
  let k = list.rows.findIndex((r) => r.trial_id === trial.data.trial_id);
  if (k < 0) k = step > 0 ? -1 : list.rows.length;
  k += step;
  if (k >= list.rows.length) {
    if (!(await page(1))) return say("last trial of the list");
    k = 0;
  } else if (k < 0) {
    if (!(await page(-1))) return say("first trial of the list");
    k = list.rows.length - 1;
  }
  await openTrial(list.rows[k].trial_id);
}

window.readgazeState = { list, trial };  // for tests and scripts: what the page shows

// ---------------------------------------------------------------------------------------------- keyboard
async function onTrialKey(e) {
  const n = trial.data.fixations.x_px.length;
  const key = e.key;
  if (key === "ArrowRight" || key === "ArrowLeft") {
    const step = key === "ArrowRight" ? 1 : -1;
    if (e.shiftKey) { if (trial.anchor === null) trial.anchor = trial.cursor; } else trial.anchor = null;
    trial.cursor = Math.max(0, Math.min(n - 1, trial.cursor + step));
    return renderTrial();
  }
  if (key === "Home" || key === "End") { trial.anchor = null; trial.cursor = key === "Home" ? 0 : n - 1; return renderTrial(); }
  if (key === "ArrowDown") return moveRun(1);
  if (key === "ArrowUp") return moveRun(-1);
  if (key === "n" || key === "]") return nextTrial(1);
  if (key === "p" || key === "[") return nextTrial(-1);
  if (key === "Escape") return showList();
  if (key === "a") return acceptView();
  if (key === "x") return showExclude();
  if ((key === "z" || key === "Z") && !e.shiftKey) return undo(trial.undo, trial.redo, inverse, "undo");
  if (key === "y" || key === "Y" || (e.key.toLowerCase() === "z" && e.shiftKey))
    return undo(trial.redo, trial.undo, forward, "redo");
  if (key === "v") {
    const m = trial.data.methods;
    return setView(m[(m.indexOf(trial.view) + 1) % m.length]);
  }
  if (/^[0-9]$/.test(key)) return setView(trial.data.methods[+key]);
}

async function onListKey(e) {
  if (e.key === "ArrowDown" || e.key === "j") return selectRow(list.sel + 1);
  if (e.key === "ArrowUp" || e.key === "k") return selectRow(list.sel - 1);
  if (e.key === "Enter" && list.rows.length) return openTrial(list.rows[list.sel].trial_id);
  if (e.key === "w") return worstFirst();
  if (e.key === "PageDown") return page(1);
  if (e.key === "PageUp") return page(-1);
  if (e.key === "/") { e.preventDefault(); $("filter").focus(); }
}

document.addEventListener("keydown", (e) => {
  const t = e.target;
  if (t.id === "exclude-reason") {
    if (e.key === "Enter") {
      $("exclude-form").hidden = true;
      change({ kind: "exclude", reason: t.value.trim() }, "trial excluded: " + t.value.trim())
        .catch((err) => say(err.message, true));
    } else if (e.key === "Escape") $("exclude-form").hidden = true;
    return;
  }
  if (t.id === "filter") {
    if (e.key === "Enter" || e.key === "Escape") {
      if (e.key === "Enter") { list.q = t.value; list.offset = 0; loadList().catch((err) => say(err.message, true)); }
      t.blur();
    }
    return;
  }
  if (t.tagName === "SELECT" || e.ctrlKey || e.metaKey || e.altKey) {
    if (!(e.ctrlKey && ["z", "y", "Z"].includes(e.key))) return;
  }
  const handler = $("trial-view").hidden ? onListKey : onTrialKey;
  if (["ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight", "PageUp", "PageDown", "Home", "End"].includes(e.key)) e.preventDefault();
  Promise.resolve(handler(e)).catch((err) => say(err.message, true));
});

// ------------------------------------------------------------------------------------------------- mouse
$("worst").onclick = () => worstFirst().catch((e) => say(e.message, true));
$("status").onchange = (e) => { list.status = e.target.value; list.offset = 0; e.target.blur(); loadList().catch((err) => say(err.message, true)); };
$("prev-page").onclick = () => page(-1);
$("next-page").onclick = () => page(1);
$("back").onclick = () => showList();
$("view").onchange = (e) => { e.target.blur(); setView(e.target.value).catch((err) => say(err.message, true)); };
document.querySelector("#trials thead").onclick = (e) => {
  const s = e.target.dataset.sort;
  if (!s) return;
  list.desc = list.sort === s ? !list.desc : false;
  list.sort = s; list.offset = 0;
  loadList().catch((err) => say(err.message, true));
};
document.querySelector("#trials tbody").onclick = (e) => {
  const tr = e.target.closest("tr");
  if (tr) openTrial(list.rows[+tr.dataset.k].trial_id).catch((err) => say(err.message, true));
};
$("scene").onclick = (e) => {
  const i = e.target.dataset?.i;
  if (i === undefined) return;
  if (e.shiftKey) { if (trial.anchor === null) trial.anchor = trial.cursor; } else trial.anchor = null;
  trial.cursor = +i;
  renderTrial();
};

// --------------------------------------------------------------------------------------------------- start
(async () => {
  const m = location.hash.match(/^#trial=(.+)$/);
  try {
    await loadList();
    if (m) await openTrial(decodeURIComponent(m[1]));
    else showList(false);
  } catch (e) {
    say(e.message, true);
  }
  document.body.dataset.ready = "1";
})();
