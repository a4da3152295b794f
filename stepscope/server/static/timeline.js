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
const DEVICE_KINDS = new Set(["runtime", "kernel", "memcpy", "memset"]);
const HINT = "wheel: zoom · drag: pan · click: details & flows · click a label: collapse";
const LAST_NS = (1n << 62n) - 1n;  // "before the end": the last page of matches
let allRanks = false;  // the "all ranks" choice survives switching views

export async function timelineView(ctx) {
  const info = await runInfo(ctx.runId);
  const ranks = info.ranks || [];
  const mine = ranks.find((r) => r.rank === ctx.rank);
  const snap = timelineSnapshot(ctx.rank);
  if (!mine || (snap && !snap.windows.length)) {
    return [card("timeline", "Timeline", null, snap ? el("p", {class: "empty", id: "timeline-snapshot"},
      `This report carries no timeline for rank ${ctx.rank} (${SERVE_HINT} to see it).`) : el("p", {class: "empty"}, "no events on this rank"))];
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
  // the title names what is drawn: the rank, or every rank on one axis
  const heading = () => `Timeline — ${allRanks && carried.length > 1 ? `all ${carried.length} ranks` : `rank ${ctx.rank}`}`;
  let section = null;
  const toggle = carried.length > 1 ? el("label", {class: "tlcheck"}, el("input", {type: "checkbox", id: "timeline-all-ranks", checked: allRanks,
    on: {change: (e) => { allRanks = e.target.checked; build(); section.querySelector("h2").textContent = heading(); }}}),
  ` all ${carried.length} ranks on one axis`) : null;
  build();
  if (snap && snap.step !== null && snap.step !== undefined) {
    ui.stepSel.value = String(snap.step);
    requestAnimationFrame(() => ui.toStep(snap.step));
  }
  const all = snap && snap.windows[0].mode === "events";
  const stepText = snap && snap.step !== null && snap.step !== undefined ? `step ${snap.step}'s events exactly, with their details, and ` : "";
  const note = snap ? el("p", {class: "note", id: "timeline-snapshot"}, all
    ? "This report carries every event of this rank, with its details: search finds any of them."
    : `This report carries ${stepText}the whole rank aggregated; other windows show the nearest of these, and search finds `
      + `events in what it carries (${SERVE_HINT} for the rest).`) : null;
  // a CPU-only run: its threads alone, and no device kinds in the legend
  const cpu = Boolean(ctx.run?.cpu_only);
  section = card("timeline", heading(), `${cpu ? "CPU threads" : "CPU threads and GPU streams"}; aggregated when zoomed out, `
    + "exact events when zoomed in.", note, ui.bar(toggle), legend(cpu ? LEGEND.filter(([k]) => !DEVICE_KINDS.has(k)) : LEGEND),
  host, ui.panel.node);
  return [section];
}

/** Two runs' timelines, one above the other, aligned at the start of their k-th steps (step to step).
 *  On multi-rank runs a picker shows another rank of both runs, or every rank stacked (BASE's ranks,
 *  then NEW's), each rank's k-th step at the same x. */
export async function alignedTimelines(base, next, labels, ranks = [null, null]) {
  const id = "diff-timeline", title = "Timelines, step to step";
  const [ib, inew] = await Promise.all([runInfo(base), runInfo(next)]);
  const usable = (info, run) => (info.ranks || []).filter((r) => r.steps.length && (!standalone || timelineSnapshot(r.rank, run).windows.length));
  const lb = usable(ib, base), ln = usable(inew, next);
  const side = (list, r) => list.find((x) => x.rank === r) || list[0];  // the diff's compared rank
  const rb = side(lb, ranks[0]), rn = side(ln, ranks[1]);
  if (standalone && (!rb || !rn)) return card(id, title, null, el("p", {class: "empty", id: "aligned-missing"}, `This report carries no timelines (open both traces with \`stepscope serve\` to see them).`));
  if (!rb || !rn) return card(id, title, null, el("p", {class: "empty"}, "one of the runs has no steps to align"));
  // the choices: the compared pair, each other rank that both runs have, every common rank stacked
  const common = lb.filter((r) => ln.some((x) => x.rank === r.rank) && !(r.rank === rb.rank && r.rank === rn.rank));
  const choices = [{label: rb.rank === rn.rank ? `rank ${rb.rank}` : `rank ${rb.rank} ↔ rank ${rn.rank}`, pairs: [[rb, rn]]},
    ...common.map((r) => ({label: `rank ${r.rank}`, pairs: [[r, side(ln, r.rank)]]}))];
  const every = lb.filter((r) => ln.some((x) => x.rank === r.rank)).map((r) => [r, side(ln, r.rank)]);
  if (every.length > 1) choices.push({label: `all ${every.length} ranks stacked`, pairs: every});
  const host = el("div", {class: "tlhost"});
  const ui = new TimelineUI(host);
  const stepSel = el("select", {id: "aligned-step", "aria-label": "align at step"});
  const rankSel = choices.length > 1 ? el("select", {id: "aligned-rank", "aria-label": "ranks shown"},
    choices.map((c, i) => el("option", {value: i}, c.label))) : null;
  let groups = [];
  const align = (k) => {
    ui.tl.setOffsets(groups.map((g) => g.steps[k].start_ns));
    ui.tl.show(0, Math.max(...groups.map((g) => g.steps[k].end_ns - g.steps[k].start_ns)));
    ui.tl.canvas.dataset.aligned = k;
    ui.tl.canvas.dataset.ranks = groups.map((g) => `${g.key}`).join(",");
  };
  const build = (c, want) => {
    const group = (tag, run, label, r) => ({key: `${tag}${r.rank}`, runId: run, rank: r.rank, label: `${tag.toUpperCase()} · ${label} · rank ${r.rank}`,
      start_ns: r.start_ns, end_ns: r.end_ns, steps: r.steps});
    groups = [...c.pairs.map(([b]) => group("base", base, labels[0], b)), ...c.pairs.map(([, n]) => group("new", next, labels[1], n))];
    const pairs = Math.min(...groups.map((g) => g.steps.length));
    const [sb, sn] = [groups[0], groups[groups.length - 1]];
    const keep = Math.min(want ?? Number(stepSel.value || 0), pairs - 1);
    stepSel.replaceChildren(...[...Array(pairs).keys()].map((k) => el("option", {value: k}, `step ${sb.steps[k].step} ↔ step ${sn.steps[k].step}`)));
    ui.mount(groups.map((g) => ({...g, offset: g.steps[0].start_ns})), "since step start");
    stepSel.value = String(keep);
    requestAnimationFrame(() => align(Number(stepSel.value)));
  };
  stepSel.addEventListener("change", () => align(Number(stepSel.value)));
  if (rankSel) rankSel.addEventListener("change", () => build(choices[Number(rankSel.value)]));
  const carried = standalone ? rb.steps.findIndex((s) => s.step === timelineSnapshot(rb.rank, base).step) : -1;
  build(choices[0], Math.max(carried, 0));  // a report: the step pair whose events it carries
  return card(id, title, `BASE above NEW, each side's compared rank${rankSel ? " (or another rank, or every rank stacked)" : ""}; `
    + "step N of each starts at 0, so the two steps' work can be compared "
    + "at the same scale (a shorter NEW step ends earlier). Pick the step pair to align."
    + (standalone ? ` This report carries one step pair's events exactly, the rest aggregated (open both traces with \`stepscope serve\` for every step).` : ""),
  el("div", {class: "tlbar"}, el("label", null, "align at ", stepSel), rankSel ? el("label", null, " ranks ", rankSel) : null),
  ui.bar(null, false), legend(LEGEND), host, ui.panel.node);
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
    this.sseq = 0;
    this.found = null;  // {q, list: [{gi, a, row, track, ts_ns, dur_ns}] by view time, i, total, skipped}
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

  /** One page of matches per group, merged by view time: from view time `at` on (dir > 0) or before it
   *  (dir < 0); `at` null: from the first match; Infinity: up to the last. */
  async fetchPage(q, at, dir) {
    const tl = this.tl;
    const abs = (g) => (at === null ? null : at === Infinity ? LAST_NS : BigInt(Math.round(g.offset)) + BigInt(Math.round(at)));
    const answers = await Promise.all(tl.groups.map((g) => searchEvents(g.runId, g.rank, q, dir > 0 ? abs(g) : null, dir < 0 ? abs(g) : null)));
    if (tl !== this.tl) return null;
    let list = [];
    answers.forEach((ans, gi) => {
      const m = ans.matches, off = tl.groups[gi].offset;
      for (let i = 0; i < m.row.length; i++) list.push({gi, a: m.ts_ns[i] - off, row: m.row[i], track: m.track[i], ts_ns: m.ts_ns[i], dur_ns: m.dur_ns[i]});
    });
    list.sort((p, r) => p.a - r.a || p.gi - r.gi);
    // several ranks: keep the stretch every rank's page covers (a rank's page may stop earlier than another's)
    const ends = answers.map((ans, gi) => list.filter((m) => m.gi === gi));
    const cutHi = Math.min(...ends.map((l, gi) => (answers[gi].truncated && l.length ? l[l.length - 1].a : Infinity)));
    const cutLo = Math.max(...ends.map((l, gi) => (answers[gi].skipped > 0 && l.length ? l[0].a : -Infinity)));
    const dropped = list.filter((m) => m.a < cutLo).length;
    list = list.filter((m) => m.a >= cutLo && m.a <= cutHi);
    const total = answers.reduce((n, x) => n + x.total, 0);
    const skipped = answers.reduce((n, x) => n + x.skipped, 0) + dropped;
    return {q, list, i: -1, total, skipped, partial: answers.some((x) => x.partial)};
  }

  show(found) {
    const tl = this.tl;
    this.found = found;
    tl.search = found ? {q: found.q.toLowerCase(), marks: tl.groups.map((_, gi) => found.list.filter((m) => m.gi === gi))} : null;
    this.hits.dataset.total = found ? found.total : "";
    this.showCount();
    tl.draw();
  }

  async runSearch(q) {
    const seq = ++this.sseq;
    if (!q.trim()) { this.show(null); return null; }
    this.hits.textContent = "searching…";
    const found = await this.fetchPage(q, this.tl.a, 1);
    if (found && seq === this.sseq) this.show(found);
    return seq === this.sseq ? found : null;
  }

  showCount() {
    const f = this.found;
    if (!f) { this.hits.textContent = ""; this.hits.dataset.index = ""; return; }
    const at = f.i >= 0 ? f.skipped + f.i : -1;
    this.hits.textContent = f.total ? `${at >= 0 ? `${fmtNum(at + 1)} of ` : ""}${fmtNum(f.total)} match${f.total === 1 ? "" : "es"}${f.partial ? " in this report" : ""}`
      : "no match";
    this.hits.dataset.index = at;
  }

  /** The next (dir 1) or previous (-1) match from the selected one, else from the middle of the view;
   *  pages are fetched on demand (the page in hand when the match is on it), and the ends wrap around. */
  async step(dir) {
    const q = this.search.value;
    if (!this.found || this.found.q !== q) await this.runSearch(q);
    const seq = ++this.sseq;  // a later search or step makes this one's answers stale
    let f = this.found;
    if (!f || f.q !== q || !f.total) return;
    const cur = f.i >= 0 ? f.list[f.i] : null;
    let k = cur ? f.i + dir : -1;
    if (k < 0 || k >= f.list.length) {  // off this page: the page that way from here, else wrap around
      const at = cur ? (dir > 0 ? cur.a + 1 : cur.a) : (this.tl.a + this.tl.b) / 2;
      const more = !cur || (dir > 0 ? f.skipped + f.list.length < f.total : f.skipped > 0);
      f = more ? await this.fetchPage(q, at, dir) : null;
      if (f && !f.list.length) f = null;
      if (!f && seq === this.sseq) f = await this.fetchPage(q, dir > 0 ? null : Infinity, dir);
      if (!f || !f.list.length || seq !== this.sseq) return;
      k = dir > 0 ? 0 : f.list.length - 1;
    }
    f.i = k;
    this.show(f);
    const m = f.list[k];
    this.reveal(m.gi, m);
  }
}
