// The zoomable timeline: a canvas of CPU threads and GPU streams for one rank. The wheel zooms
// around the pointer, dragging pans, double-click zooms in; after each gesture the window in view
// is fetched from /timeline (aggregated buckets when wide, exact events when narrow). Names are
// drawn with fillText and shown in the tooltip with textContent: never parsed as markup.
//
// Times: the API speaks absolute trace ns (int64); here everything is kept relative to the rank's
// first event (`base`), so Numbers stay exact even for epoch-ns traces.

import {legend} from "./charts.js";
import {runInfo, timelineWindow, timelineSnapshot, SERVE_HINT} from "./data.js";
import {el, card, fmtNs, fmtTimeTick, fmtNum, kindColor, showTip, hideTip} from "./util.js";

const GUTTER = 200, AXIS = 24, STEPS_H = 18, ROW = 15, MAX_ROWS = 10, COUNTER_H = 30, GAP = 6, GPU_H = 26, ANNOT_H = 5;
const MAX_FLOWS = 400;
const LEGEND = [["cpu_op", "CPU op"], ["python_function", "Python"], ["user_annotation", "annotation"],
  ["runtime", "runtime API"], ["dataloader", "DataLoader"], ["kernel", "kernel"], ["communication", "communication"],
  ["memcpy", "memcpy"], ["memset", "memset"]].map(([k, label]) => [k, label, kindColor(k)]);
const MIN_SPAN = 2000, MAX_ITEMS = 4000, FETCH_DELAY = 140;
const COMM = /nccl|rccl|hccl|gloo|allreduce|all_reduce|allgather|reduce_scatter|alltoall/i;

function eventColor(kind, name) {
  if (name && /DataLoader/.test(name)) return kindColor("dataloader");
  if (kind === "kernel" && name && COMM.test(name)) return kindColor("communication");
  return kindColor(kind);
}

export async function timelineView(ctx) {
  const info = await runInfo(ctx.runId);
  const mine = (info.ranks || []).find((r) => r.rank === ctx.rank);
  const snap = timelineSnapshot(ctx.rank);
  if (!mine || (snap && !snap.windows.length)) {
    return [card("timeline", "Timeline", null, snap ? el("p", {class: "empty", id: "timeline-snapshot"},
      `This report carries no timeline for rank ${ctx.rank} (${SERVE_HINT}).`) : el("p", {class: "empty"}, "no events on this rank"))];
  }
  const tl = new Timeline(ctx, mine);
  const steps = el("select", {id: "timeline-step", "aria-label": "jump to step", on: {change: (e) => tl.toStep(e.target.value)}},
    el("option", {value: ""}, "whole trace"), mine.steps.map((s) => el("option", {value: s.step}, `step ${s.step}`)));
  const bar = el("div", {class: "tlbar"},
    el("button", {type: "button", title: "zoom out", on: {click: () => tl.zoomBy(2)}}, "−"),
    el("button", {type: "button", title: "zoom in", on: {click: () => tl.zoomBy(0.5)}}, "+"),
    el("button", {type: "button", title: "show everything", on: {click: () => { steps.value = ""; tl.fit(); }}}, "fit"),
    steps, tl.status, el("span", {class: "hint"}, "wheel: zoom · drag: pan · double-click: zoom in"));
  if (snap && snap.step !== null && snap.step !== undefined) {
    steps.value = String(snap.step);
    requestAnimationFrame(() => tl.toStep(snap.step));
  }
  const all = snap && snap.windows[0].mode === "events";
  const note = snap ? el("p", {class: "note", id: "timeline-snapshot"}, all ? "This report carries every event of this rank."
    : `This report carries ${snap.step !== null && snap.step !== undefined ? `step ${snap.step}'s events exactly and ` : ""}`
      + `the whole rank aggregated; other windows show the nearest of these (${SERVE_HINT}).`) : null;
  return [card("timeline", `Timeline — rank ${ctx.rank}`, "CPU threads and GPU streams; aggregated when zoomed out, exact events when zoomed in.",
    note, bar, legend(LEGEND), tl.wrap)];
}

class Timeline {
  constructor(ctx, info) {
    this.ctx = ctx;
    this.base = info.start_ns;
    this.extent = Math.max(info.end_ns - info.start_ns, 1);
    this.stepList = info.steps.map((s) => ({step: s.step, a: s.start_ns - this.base, b: s.end_ns - this.base}));
    this.a = 0;
    this.b = this.extent;
    this.data = null;
    this.seq = 0;
    this.fetches = 0;
    this.shown = new Set();
    this.canvas = el("canvas", {id: "timeline-canvas", tabindex: "0", "aria-label": "timeline"});
    this.status = el("span", {class: "tlstatus", id: "timeline-status"}, "loading…");
    this.wrap = el("div", {class: "tlwrap"}, this.canvas);
    this.bind();
    requestAnimationFrame(() => this.fetch());
  }

  // ---- view changes ----
  setView(a, b) {
    let span = Math.min(Math.max(b - a, MIN_SPAN), this.extent);
    a = Math.max(0, Math.min(a, this.extent - span));
    this.a = a;
    this.b = a + span;
    this.draw();
  }

  zoomBy(factor, anchor) {
    const t = anchor === undefined ? (this.a + this.b) / 2 : anchor;
    this.setView(t - (t - this.a) * factor, t + (this.b - t) * factor);
    this.later();
  }

  fit() { this.setView(0, this.extent); this.later(); }

  toStep(step) {
    const s = this.stepList.find((x) => String(x.step) === String(step));
    if (!s) { this.fit(); return; }
    const pad = (s.b - s.a) * 0.02;
    this.setView(s.a - pad, s.b + pad);
    this.later();
  }

  later() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.fetch(), FETCH_DELAY);
  }

  async fetch() {
    const seq = ++this.seq;
    const start = BigInt(Math.round(this.base)) + BigInt(Math.floor(this.a));
    const end = BigInt(Math.round(this.base)) + BigInt(Math.ceil(this.b));
    this.status.textContent = "loading…";
    try {
      const w = await timelineWindow(this.ctx.runId, this.ctx.rank, start, end, MAX_ITEMS);
      if (seq !== this.seq) return;
      this.fetches += 1;
      this.data = this.prepare(w);
      this.canvas.dataset.mode = w.mode;
      this.canvas.dataset.fetches = this.fetches;
      this.canvas.dataset.span = String(w.end_ns - w.start_ns);
      const what = w.mode === "events" ? `exact · ${fmtNum(w.event_count)} events`
        : `aggregated · ${fmtNum(w.event_count)} events in ${fmtNum(w.bucket_edges_ns.length - 1)} buckets`;
      this.status.textContent = `${fmtNs(w.end_ns - w.start_ns)} window · ${what}`;
      this.draw();
    } catch (err) {
      if (seq === this.seq) this.status.textContent = `timeline unavailable: ${err.message}`;
    }
  }

  prepare(w) {
    const base = this.base;
    const d = {mode: w.mode, tracks: w.tracks || [], edges: (w.bucket_edges_ns || []).map((x) => x - base),
      steps: (w.steps || []).map((s) => ({step: s.step, a: s.start_ns - base, b: s.end_ns - base})),
      byTrack: new Map(), agg: new Map(), flows: w.flows || [], counters: w.counters || {}};
    const ev = w.events;
    if (ev) {
      for (let i = 0; i < ev.track.length; i++) {
        const t = ev.track[i];
        if (!d.byTrack.has(t)) d.byTrack.set(t, []);
        d.byTrack.get(t).push({a: ev.ts_ns[i] - base, dur: ev.dur_ns[i], kind: ev.kind[i], name: ev.name[i], depth: ev.depth[i]});
      }
    }
    for (const g of w.aggregate || []) if (g.busy_frac.some((x) => x > 0)) d.agg.set(g.track, g);
    for (const t of d.tracks) if (d.byTrack.has(t.id) || d.agg.has(t.id)) this.shown.add(t.id);
    d.lanes = this.layout(d.tracks);
    return d;
  }

  layout(tracks) {
    const lanes = [];
    let y = AXIS + STEPS_H + GAP;
    const order = [...tracks].sort((p, q) => (p.kind === "gpu_stream") - (q.kind === "gpu_stream"));
    for (const t of order) {
      if (!this.shown.has(t.id)) continue;
      const gpu = t.kind === "gpu_stream";
      const rows = gpu ? 1 : Math.min(Math.max(t.max_depth + 1, 1), MAX_ROWS);
      const h = gpu ? GPU_H : rows * ROW;
      lanes.push({track: t, y, rows, h, gpu});
      y += h + GAP;
    }
    return lanes;
  }

  // ---- drawing ----
  x(t) { return GUTTER + ((t - this.a) / (this.b - this.a)) * (this.width - GUTTER); }
  t(x) { return this.a + ((x - GUTTER) / (this.width - GUTTER)) * (this.b - this.a); }

  draw() {
    const d = this.data;
    const cssW = Math.max(this.wrap.clientWidth, 600);
    const devices = d ? (d.counters.gpu_util_pct || []) : [];
    const lanesEnd = d && d.lanes.length ? d.lanes[d.lanes.length - 1].y + d.lanes[d.lanes.length - 1].h : AXIS + STEPS_H + 40;
    const cssH = lanesEnd + GAP + devices.length * (COUNTER_H + GAP) + 8;
    const dpr = window.devicePixelRatio || 1;
    this.width = cssW;
    this.canvas.width = Math.round(cssW * dpr);
    this.canvas.height = Math.round(cssH * dpr);
    this.canvas.style.height = cssH + "px";
    const g = this.canvas.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, cssW, cssH);
    g.font = "11px system-ui, sans-serif";
    this.drawAxis(g, cssH);
    if (!d) return;
    this.drawSteps(g, d);
    d.lanes.forEach((lane, i) => this.drawLane(g, d, lane, i));
    if (d.mode === "events") this.drawFlows(g, d);
    devices.forEach((c, i) => this.drawCounter(g, d, c, lanesEnd + GAP + i * (COUNTER_H + GAP)));
    this.counterTop = lanesEnd + GAP;
  }

  drawAxis(g, h) {
    const span = this.b - this.a;
    const step = Math.pow(10, Math.floor(Math.log10(span / 6)));
    const tickStep = [1, 2, 5, 10].map((m) => m * step).find((s) => span / s <= 8) || step * 10;
    g.fillStyle = cssVar("--muted");
    g.strokeStyle = cssVar("--line");
    for (let t = Math.ceil(this.a / tickStep) * tickStep; t <= this.b; t += tickStep) {
      const x = this.x(t);
      if (x < GUTTER) continue;
      g.beginPath(); g.moveTo(x + 0.5, AXIS - 4); g.lineTo(x + 0.5, h); g.stroke();
      g.fillText(fmtTimeTick(t, tickStep), x + 3, AXIS - 8);
    }
    g.fillStyle = cssVar("--muted");
    g.fillText("time since first event", 8, AXIS - 8);
  }

  drawSteps(g, d) {
    const y = AXIS;
    g.fillStyle = cssVar("--ink");
    g.fillText("steps", 8, y + 13);
    d.steps.forEach((s, i) => {
      const x0 = Math.max(this.x(s.a), GUTTER), x1 = Math.min(this.x(s.b), this.width);
      if (x1 <= x0) return;
      g.fillStyle = i % 2 ? "rgba(59,91,219,.20)" : "rgba(59,91,219,.32)";
      g.fillRect(x0, y, x1 - x0, STEPS_H - 2);
      if (x1 - x0 > 50) { g.fillStyle = cssVar("--ink"); g.fillText(`step ${s.step}`, x0 + 4, y + 12); }
    });
  }

  drawLane(g, d, lane, i) {
    g.fillStyle = i % 2 ? cssVar("--row") : cssVar("--card");
    g.fillRect(GUTTER, lane.y, this.width - GUTTER, lane.h);
    g.fillStyle = cssVar("--ink");
    g.fillText(clip(g, lane.track.label, GUTTER - 12), 8, lane.y + 11);
    g.save();
    g.beginPath(); g.rect(GUTTER, lane.y, this.width - GUTTER, lane.h); g.clip();
    if (d.mode === "events") this.drawEvents(g, d.byTrack.get(lane.track.id) || [], lane);
    else this.drawBuckets(g, d, d.agg.get(lane.track.id), lane);
    g.restore();
  }

  drawEvents(g, evs, lane) {
    for (const e of evs) {
      if (!lane.gpu && e.depth >= lane.rows) continue;
      const x0 = this.x(e.a), x1 = this.x(e.a + e.dur);
      if (x1 < GUTTER || x0 > this.width) continue;
      const w = Math.max(x1 - x0, 1);
      const [y, h] = rowBox(lane, e);
      g.fillStyle = eventColor(e.kind, e.name);
      g.fillRect(x0, y, w, h);
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

  drawFlows(g, d) {
    if (d.flows.length > MAX_FLOWS) return;
    const laneOf = new Map(d.lanes.map((l) => [l.track.id, l]));
    g.strokeStyle = "rgba(214,51,108,.28)";
    for (const f of d.flows) {
      const p = laneOf.get(f.from_track), q = laneOf.get(f.to_track);
      if (!p || !q) continue;
      g.beginPath();
      g.moveTo(this.x(f.from_ts_ns - this.base), p.y + p.h - 2);
      g.lineTo(this.x(f.to_ts_ns - this.base), q.y + 2);
      g.stroke();
    }
  }

  drawCounter(g, d, c, y) {
    g.fillStyle = cssVar("--ink");
    g.fillText(`GPU ${c.device} utilization`, 8, y + 12);
    g.fillStyle = cssVar("--row");
    g.fillRect(GUTTER, y, this.width - GUTTER, COUNTER_H);
    g.fillStyle = "rgba(76,120,168,.75)";
    for (let k = 0; k < c.values.length; k++) {
      const v = c.values[k];
      if (!(v > 0)) continue;
      const x0 = this.x(d.edges[k]), x1 = this.x(d.edges[k + 1]);
      const h = (Math.min(v, 100) / 100) * COUNTER_H;
      g.fillRect(x0, y + COUNTER_H - h, Math.max(x1 - x0, 1), h);
    }
  }

  // ---- interaction ----
  bind() {
    const c = this.canvas;
    c.addEventListener("wheel", (e) => {
      e.preventDefault();
      const box = c.getBoundingClientRect();
      const x = e.clientX - box.left;
      if (x < GUTTER) return;
      this.zoomBy(Math.exp(Math.max(-300, Math.min(300, e.deltaY)) * 0.002), this.t(x));
    }, {passive: false});
    c.addEventListener("mousedown", (e) => { this.drag = {x: e.clientX, a: this.a, b: this.b}; c.classList.add("dragging"); });
    window.addEventListener("mouseup", () => {
      if (!this.drag) return;
      const moved = this.drag.a !== this.a;
      this.drag = null; c.classList.remove("dragging");
      if (moved) this.later();
    });
    c.addEventListener("mousemove", (e) => this.move(e));
    c.addEventListener("mouseleave", hideTip);
    c.addEventListener("dblclick", (e) => this.zoomBy(0.5, this.t(e.clientX - c.getBoundingClientRect().left)));
    window.addEventListener("resize", () => { if (this.canvas.isConnected) this.draw(); });
  }

  move(e) {
    const box = this.canvas.getBoundingClientRect();
    const x = e.clientX - box.left, y = e.clientY - box.top;
    if (this.drag) {
      const dt = ((e.clientX - this.drag.x) / (this.width - GUTTER)) * (this.drag.b - this.drag.a);
      this.setView(this.drag.a - dt, this.drag.b - dt);
      hideTip();
      return;
    }
    const lines = this.hit(x, y);
    if (lines) showTip(e, lines); else hideTip();
  }

  hit(x, y) {
    const d = this.data;
    if (!d || x < GUTTER) return null;
    const t = this.t(x);
    const lane = d.lanes.find((l) => y >= l.y && y < l.y + l.h);
    if (!lane) return null;
    if (d.mode === "events") {
      const slack = (this.b - this.a) / (this.width - GUTTER);
      const inRow = (v) => { const [top, h] = rowBox(lane, v); return (lane.gpu || v.depth < lane.rows) && y >= top && y <= top + h; };
      const e = (d.byTrack.get(lane.track.id) || []).filter((v) => t >= v.a - slack && t <= v.a + v.dur + slack && inRow(v)).pop();
      return e ? [e.name, `${e.kind.replace(/_/g, " ")} · ${fmtNs(e.dur)}`, `starts at ${fmtNs(e.a)}`, lane.track.label] : null;
    }
    const agg = d.agg.get(lane.track.id);
    const k = bucketOf(d.edges, t);
    if (!agg || k < 0 || !(agg.busy_frac[k] > 0)) return null;
    return [agg.name[k] || "(busy)", `${Math.round(agg.busy_frac[k] * 100)} % busy · ${fmtNum(agg.count[k])} events`,
      `mostly ${String(agg.kind[k] || "?").replace(/_/g, " ")} · ${fmtNs(d.edges[k])} – ${fmtNs(d.edges[k + 1])}`, lane.track.label];
  }
}

/** Where an event sits in its lane: nested rows on CPU threads; on GPU streams annotations are a thin
 *  band on top so the kernels under them stay visible. */
function rowBox(lane, e) {
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
