// The "Memory snapshot" view of an allocator snapshot run (kind "snapshot": a
// torch.cuda.memory._dump_snapshot pickle). The server holds the snapshot; the page holds only
//   GET /api/v1/runs/<id>/snapshot                         the summary (`stepscope memory --json`)
//   GET /api/v1/runs/<id>/snapshot/curve?device&start_ms&end_ms&points
//                                                          one window of the live-bytes curve, at most
//                                                          `points` points (each its bucket's maximum)
//   GET /api/v1/runs/<id>/snapshot/allocations?device&offset&limit
//                                                          a page of the allocations live at the peak
// Zooming (wheel over the curve, or the buttons) asks for the narrower window at the same number of
// points: a finer level of detail, never the whole history. A picker switches between the devices
// that have a history. In a standalone report (`report --snapshot FILE`) the same answers come from
// the file: the whole curve and a few windows around each device's peak, the largest allocations.

import {el, clear, card, empty, fmtMs, fmtNum, fmtBytes} from "./util.js";
import {lineChart, legend} from "./charts.js";
import {snapshotSummary, snapshotCurve, snapshotAllocations, standalone, SNAPSHOT_HINT} from "./data.js";

const POINTS = 800;
const PAGE = 25;
const MIN_SPAN_MS = 0.01;
// the line chart's plot area in its 960-wide viewBox (charts.js lineChart)
const PLOT = {W: 960, left: 72, right: 40};

function stat(key, value, text, label) {
  return el("div", {class: "stat", "data-key": key, "data-value": value}, el("div", {class: "v"}, text),
    el("div", {class: "k"}, label));
}

function summaryCards(doc, h, pick = null) {
  const seg = doc.segments;
  return card("snap-summary", "Allocator snapshot", doc.source,
    pick ? el("div", {class: "tablebar"}, el("label", null, "device ", pick), el("span", {class: "muted"},
      ` ${(doc.history || []).length} devices with an allocation history`)) : null,
    el("div", {class: "stats", id: "snap-stats"},
    stat("peak_live_bytes", h ? h.peak_live_bytes : 0, fmtBytes(h ? h.peak_live_bytes : 0), `device ${h ? h.device : "–"} peak live`),
    stat("peak_ms", h ? h.peak_ms : 0, fmtMs(h ? h.peak_ms : null), "peak at (after the first entry)"),
    stat("reserved_bytes", seg.reserved_bytes, fmtBytes(seg.reserved_bytes), "reserved at the dump"),
    stat("allocated_bytes", seg.allocated_bytes, fmtBytes(seg.allocated_bytes), "allocated at the dump"),
    stat("segments", seg.count, fmtNum(seg.count), `segments (${seg.large} large, ${seg.small} small)`),
    stat("largest_alloc_bytes", doc.largest_alloc_bytes, fmtBytes(doc.largest_alloc_bytes), "largest allocation")));
}

function categoryCard(h) {
  const rows = Object.entries(h.by_category || {}).sort((a, b) => b[1] - a[1]);
  return card("snap-categories", "Live at the peak, by category", "From each allocation's Python stack (docs/memory_snapshot.md).",
    rows.length ? el("table", {class: "data", id: "snap-category-table"}, el("tbody", null, rows.map(([k, v]) =>
      el("tr", {"data-category": k, "data-bytes": v}, el("td", {class: "txt"}, k.replace(/_/g, " ")), el("td", {class: "num"}, fmtBytes(v))))))
      : empty("no allocation is live at the peak"));
}

/** The live-bytes curve of one device with zoom; each zoom fetches its window from the server. */
function curveCard(runId, h) {
  const full = {start: 0, end: Math.max(h.duration_ms, MIN_SPAN_MS)};
  let win = {...full};
  let seq = 0;
  const holder = el("div", {class: "memcurve", id: "snap-curve"});
  const info = el("p", {class: "sub", id: "snap-window"});
  const zoom = (factor, centre) => {
    const span = Math.min(full.end - full.start, Math.max(MIN_SPAN_MS, (win.end - win.start) * factor));
    const c = centre ?? (win.start + win.end) / 2;
    let start = c - span / 2;
    start = Math.max(full.start, Math.min(start, full.end - span));
    load({start, end: start + span});
  };
  async function load(next) {
    const my = ++seq;
    const w = await snapshotCurve(runId, {device: h.device, start_ms: next.start, end_ms: next.end, points: POINTS});
    if (my !== seq) return;
    win = next;
    const x = [w.start_ms, ...w.time_ms, w.end_ms];
    const last = w.live_bytes.length ? w.live_bytes[w.live_bytes.length - 1] : w.live_before_bytes;
    const y = [w.live_before_bytes, ...w.live_bytes, last];
    const chart = lineChart("snap-chart", [{label: "live", color: "#4c78a8", x, y}],
      {xFmt: (v) => `${v.toFixed(v - w.start_ms < 10 ? 2 : 1)} ms`, yFmt: (v) => fmtBytes(v)});
    chart.setAttribute("data-start-ms", w.start_ms);
    chart.setAttribute("data-end-ms", w.end_ms);
    chart.setAttribute("data-points", w.time_ms.length);
    chart.setAttribute("data-points-in-window", w.points_in_window);
    chart.addEventListener("wheel", (e) => {
      e.preventDefault();
      const box = chart.getBoundingClientRect();
      const px = ((e.clientX - box.left) / box.width) * PLOT.W;
      const frac = Math.max(0, Math.min(1, (px - PLOT.left) / (PLOT.W - PLOT.left - PLOT.right)));
      zoom(e.deltaY < 0 ? 0.5 : 2, win.start + frac * (win.end - win.start));
    }, {passive: false});
    clear(holder).append(chart);
    info.textContent = `${fmtMs(w.start_ms)} – ${fmtMs(w.end_ms)}: ${fmtNum(w.time_ms.length)} points drawn for `
      + `${fmtNum(w.points_in_window)} allocations and frees (each point the largest live bytes of its time bucket)`;
  }
  const btn = (id, text, fn) => el("button", {type: "button", id, on: {click: fn}}, text);
  const bar = el("div", {class: "tablebar"},
    btn("snap-zoom-in", "zoom in", () => zoom(0.25)), btn("snap-zoom-out", "zoom out", () => zoom(4)),
    btn("snap-zoom-peak", "zoom to the peak", () => zoom(0.02 * (full.end - full.start) / (win.end - win.start), h.peak_ms)),
    btn("snap-zoom-reset", "whole history", () => load(full)));
  const done = load(full);
  return {node: card("snap-history", `Live bytes over time, device ${h.device}`,
    "Allocated minus freed bytes replayed from the allocator's history. Scroll over the curve to zoom: "
      + (standalone ? `this report carries the whole curve and finer windows around the peak (${SNAPSHOT_HINT} for every window).`
        : "each zoom asks the server for a finer window."),
    legend([["live", "live bytes", "#4c78a8"]]), bar, holder, info), done};
}

/** The allocations live at the peak, largest first, a page at a time; a click shows the Python stack. */
function allocationsCard(runId, h) {
  const tbody = el("tbody");
  const count = el("span", {class: "count", id: "snap-alloc-count"});
  const carried = el("p", {class: "note", id: "snap-alloc-carried"});
  const stack = el("ol", {class: "stack", id: "snap-stack"});
  let offset = 0, total = 0;
  const prev = el("button", {type: "button", id: "snap-alloc-prev", on: {click: () => page(offset - PAGE)}}, "previous");
  const next = el("button", {type: "button", id: "snap-alloc-next", on: {click: () => page(offset + PAGE)}}, "next");
  async function page(at) {
    const p = await snapshotAllocations(runId, {device: h.device, offset: Math.max(0, at), limit: PAGE});
    offset = p.offset;
    total = p.total;
    clear(tbody);
    p.allocations.forEach((a, i) => tbody.appendChild(el("tr", {"data-row": a.row, "data-bytes": a.bytes,
      on: {click: () => { clear(stack).append(...(a.stack.length ? a.stack : ["(no frames recorded)"]).map((f) => el("li", null, f))); }}},
      el("td", {class: "num"}, fmtNum(offset + i + 1)), el("td", {class: "num"}, fmtBytes(a.bytes)),
      el("td", {class: "num"}, fmtMs(a.time_ms)), el("td", {class: "txt"}, a.category.replace(/_/g, " ")),
      el("td", {class: "txt", title: a.site}, a.site || "–"))));
    count.textContent = `${fmtNum(offset + 1)}–${fmtNum(offset + p.allocations.length)} of ${fmtNum(total)} allocations (${fmtBytes(p.total_bytes)})`;
    prev.disabled = offset === 0;
    next.disabled = offset + PAGE >= Math.min(total, p.carried ?? total);
    carried.textContent = p.carried !== undefined && p.carried < total
      ? `This report carries the largest ${fmtNum(p.carried)} of them (${SNAPSHOT_HINT} for the rest).` : "";
  }
  const head = el("tr", null, ["#", "size", "allocated at", "category", "site"].map((t) => el("th", null, t)));
  const done = page(0);
  return {node: card("snap-allocations", "Allocations live at the peak", "Largest first; click a row for its Python stack (innermost frame first).",
    el("div", {class: "tablebar"}, prev, next, count), carried,
    el("div", {class: "tablewrap"}, el("table", {class: "data", id: "snap-alloc-table"}, el("thead", null, head), tbody)),
    el("h3", null, "Stack"), stack), done};
}

/** The summary, then one device's curve, categories and allocations; a picker switches the device
 *  (the one with the highest peak first). */
export async function snapshotView(ctx) {
  const doc = await snapshotSummary(ctx.runId);
  const hist = [...(doc.history || [])].sort((a, b) => b.peak_live_bytes - a.peak_live_bytes || a.device - b.device);
  if (!hist.length) return [summaryCards(doc, null), card("snap-history", "Live bytes over time", null, empty("no allocation history: record it with torch.cuda.memory._record_memory_history"))];
  const holder = el("div", {id: "snap-device-views"});
  const pick = hist.length > 1 ? el("select", {id: "snap-device", "aria-label": "device"}, hist.map((h) =>
    el("option", {value: h.device}, `device ${h.device} · peak ${fmtBytes(h.peak_live_bytes)}`))) : null;
  let seq = 0;
  const showDevice = async (h) => {
    const my = ++seq;
    const curve = curveCard(ctx.runId, h), allocs = allocationsCard(ctx.runId, h);
    await Promise.all([curve.done, allocs.done]);
    if (my !== seq) return;
    holder.replaceChildren(summaryCards(doc, h, pick), curve.node, categoryCard(h), allocs.node);
    holder.dataset.device = h.device;
  };
  if (pick) pick.addEventListener("change", () => showDevice(hist.find((h) => String(h.device) === pick.value)));
  await showDevice(hist[0]);
  return [holder];
}
