// The Timeline view (one rank, or all ranks of the run on one time axis) and the aligned timelines
// of a comparison (two runs, one above the other, step N of each at the same x). The canvas is
// tl_canvas.js, the selected event's details tl_panel.js; here: the toolbar, search and wiring.
//
// Search: served, GET .../search per rank (every event of the rank, by start, a page of 2,000 at a
// time); standalone, among the events of the windows the file carries. Matches are outlined where
// events are drawn (others dimmed) and ticked on the step strip at any zoom; prev / next (or Enter,
// Shift+Enter) jump to a match and select it.

import {legend} from "./charts.js";
import {runInfo, timelineSnapshot, searchEvents, standalone, SERVE_HINT} from "./data.js";
import {el, card, fmtNum, kindColor} from "./util.js";
import {TimelineCanvas} from "./tl_canvas.js";
import {DetailsPanel} from "./tl_panel.js";

const LEGEND = [["cpu_op", "CPU op"], ["python_function", "Python"], ["user_annotation", "annotation"],
  ["runtime", "runtime API"], ["dataloader", "DataLoader"], ["kernel", "kernel"], ["communication", "communication"],
  ["memcpy", "memcpy"], ["memset", "memset"]].map(([k, label]) => [k, label, kindColor(k)]);
const HINT = "wheel: zoom · drag: pan · click: details & flows · click a label: collapse";
let allRanks = false;  // the "all ranks" choice survives switching views

export async function timelineView(ctx) {
  const info = await runInfo(ctx.runId);
  const ranks = info.ranks || [];
  const mine = ranks.find((r) => r.rank === ctx.rank);
  const snap = timelineSnapshot(ctx.rank);
  if (!mine || (snap && !snap.windows.length)) {
    return [card("timeline", "Timeline", null, snap ? el("p", {class: "empty", id: "timeline-snapshot"},
      `This report carries no timeline for rank ${ctx.rank} (${SERVE_HINT}).`) : el("p", {class: "empty"}, "no events on this rank"))];
  }
  const carried = ranks.filter((r) => !standalone || timelineSnapshot(r.rank).windows.length);
  const host = el("div", {class: "tlhost"});
  const ui = new TimelineUI(host);
  const build = () => {
    const list = allRanks && carried.length > 1 ? carried : [mine];
    const offset = Math.min(...list.map((r) => r.start_ns));
    ui.mount(list.map((r) => ({key: `r${r.rank}`, runId: ctx.runId, rank: r.rank, label: `rank ${r.rank}`, offset,
      start_ns: r.start_ns, end_ns: r.end_ns, steps: r.steps})), list.length > 1 ? "since the run's first event" : null);
    ui.stepsOf(list.findIndex((r) => r.rank === ctx.rank));
  };
  const toggle = carried.length > 1 ? el("label", {class: "tlcheck"}, el("input", {type: "checkbox", id: "timeline-all-ranks", checked: allRanks,
    on: {change: (e) => { allRanks = e.target.checked; build(); }}}), ` all ${carried.length} ranks on one axis`) : null;
  build();
  if (snap && snap.step !== null && snap.step !== undefined) {
    ui.stepSel.value = String(snap.step);
    requestAnimationFrame(() => ui.toStep(snap.step));
  }
  const all = snap && snap.windows[0].mode === "events";
  const note = snap ? el("p", {class: "note", id: "timeline-snapshot"}, (all ? "This report carries every event of this rank."
    : `This report carries ${snap.step !== null && snap.step !== undefined ? `step ${snap.step}'s events exactly and ` : ""}`
      + `the whole rank aggregated; other windows show the nearest of these`) + `; search finds events in what it carries (${SERVE_HINT} for the rest).`) : null;
  return [card("timeline", `Timeline — ${ranks.length > 1 ? "run" : `rank ${ctx.rank}`}`,
    "CPU threads and GPU streams; aggregated when zoomed out, exact events when zoomed in.",
    note, ui.bar(toggle), legend(LEGEND), host, ui.panel.node)];
}

/** Two runs' timelines, one above the other, aligned at the start of their k-th steps (step to step). */
export async function alignedTimelines(base, next, labels) {
  const id = "diff-timeline", title = "Timelines, step to step";
  if (standalone) return card(id, title, null, el("p", {class: "empty", id: "aligned-missing"}, `This report carries no timelines (${SERVE_HINT} on both runs).`));
  const [ib, inew] = await Promise.all([runInfo(base), runInfo(next)]);
  const rb = (ib.ranks || [])[0], rn = (inew.ranks || [])[0];
  if (!rb || !rn || !rb.steps.length || !rn.steps.length) return card(id, title, null, el("p", {class: "empty"}, "one of the runs has no steps to align"));
  const pairs = Math.min(rb.steps.length, rn.steps.length);
  const host = el("div", {class: "tlhost"});
  const ui = new TimelineUI(host);
  const at = (k) => [rb.steps[k].start_ns, rn.steps[k].start_ns];
  ui.mount([{key: "base", runId: base, rank: rb.rank, label: `BASE · ${labels[0]} · rank ${rb.rank}`, start_ns: rb.start_ns, end_ns: rb.end_ns, steps: rb.steps},
    {key: "new", runId: next, rank: rn.rank, label: `NEW · ${labels[1]} · rank ${rn.rank}`, start_ns: rn.start_ns, end_ns: rn.end_ns, steps: rn.steps}]
    .map((g, i) => ({...g, offset: at(0)[i]})), "since step start");
  const pick = el("select", {id: "aligned-step", "aria-label": "align at step"}, [...Array(pairs).keys()].map((k) =>
    el("option", {value: k}, `step ${rb.steps[k].step} ↔ step ${rn.steps[k].step}`)));
  const align = (k) => {
    ui.tl.setOffsets(at(k));
    const len = Math.max(rb.steps[k].end_ns - rb.steps[k].start_ns, rn.steps[k].end_ns - rn.steps[k].start_ns);
    ui.tl.show(0, len);
    ui.tl.canvas.dataset.aligned = k;
  };
  pick.addEventListener("change", () => align(Number(pick.value)));
  requestAnimationFrame(() => align(0));
  return card(id, title, `BASE above NEW, each side's lowest rank; step N of each starts at 0, so the two steps' work can be compared `
    + "at the same scale (a shorter NEW step ends earlier). Pick the step pair to align.",
  el("div", {class: "tlbar"}, el("label", null, "align at ", pick)), ui.bar(null, false), legend(LEGEND), host, ui.panel.node);
}

/** The toolbar, search and details around one TimelineCanvas (rebuilt by mount()). */
class TimelineUI {
  constructor(host) {
    this.host = host;
    this.tl = null;
    this.panel = new DetailsPanel((ref) => this.reveal(this.tl.sel ? this.tl.sel.gi : 0, ref));
    this.statusSlot = el("span", {class: "tlstatus-slot"});
    this.stepSel = el("select", {id: "timeline-step", "aria-label": "jump to step", on: {change: (e) => this.toStep(e.target.value)}});
    this.hits = el("span", {class: "tlhits", id: "timeline-hits"});
    this.search = el("input", {type: "search", id: "timeline-search", placeholder: "search names…", "aria-label": "search event names",
      on: {keydown: (e) => { if (e.key === "Enter") { e.preventDefault(); this.step(e.shiftKey ? -1 : 1); } }}});
    this.found = null;  // {q, list: [{gi, a, dur, row, track, ts_ns}] by view time, i}
  }

  mount(groups, axisLabel) {
    if (this.tl) this.tl.destroy();
    this.tl = new TimelineCanvas(groups, {axisLabel, onSelect: (sel, g) => this.panel.show(sel, g, this.tl)});
    this.host.replaceChildren(this.tl.wrap);
    this.statusSlot.replaceChildren(this.tl.status);
    this.panel.show(null);
    if (this.found) this.runSearch(this.found.q);
  }

  bar(extra, steps = true) {
    return el("div", {class: "tlbar"},
      el("button", {type: "button", title: "zoom out", on: {click: () => this.tl.zoomBy(2)}}, "−"),
      el("button", {type: "button", title: "zoom in", on: {click: () => this.tl.zoomBy(0.5)}}, "+"),
      el("button", {type: "button", title: "show everything", on: {click: () => { this.stepSel.value = ""; this.tl.fit(); }}}, "fit"),
      steps ? this.stepSel : null, extra, this.search,
      el("button", {type: "button", id: "timeline-prev", title: "previous match (Shift+Enter)", on: {click: () => this.step(-1)}}, "◀"),
      el("button", {type: "button", id: "timeline-next", title: "next match (Enter)", on: {click: () => this.step(1)}}, "▶"),
      this.hits, this.statusSlot, el("span", {class: "hint"}, HINT));
  }

  stepsOf(gi) {
    this.stepGroup = Math.max(gi, 0);
    const g = this.tl.groups[this.stepGroup];
    this.stepSel.replaceChildren(el("option", {value: ""}, "whole trace"), ...(g.steps || []).map((s) => el("option", {value: s.step}, `step ${s.step}`)));
  }

  toStep(step) {
    const g = this.tl.groups[this.stepGroup || 0];
    const s = (g.steps_v || []).find((x) => String(x.step) === String(step));
    if (!s) this.tl.fit(); else this.tl.show(s.a, s.b);
  }

  /** Show an event of group `gi` (a ref or a search match: row, track, ts_ns, dur_ns) and select it. */
  reveal(gi, ref) {
    const g = this.tl.groups[gi], a = ref.ts_ns - g.offset, dur = Math.max(ref.dur_ns || 0, 1);
    const span = Math.max(dur * 1.5, 20000);
    this.tl.setView(a + dur / 2 - span / 2, a + dur / 2 + span / 2);
    this.tl.later();
    this.tl.select(gi, ref.row, {track: ref.track, ts_ns: ref.ts_ns});
  }

  async runSearch(q) {
    const tl = this.tl;
    if (!q.trim()) { this.found = null; tl.search = null; this.hits.textContent = ""; tl.draw(); return null; }
    this.hits.textContent = "searching…";
    const answers = await Promise.all(tl.groups.map((g) => searchEvents(g.runId, g.rank, q)));
    if (tl !== this.tl) return null;
    const list = [];
    answers.forEach((ans, gi) => {
      const m = ans.matches, off = tl.groups[gi].offset;
      for (let i = 0; i < m.row.length; i++) list.push({gi, a: m.ts_ns[i] - off, dur: m.dur_ns[i], row: m.row[i], track: m.track[i], ts_ns: m.ts_ns[i], dur_ns: m.dur_ns[i]});
    });
    list.sort((p, r) => p.a - r.a || p.gi - r.gi);
    const total = answers.reduce((s, x) => s + x.total, 0);
    this.found = {q, list, i: -1, total, truncated: answers.some((x) => x.truncated), partial: answers.some((x) => x.partial)};
    tl.search = {q: q.toLowerCase(), marks: tl.groups.map((_, gi) => list.filter((m) => m.gi === gi))};
    this.hits.dataset.total = total;
    this.showCount();
    tl.draw();
    return this.found;
  }

  showCount() {
    const f = this.found;
    const of = f.truncated ? ` (first ${fmtNum(f.list.length)} by start)` : "";
    this.hits.textContent = f.total ? `${f.i >= 0 ? `${fmtNum(f.i + 1)} of ` : ""}${fmtNum(f.total)} match${f.total === 1 ? "" : "es"}${of}${f.partial ? " in this report" : ""}`
      : "no match";
    this.hits.dataset.index = f.i;
  }

  async step(dir) {
    const q = this.search.value;
    if (!this.found || this.found.q !== q) await this.runSearch(q);
    const f = this.found;
    if (!f || !f.list.length) return;
    if (f.i < 0) {
      const mid = (this.tl.a + this.tl.b) / 2;  // the first match from the middle of the view on (or before it)
      const k = f.list.findIndex((m) => m.a >= mid);
      f.i = dir > 0 ? (k < 0 ? 0 : k) : ((k < 0 ? f.list.length : k) - 1 + f.list.length) % f.list.length;
    } else f.i = (f.i + dir + f.list.length) % f.list.length;
    this.showCount();
    const m = f.list[f.i];
    this.reveal(m.gi, m);
  }
}
