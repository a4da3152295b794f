// The timeline canvas: one or more *groups* (a rank of a run) stacked on one time axis. Each group
// has an `offset` (absolute trace ns drawn at view time 0): all ranks of a run share one offset (one
// clock); two runs compared step to step get each its aligned step's start. The wheel zooms around
// the pointer, dragging pans, a click selects an event (its flows drawn from it only), a click on a
// track's or group's label collapses it. After each gesture every group fetches the window in view
// (aggregated buckets when wide, exact events when narrow). Names are drawn with fillText only.
//
// Times: the API speaks absolute trace ns; here everything is view ns (absolute − offset), Numbers.

import {timelineWindow} from "./data.js";
import {el, fmtNs, fmtTimeTick, fmtNum, kindColor, showTip, hideTip} from "./util.js";

export const GUTTER = 210;
const AXIS = 24, HEAD_H = 20, STEPS_H = 18, ROW = 15, MAX_ROWS = 10, GAP = 6, GPU_H = 26, ANNOT_H = 5, FOLD_H = 9;
const MIN_SPAN = 2000, FETCH_DELAY = 140, MAX_ITEMS = 4000;
const COMM = /nccl|rccl|hccl|gloo|allreduce|all_reduce|allgather|reduce_scatter|alltoall/i;
// a host op of a communication backend (gloo:all_reduce on its worker thread): the step breakdown counts
// it as communication (analysis/breakdown.py COMM_OPS), so it is drawn as communication
const COMM_OP = /^(nccl:|gloo:|c10d::|hccl:|rccl:)/;

export function eventColor(kind, name) {
  if (name && /DataLoader/.test(name)) return kindColor("dataloader");
  if (kind === "kernel" && name && COMM.test(name)) return kindColor("communication");
  if ((kind === "cpu_op" || kind === "user_annotation") && name && COMM_OP.test(name)) return kindColor("communication");
  return kindColor(kind);
}

export class TimelineCanvas {
  /** groups: [{key, runId, rank, label, offset, start_ns, end_ns, steps: [{step, start_ns, end_ns}]}] */
  constructor(groups, hooks = {}) {
    this.hooks = hooks;
    this.groups = groups.map((g) => ({...g, data: null, seq: 0}));
    this.multi = groups.length > 1;
    this.folded = new Set();
    this.sel = null;       // {gi, row, ev?, related: [{gi, row, track, ts_ns}]}
    this.search = null;    // {q, marks: [[{a, dur, row, track}]] per group}
    this.fetches = 0;
    this.canvas = el("canvas", {id: "timeline-canvas", tabindex: "0", "aria-label": "timeline"});
    this.wrap = el("div", {class: "tlwrap"}, this.canvas);
    this.status = el("span", {class: "tlstatus", id: "timeline-status"}, "loading…");
    this.setOffsets(groups.map((g) => g.offset), false);
    this.a = this.lo;
    this.b = this.hi;
    this.bind();
    requestAnimationFrame(() => this.fetchAll());
  }

  /** New offsets (a new aligned step): keeps the view's span, shows [lo, hi] again, refetches. */
  setOffsets(offsets, refetch = true) {
    this.groups.forEach((g, i) => { g.offset = offsets[i]; g.seq += 1; });  // windows in flight are stale
    this.lo = Math.min(...this.groups.map((g) => g.start_ns - g.offset));
    this.hi = Math.max(...this.groups.map((g) => g.end_ns - g.offset), this.lo + 1);
    for (const g of this.groups) g.steps_v = (g.steps || []).map((s) => ({step: s.step, a: s.start_ns - g.offset, b: s.end_ns - g.offset}));
    if (refetch) { for (const g of this.groups) g.data = null; this.later(); }
  }

  // ---- view changes ----
  setView(a, b) {
    const extent = this.hi - this.lo;
    const span = Math.min(Math.max(b - a, MIN_SPAN), extent);
    a = Math.max(this.lo, Math.min(a, this.hi - span));
    this.a = a;
    this.b = a + span;
    this.draw();
  }

  zoomBy(factor, anchor) {
    const t = anchor === undefined ? (this.a + this.b) / 2 : anchor;
    this.setView(t - (t - this.a) * factor, t + (this.b - t) * factor);
    this.later();
  }

  fit() { this.setView(this.lo, this.hi); this.later(); }

  /** Show [a, b] (view ns) with a little margin. */
  show(a, b) {
    const pad = Math.max((b - a) * 0.02, 500);
    this.setView(a - pad, b + pad);
    this.later();
  }

  later() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.fetchAll(), FETCH_DELAY);
  }

  async fetchAll() {
    const items = Math.max(1000, Math.round(MAX_ITEMS * (this.multi ? 1.5 : 1) / this.groups.length));
    this.status.textContent = "loading…";
    const offsets = this.groups.map((g) => g.offset).join(",");
    const got = await Promise.all(this.groups.map((g) => this.fetchGroup(g, items)));
    if (got.some((x) => x === "stale")) return;
    this.fetches += 1;
    this.canvas.dataset.fetchedOffsets = offsets;
    const ws = got.filter((w) => w && w.mode);
    const exact = ws.length && ws.every((w) => w.mode === "events");
    this.canvas.dataset.mode = exact ? "events" : "aggregate";
    this.canvas.dataset.modes = got.map((w) => (w && w.mode) || "").join(",");  // per group
    this.canvas.dataset.fetches = this.fetches;
    if (this.fetches === 1) this.canvas.dataset.firstDrawnAt = performance.now().toFixed(1);  // ms since navigation
    const n = ws.reduce((s, w) => s + w.event_count, 0);
    const errs = got.filter((x) => x instanceof Error);
    this.resolveSelection();
    this.status.textContent = errs.length ? `timeline unavailable: ${errs[0].message}`
      : `${fmtNs(this.b - this.a)} window · ${exact ? "exact" : "aggregated"} · ${fmtNum(n)} events`;
    this.draw();
    if (this.hooks.onData) this.hooks.onData(this);
  }

  async fetchGroup(g, items) {
    const seq = ++g.seq, offset = g.offset;
    const off = BigInt(Math.round(offset));
    try {
      const w = await timelineWindow(g.runId, g.rank, off + BigInt(Math.floor(this.a)), off + BigInt(Math.ceil(this.b)), items);
      if (seq !== g.seq) return "stale";
      g.data = prepare(w, offset);
      if (!g.shown) g.shown = new Set();
      for (const t of g.data.shown) g.shown.add(t);  // a lane once shown stays (no jumping layout)
      return w;
    } catch (err) {
      return seq === g.seq ? err : "stale";
    }
  }

  // ---- layout ----
  layout() {
    const lanes = [], heads = [];
    let y = AXIS;
    this.groups.forEach((g, gi) => {
      const fold = this.folded.has(g.key);
      if (this.multi) { heads.push({gi, y, h: HEAD_H, folded: fold}); y += HEAD_H; }
      if (fold) { y += 2; return; }
      g.stepsY = y; y += STEPS_H + 2;
      const tracks = g.data ? g.data.tracks : [];
      for (const t of tracks) {
        if (!g.shown.has(t.id)) continue;
        const gpu = t.kind === "gpu_stream", folded = this.folded.has(`${g.key}:${t.id}`);
        const rows = gpu ? 1 : Math.min(Math.max(t.max_depth + 1, 1), MAX_ROWS);
        const h = folded ? FOLD_H : gpu ? GPU_H : rows * ROW;
        lanes.push({gi, track: t, y, rows: folded ? 1 : rows, h, gpu, folded});
        y += h + 2;
      }
      y += GAP;
    });
    return {lanes, heads, height: y + 8};
  }

  x(t) { return GUTTER + ((t - this.a) / (this.b - this.a)) * (this.width - GUTTER); }
  t(x) { return this.a + ((x - GUTTER) / (this.width - GUTTER)) * (this.b - this.a); }

  // ---- drawing ----
  draw() {
    const t0 = performance.now();
    const L = this.lay = this.layout();
    const cssW = Math.max(this.wrap.clientWidth, 600), dpr = window.devicePixelRatio || 1;
    this.width = cssW;
    const w = Math.round(cssW * dpr), h = Math.round(L.height * dpr);
    if (this.canvas.width !== w || this.canvas.height !== h) {  // a resize reallocates the bitmap: only when it changed
      this.canvas.width = w;
      this.canvas.height = h;
      this.canvas.style.height = L.height + "px";
    }
    const g = this.canvas.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, cssW, L.height);
    g.font = "11px system-ui, sans-serif";
    this.drawAxis(g, L.height);
    this.drawn = {matches: 0, flows: 0};
    for (const h of L.heads) this.drawHead(g, h);
    this.groups.forEach((grp, gi) => { if (!this.folded.has(grp.key) && grp.stepsY !== undefined) this.drawSteps(g, grp, gi); });
    L.lanes.forEach((lane, i) => this.drawLane(g, lane, i));
    this.drawFlows(g, L);
    const c = this.canvas.dataset;
    c.view = `${this.a},${this.b}`;
    c.offsets = this.groups.map((grp) => grp.offset).join(",");
    c.layout = JSON.stringify({gutter: GUTTER, width: cssW, height: L.height, heads: L.heads,
      lanes: L.lanes.map((l) => ({g: l.gi, track: l.track.id, label: l.track.label, y: l.y, h: l.h, rows: l.rows, folded: l.folded})),
      steps: this.groups.map((grp) => grp.stepsY ?? null)});
    c.matches = this.drawn.matches;
    c.flows = this.drawn.flows;
    c.selected = this.sel ? `${this.sel.gi}:${this.sel.row}` : "";
    c.drawMs = (performance.now() - t0).toFixed(2);
  }

  drawAxis(g, h) {
    const span = this.b - this.a;
    const step = Math.pow(10, Math.floor(Math.log10(span / 6)));
    const tick = [1, 2, 5, 10].map((m) => m * step).find((s) => span / s <= 8) || step * 10;
    g.fillStyle = cssVar("--muted");
    g.strokeStyle = cssVar("--line");
    for (let t = Math.ceil(this.a / tick) * tick; t <= this.b; t += tick) {
      const x = this.x(t);
      if (x < GUTTER) continue;
      g.beginPath(); g.moveTo(x + 0.5, AXIS - 4); g.lineTo(x + 0.5, h); g.stroke();
      const label = fmtTimeTick(t, tick), w = g.measureText(label).width;
      g.fillText(label, x + 3 + w <= this.width - 2 ? x + 3 : x - 3 - w, AXIS - 8);  // the last one left of its tick, not clipped
    }
    g.fillText(this.hooks.axisLabel || "time since first event", 8, AXIS - 8);
  }

  drawHead(g, h) {
    g.fillStyle = cssVar("--row");
    g.fillRect(0, h.y, this.width, h.h - 2);
    g.fillStyle = cssVar("--ink");
    g.font = "bold 11.5px system-ui, sans-serif";
    g.fillText(`${h.folded ? "▸" : "▾"} ${this.groups[h.gi].label}`, 6, h.y + 13);
    g.font = "11px system-ui, sans-serif";
  }

  drawSteps(g, grp, gi) {
    const y = grp.stepsY;
    g.fillStyle = cssVar("--muted");
    g.fillText("steps", 14, y + 13);
    grp.steps_v.forEach((s, i) => {
      const x0 = Math.max(this.x(s.a), GUTTER), x1 = Math.min(this.x(s.b), this.width);
      if (x1 <= x0) return;
      g.fillStyle = i % 2 ? "rgba(59,91,219,.20)" : "rgba(59,91,219,.32)";
      g.fillRect(x0, y, x1 - x0, STEPS_H - 2);
      if (x1 - x0 > 50) { g.fillStyle = cssVar("--ink"); g.fillText(`step ${s.step}`, x0 + 4, y + 12); }
    });
    const marks = this.search && this.search.marks[gi];
    if (!marks) return;
    g.fillStyle = "#e8590c";  // search hits: ticks on the step strip, visible at any zoom
    for (const m of marks) {
      const x = this.x(m.a);
      if (x >= GUTTER && x <= this.width) g.fillRect(x - 1, y + STEPS_H - 6, 2, 6);
    }
  }

  drawLane(g, lane, i) {
    const grp = this.groups[lane.gi], d = grp.data;
    g.fillStyle = i % 2 ? cssVar("--row") : cssVar("--card");
    g.fillRect(GUTTER, lane.y, this.width - GUTTER, lane.h);
    g.fillStyle = cssVar("--ink");
    g.fillText(clip(g, `${lane.folded ? "▸" : "▾"} ${lane.track.label}`, GUTTER - 16), 14, lane.y + Math.min(11, lane.h - 1));
    g.save();
    g.beginPath(); g.rect(GUTTER, lane.y, this.width - GUTTER, lane.h); g.clip();
    if (d && d.mode === "events") this.drawEvents(g, d.byTrack.get(lane.track.id) || [], lane);
    else if (d) this.drawBuckets(g, d, d.agg.get(lane.track.id), lane);
    g.restore();
  }

  drawEvents(g, evs, lane) {
    const q = this.search ? this.search.q : null, sel = this.sel;
    for (const e of evs) {
      if (!lane.gpu && e.depth >= lane.rows) continue;
      const x0 = this.x(e.a), x1 = this.x(e.a + e.dur);
      if (x1 < GUTTER || x0 > this.width) continue;
      const w = Math.max(x1 - x0, 1);
      const [y, h] = rowBox(lane, e);
      const hit = q !== null && e.lname.includes(q);
      g.globalAlpha = q !== null && !hit ? 0.25 : 1;
      g.fillStyle = eventColor(e.kind, e.name);
      g.fillRect(x0, y, w, h);
      g.globalAlpha = 1;
      if (hit) { this.drawn.matches += 1; g.strokeStyle = "#e8590c"; g.lineWidth = 2; g.strokeRect(x0, y, w, h); g.lineWidth = 1; }
      if (sel && sel.gi === lane.gi && sel.row === e.row) { g.strokeStyle = "#10141c"; g.lineWidth = 2.5; g.strokeRect(x0 - 1, y - 1, w + 2, h + 2); g.lineWidth = 1; }
      if (w > 36 && h >= 11) {
        g.fillStyle = "#10141c";
        g.fillText(clip(g, e.name, w - 6), Math.max(x0, GUTTER) + 3, y + h / 2 + 4);
      }
    }
  }

  drawBuckets(g, d, agg, lane) {
    if (!agg) return;
    for (let k = 0; k < agg.busy_frac.length; k++) {
      const f = agg.busy_frac[k];
      if (!(f > 0)) continue;
      const x0 = this.x(d.edges[k]), x1 = this.x(d.edges[k + 1]);
      if (x1 < GUTTER || x0 > this.width) continue;
      const h = Math.max(2, Math.min(1, f) * lane.h);
      g.fillStyle = eventColor(agg.kind[k], agg.name[k]);
      g.fillRect(x0, lane.y + lane.h - h, Math.max(x1 - x0 - 0.5, 1), h);
    }
  }

  /** Where an event of a group is drawn: [x, y] of its middle, or null when its lane is not shown. */
  anchor(gi, row, track, ts) {
    const lane = this.lay.lanes.find((l) => l.gi === gi && l.track.id === track);
    if (!lane) return null;
    const d = this.groups[gi].data, e = d && d.byRow ? d.byRow.get(row) : null;
    const [y, h] = e ? rowBox(lane, e) : [lane.y, lane.h];
    return [this.x((e ? e.a : ts - this.groups[gi].offset)), y + h / 2];
  }

  /** Arrows from the selected event only: its launch call / launching op and the GPU work it launched. */
  drawFlows(g, L) {
    if (!this.sel) return;
    const s = this.sel;
    const from = this.anchor(s.gi, s.row, s.track, s.ts_ns);
    if (!from) return;
    g.strokeStyle = "rgba(214,51,108,.9)";
    g.fillStyle = "rgba(214,51,108,.9)";
    g.lineWidth = 1.5;
    for (const r of s.related) {
      const to = this.anchor(s.gi, r.row, r.track, r.ts_ns);
      if (!to) continue;
      const [p, q] = r.dir === "in" ? [to, from] : [from, to];
      g.beginPath();
      g.moveTo(p[0], p[1]);
      const my = (p[1] + q[1]) / 2;
      g.bezierCurveTo(p[0], my, q[0], my, q[0], q[1]);
      g.stroke();
      g.beginPath(); g.arc(q[0], q[1], 3, 0, 2 * Math.PI); g.fill();
      this.drawn.flows += 1;
    }
    g.lineWidth = 1;
  }

  // ---- interaction ----
  bind() {
    const c = this.canvas;
    c.addEventListener("wheel", (e) => {
      e.preventDefault();
      const x = e.clientX - c.getBoundingClientRect().left;
      if (x < GUTTER) return;
      this.zoomBy(Math.exp(Math.max(-300, Math.min(300, e.deltaY)) * 0.002), this.t(x));
    }, {passive: false});
    c.addEventListener("mousedown", (e) => { this.drag = {x: e.clientX, y: e.clientY, a: this.a, b: this.b}; c.classList.add("dragging"); });
    this.onUp = (e) => {
      if (!this.drag) return;
      const d = this.drag, moved = d.a !== this.a;
      this.drag = null; c.classList.remove("dragging");
      if (moved) this.later();
      else if (Math.abs(e.clientX - d.x) < 4 && Math.abs(e.clientY - d.y) < 4) this.click(e);
    };
    window.addEventListener("mouseup", this.onUp);
    c.addEventListener("mousemove", (e) => this.move(e));
    c.addEventListener("mouseleave", hideTip);
    c.addEventListener("dblclick", (e) => this.zoomBy(0.5, this.t(e.clientX - c.getBoundingClientRect().left)));
    window.addEventListener("resize", () => { if (this.canvas.isConnected) this.draw(); });
  }

  click(e) {
    const box = this.canvas.getBoundingClientRect();
    const x = e.clientX - box.left, y = e.clientY - box.top;
    if (x < GUTTER) return this.toggleAt(y);
    const hit = this.hit(x, y);
    if (hit && hit.ev) this.select(hit.gi, hit.ev.row);
    else if (this.sel) { this.sel = null; this.draw(); if (this.hooks.onSelect) this.hooks.onSelect(null); }
  }

  toggleAt(y) {
    const head = this.lay.heads.find((h) => y >= h.y && y < h.y + h.h);
    const lane = this.lay.lanes.find((l) => y >= l.y && y < l.y + l.h);
    const key = head ? this.groups[head.gi].key : lane ? `${this.groups[lane.gi].key}:${lane.track.id}` : null;
    if (key === null) return;
    if (this.folded.has(key)) this.folded.delete(key); else this.folded.add(key);
    this.draw();
  }

  /** Select the event `row` of group `gi` (outlined; its flows drawn once the details say what they are). */
  select(gi, row, info) {
    const d = this.groups[gi].data, e = d && d.byRow ? d.byRow.get(row) : null;
    this.sel = {gi, row, track: e ? e.track : info ? info.track : -1, ts_ns: e ? e.a + this.groups[gi].offset : info ? info.ts_ns : 0,
      ev: e, related: d ? windowFlows(d, row) : []};
    this.draw();
    if (this.hooks.onSelect) this.hooks.onSelect(this.sel, this.groups[gi]);
  }

  /** A selection made before its window arrived (a jump): find it and its window flows now. */
  resolveSelection() {
    const s = this.sel;
    if (!s || s.ev) return;
    const d = this.groups[s.gi].data, e = d && d.byRow ? d.byRow.get(s.row) : null;
    if (!e) return;
    s.ev = e;
    s.track = e.track;
    const seen = new Set(s.related.map((r) => r.row));
    for (const r of windowFlows(d, s.row)) if (!seen.has(r.row)) s.related.push(r);
  }

  /** The selected event's related events (from its details): arrows to them. */
  relate(list) {
    if (!this.sel) return;
    const seen = new Set(this.sel.related.map((r) => r.row));
    for (const r of list) if (!seen.has(r.row)) { this.sel.related.push(r); seen.add(r.row); }
    this.draw();
  }

  move(e) {
    const box = this.canvas.getBoundingClientRect();
    const x = e.clientX - box.left, y = e.clientY - box.top;
    if (this.drag) {
      const dt = ((e.clientX - this.drag.x) / (this.width - GUTTER)) * (this.drag.b - this.drag.a);
      if (Math.abs(e.clientX - this.drag.x) >= 4 || this.drag.a !== this.a) this.setView(this.drag.a - dt, this.drag.b - dt);
      hideTip();
      return;
    }
    const hit = this.hit(x, y);
    if (hit) showTip(e, hit.lines); else hideTip();
  }

  hit(x, y) {
    if (!this.lay || x < GUTTER) return null;
    const lane = this.lay.lanes.find((l) => y >= l.y && y < l.y + l.h);
    if (!lane) return null;
    const d = this.groups[lane.gi].data, t = this.t(x);
    if (!d) return null;
    if (d.mode === "events") {
      const slack = (this.b - this.a) / (this.width - GUTTER);
      const inRow = (v) => { const [top, h] = rowBox(lane, v); return (lane.gpu || v.depth < lane.rows) && y >= top - 1 && y <= top + h + 1; };
      const e = (d.byTrack.get(lane.track.id) || []).filter((v) => t >= v.a - slack && t <= v.a + v.dur + slack && inRow(v)).pop();
      return e ? {gi: lane.gi, ev: e, lines: [e.name, `${e.kind.replace(/_/g, " ")} · ${fmtNs(e.dur)}`, `starts at ${fmtNs(e.a)}`, lane.track.label, "click: details and flows"]} : null;
    }
    const agg = d.agg.get(lane.track.id), k = bucketOf(d.edges, t);
    if (!agg || k < 0 || !(agg.busy_frac[k] > 0)) return null;
    return {gi: lane.gi, ev: null, lines: [agg.name[k] || "(busy)", `${Math.round(agg.busy_frac[k] * 100)} % busy · ${fmtNum(agg.count[k])} events`,
      `mostly ${String(agg.kind[k] || "?").replace(/_/g, " ")} · ${fmtNs(d.edges[k])} – ${fmtNs(d.edges[k + 1])}`, lane.track.label, "zoom in to select events"]};
  }

  destroy() { window.removeEventListener("mouseup", this.onUp); }
}

/** A window in view ns: events by track and by row, aggregates by track. */
function prepare(w, offset) {
  const d = {mode: w.mode, tracks: w.tracks || [], edges: (w.bucket_edges_ns || []).map((x) => x - offset),
    byTrack: new Map(), byRow: new Map(), agg: new Map(), flows: w.flows || [], shown: new Set()};
  const ev = w.events;
  if (ev) {
    for (let i = 0; i < ev.track.length; i++) {
      const t = ev.track[i], name = ev.name[i] || "";
      if (!d.byTrack.has(t)) d.byTrack.set(t, []);
      const e = {a: ev.ts_ns[i] - offset, dur: ev.dur_ns[i], kind: ev.kind[i], name, lname: name.toLowerCase(), depth: ev.depth[i],
        row: ev.row[i], track: t, step: ev.step ? ev.step[i] : -1, op: ev.op ? ev.op[i] : -1, ts_ns: ev.ts_ns[i]};
      d.byTrack.get(t).push(e);
      d.byRow.set(e.row, e);
    }
  }
  for (const g of w.aggregate || []) if (g.busy_frac.some((x) => x > 0)) d.agg.set(g.track, g);
  for (const t of d.tracks) if (d.byTrack.has(t.id) || d.agg.has(t.id)) d.shown.add(t.id);
  return d;
}

/** The window's launch → GPU flows that start or end at `row`. */
export function windowFlows(d, row) {
  const out = [];
  for (const f of d.flows) {
    if (f.from_row === row) out.push({row: f.to_row, track: f.to_track, ts_ns: f.to_ts_ns, dir: "out"});
    else if (f.to_row === row) out.push({row: f.from_row, track: f.from_track, ts_ns: f.from_ts_ns, dir: "in"});
  }
  return out;
}

/** Where an event sits in its lane: nested rows on CPU threads; on GPU streams annotations are a thin
 *  band on top so the kernels under them stay visible; a folded lane squeezes everything into one band. */
function rowBox(lane, e) {
  if (lane.folded) return [lane.y + 1, lane.h - 2];
  if (!lane.gpu) return [lane.y + e.depth * ROW + 1, ROW - 2];
  if (e.kind === "gpu_user_annotation") return [lane.y, ANNOT_H - 1];
  return [lane.y + ANNOT_H, lane.h - ANNOT_H - 1];
}

function bucketOf(edges, t) {
  let lo = 0, hi = edges.length - 2;
  if (hi < 0 || t < edges[0] || t > edges[edges.length - 1]) return -1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (edges[mid] <= t) lo = mid; else hi = mid - 1;
  }
  return lo;
}

function clip(g, text, width) {
  text = String(text ?? "");
  if (g.measureText(text).width <= width) return text;
  let lo = 0, hi = text.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (g.measureText(text.slice(0, mid) + "…").width <= width) lo = mid; else hi = mid - 1;
  }
  return lo > 0 ? text.slice(0, lo) + "…" : "";
}

const varCache = new Map();
function cssVar(name) {
  if (!varCache.has(name)) varCache.set(name, getComputedStyle(document.documentElement).getPropertyValue(name).trim() || "#888");
  return varCache.get(name);
}
