// readgaze review, 2 of 3: the trial view and its corrections (after list.js).
"use strict";

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

