// readgaze review, 3 of 3: keyboard, mouse and start-up (after list.js and trial.js). Plain JS, no build
// step; talks to the JSON API of readgaze/review/server.py with the page's access token.
"use strict";

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
