// Where the views get their data. Served by `stepscope serve`, every answer comes from the JSON API
// (/api/v1/...). In a standalone report (`stepscope report -o FILE`, `analyze --html`, `diff --html`)
// the same answers were computed when the file was written and embedded in it as one JSON object
// (<script type="application/json" id="stepscope-doc">, see stepscope/report/standalone.py):
//
//   {format: "stepscope-standalone", kind: "run" | "diff", title,
//    doc,                       the §12 document (kind "run")
//    memory: {rank: {rank, curves}},   what GET .../memory?rank= answers
//    info: {ranks: [...]},             what GET .../info answers
//    timeline: {rank: {step, windows: [window, ...], details}},  a few precomputed timeline windows and
//                               the details of their events (details.js)
//    diff,                      the diff document (kind "diff")
//    runs: {base: {info, timeline}, new: {info, timeline}},   a diff's sides, for its aligned timelines
//    snapshot: {summary, curves: {device: [window, ...]}, allocations: {device: page}}}
//                               an allocator snapshot (`report --snapshot FILE`; kind "snapshot" alone)
//
// The views call only the functions below, so each of them works in both. What needs the trace
// (a new what-if replay, a timeline window that was not precomputed) says so in the standalone file.

import {api, post, query} from "./util.js";
import {detailsOf} from "./details.js";

const node = typeof document === "undefined" ? null : document.getElementById("stepscope-doc");
const embedded = node ? JSON.parse(node.textContent) : null;

/** True in a standalone report file (no server behind the page). */
export const standalone = embedded !== null;
/** The one run id of a standalone report. */
export const REPORT_ID = "report";
/** What to do for what a standalone report does not carry: "… (open the trace with `stepscope serve` for the rest)". */
export const SERVE_HINT = "open the trace with `stepscope serve`";
export const SNAPSHOT_HINT = "open the snapshot with `stepscope serve`";

export function embeddedKind() {
  return standalone ? embedded.kind : null;
}

export function reportTitle() {
  return standalone ? embedded.title || "stepscope report" : null;
}

function summary() {
  if (embedded.kind === "snapshot") {
    const hist = (embedded.snapshot.summary.history || []);
    return {id: REPORT_ID, label: embedded.title || "allocator snapshot", kind: "snapshot", state: "ready", ranks: [],
      devices: hist.map((h) => h.device), peak_live_bytes: Math.max(0, ...hist.map((h) => h.peak_live_bytes))};
  }
  const doc = embedded.doc;
  const first = (doc.ranks || [])[0] || {};
  const verdict = (doc.verdicts || [])[0];
  // a multi-rank run: the job's step, the number its verdict (rank null) states, not the first rank's window
  const job = verdict && (verdict.rank === null || verdict.rank === undefined) ? verdict : null;
  return {id: REPORT_ID, label: embedded.title || doc.source || "report", kind: "report", state: "ready",
    ranks: (doc.ranks || []).map((r) => r.rank), device: first.device ? first.device.name : null,
    cpu_only: (doc.ranks || []).length > 0 && doc.ranks.every((r) => String(r.platform || "").split("+")[0] === "cpu"),
    avg_step_ms: job ? job.avg_step_ms : first.overview ? first.overview.avg_step_ms : null, findings: (doc.findings || []).length,
    verdict: verdict ? verdict.text : null};
}

/** The runs list (a standalone run report: its one run; a standalone diff: none). */
export async function listRuns(fresh = true) {
  if (!standalone) return (await api("/api/v1/runs", fresh)).runs;
  return embedded.doc || embedded.kind === "snapshot" ? [summary()] : [];
}

/** The run's §12 document; with a rank, cut to that rank (as GET /api/v1/runs/{id}?rank=); with `stepMs`, at that
 *  step without the profiler (?step_ms=, served only: a report's document is the one it was written with). */
export async function runDocument(id, rank, stepMs) {
  if (!standalone) return api(`/api/v1/runs/${id}${query({rank, step_ms: stepMs || null})}`);
  const doc = embedded.doc;
  return rank === undefined ? doc : {...doc, ranks: (doc.ranks || []).filter((r) => r.rank === rank)};
}

/** The rank's memory curves: {rank, curves: [{device, ts_ms, allocated_mb, reserved_mb}]}. */
export async function memoryCurves(id, rank) {
  if (!standalone) return api(`/api/v1/runs/${id}/memory${query({rank})}`);
  return (embedded.memory || {})[String(rank)] || {rank, curves: []};
}

/** What the file carries of a run: the report's one run, or a diff report's side ("base" / "new"). */
function part(id) {
  return embedded.kind === "diff" ? (embedded.runs || {})[id] || {} : embedded;
}

/** Per rank: time extent and step windows (trace ns). */
export async function runInfo(id) {
  if (!standalone) return api(`/api/v1/runs/${id}/info`);
  return part(id).info || {ranks: []};
}

/** What the standalone file carries of a rank's timeline ({step, windows}), or null (served: null). */
export function timelineSnapshot(rank, id = REPORT_ID) {
  if (!standalone) return null;
  return (part(id).timeline || {})[String(rank)] || {step: null, windows: []};
}

/** One timeline window. Standalone: the narrowest precomputed window around the request's middle
 *  that is not much narrower than the request (else the widest one). */
export async function timelineWindow(id, rank, startNs, endNs, maxItems) {
  if (!standalone) {
    return api(`/api/v1/runs/${id}/timeline${query({rank, start_ns: startNs, end_ns: endNs, max_items: maxItems})}`, true);
  }
  const windows = (timelineSnapshot(rank, id).windows || []).map(expanded);
  if (!windows.length) throw new Error(`this report carries no timeline for rank ${rank}: ${SERVE_HINT} to see it`);
  const a = Number(startNs), b = Number(endNs), mid = (a + b) / 2, span = b - a;
  const fits = windows.filter((w) => w.start_ns <= mid && w.end_ns >= mid && w.end_ns - w.start_ns >= span / 4);
  const pick = (list, better) => list.reduce((p, q) => (better(q, p) ? q : p));
  const width = (w) => w.end_ns - w.start_ns;
  return fits.length ? pick(fits, (q, p) => width(q) < width(p)) : pick(windows, (q, p) => width(q) > width(p));
}

/** One event's details: served, GET .../event; standalone, the same answer from the details the file
 *  carries for every event of its timeline windows (details.js). */
export async function eventDetails(id, rank, row) {
  if (!standalone) return api(`/api/v1/runs/${id}/event${query({rank, row})}`, true);  // the server keeps them (LRU)
  const snap = timelineSnapshot(rank, id);
  const det = snap.details ? detailsOf(snap.details, snap.windows.map(expanded).filter((w) => w.events).map((w) => w.events), Number(row)) : null;
  if (!det) throw new Error(`this report carries no details of event ${row} on rank ${rank}: ${SERVE_HINT} for them`);
  return det;
}

/** One page of the rank's events whose name contains `q` (any case), by start: the first 2,000 at or
 *  after `afterNs`, or the last 2,000 before `beforeNs` — {total, skipped, truncated, matches: {row, track,
 *  ts_ns, dur_ns, name}}. Standalone: among the events of the windows the file carries (`partial: true`). */
export async function searchEvents(id, rank, q, afterNs, beforeNs) {
  if (!standalone) return api(`/api/v1/runs/${id}/search${query({rank, q, after_ns: afterNs, before_ns: beforeNs})}`, true);
  const seen = new Map(), needle = q.toLowerCase();
  for (const w of (timelineSnapshot(rank, id).windows || []).map(expanded)) {
    const ev = w.events;
    if (!ev) continue;
    for (let i = 0; i < ev.row.length; i++) {
      if (!seen.has(ev.row[i]) && (ev.name[i] || "").toLowerCase().includes(needle)) {
        seen.set(ev.row[i], {row: ev.row[i], track: ev.track[i], ts_ns: ev.ts_ns[i], dur_ns: ev.dur_ns[i], name: ev.name[i]});
      }
    }
  }
  const list = [...seen.values()].sort((p, r) => p.ts_ns - r.ts_ns || p.track - r.track);
  const LIMIT = 2000;
  let lo = 0, hi = list.length;
  if (beforeNs !== null && beforeNs !== undefined) {
    hi = list.filter((m) => m.ts_ns < Number(beforeNs)).length;
    lo = Math.max(0, hi - LIMIT);
  } else {
    lo = afterNs === null || afterNs === undefined ? 0 : list.filter((m) => m.ts_ns < Number(afterNs)).length;
    hi = Math.min(list.length, lo + LIMIT);
  }
  const cols = {row: [], track: [], ts_ns: [], dur_ns: [], name: []};
  for (const m of list.slice(lo, hi)) for (const k in cols) cols[k].push(m[k]);
  return {rank, query: q, total: list.length, skipped: lo, truncated: hi < list.length, partial: true, matches: cols};
}

// A window's text columns were interned in the file (standalone.py compact_window): expand them once.
const expandedWindows = new WeakMap();
function expandColumn(col) {
  return col && !Array.isArray(col) && Array.isArray(col.index) ? col.index.map((i) => (i < 0 ? null : col.strings[i])) : col;
}
function expandTexts(obj) {
  return {...obj, name: expandColumn(obj.name), kind: expandColumn(obj.kind)};
}
function expanded(w) {
  if (!expandedWindows.has(w)) {
    expandedWindows.set(w, {...w, events: w.events ? expandTexts(w.events) : w.events,
      aggregate: Array.isArray(w.aggregate) ? w.aggregate.map(expandTexts) : w.aggregate});
  }
  return expandedWindows.get(w);
}

/** The diff document of two runs (standalone: the embedded one). */
export async function diffDocument(base, next) {
  if (!standalone) return api(`/api/v1/diff${query({base, new: next})}`);
  if (!embedded.diff) throw new Error("this report carries no comparison");
  return embedded.diff;
}

/** A new what-if replay (needs the trace: refused in a standalone report), at `stepMs` as runDocument takes it. */
export async function replay(id, body, stepMs) {
  if (standalone) {
    throw new Error("A new replay needs the trace: this report carries the standard remedies replayed above. "
      + "Run `stepscope whatif TRACE` with these options, or open the trace with `stepscope serve`.");
  }
  return post(`/api/v1/runs/${encodeURIComponent(id)}/whatif${query({step_ms: stepMs || null})}`, body);
}

/** True when a standalone report carries an allocator snapshot (`report --snapshot FILE`). */
export function carriesSnapshot() {
  return standalone && !!embedded.snapshot;
}

function carriedSnapshot(what) {
  if (!standalone) return null;
  if (!embedded.snapshot) throw new Error(`this report carries no ${what}: ${SNAPSHOT_HINT}`);
  return embedded.snapshot;
}

/** An allocator snapshot's summary (`stepscope memory --json`). */
export async function snapshotSummary(id) {
  const snap = carriedSnapshot("an allocator snapshot");
  return snap ? snap.summary : api(`/api/v1/runs/${id}/snapshot`);
}

/** One window of a snapshot's live-bytes curve: {device, start_ms, end_ms, points_in_window, live_before_bytes, time_ms, live_bytes}.
 *  Standalone: the narrowest carried window (the whole curve, windows around the peak) that covers
 *  the request (else the whole curve). */
export async function snapshotCurve(id, params) {
  const snap = carriedSnapshot("an allocator snapshot");
  if (!snap) return api(`/api/v1/runs/${id}/snapshot/curve${query(params)}`);
  const windows = (snap.curves || {})[String(params.device)] || [];
  if (!windows.length) throw new Error(`this report carries no curve of device ${params.device}`);
  const a = Number(params.start_ms), b = Number(params.end_ms), slack = (b - a) * 1e-3;
  const width = (w) => w.end_ms - w.start_ms;
  const covers = windows.filter((w) => w.start_ms <= a + slack && w.end_ms >= b - slack);
  return covers.length ? covers.reduce((p, q) => (width(q) < width(p) ? q : p)) : windows[0];
}

/** A page of the allocations live at a snapshot's peak: {device, total, total_bytes, offset, limit, allocations}
 *  (standalone: a page of the largest ones the file carries, with `carried`, how many it carries). */
export async function snapshotAllocations(id, params) {
  const snap = carriedSnapshot("an allocator snapshot");
  if (!snap) return api(`/api/v1/runs/${id}/snapshot/allocations${query(params)}`);
  const all = (snap.allocations || {})[String(params.device)];
  if (!all) throw new Error(`this report carries no allocations of device ${params.device}`);
  const offset = Math.max(0, Math.min(Number(params.offset) || 0, Math.max(all.allocations.length - 1, 0)));
  return {...all, offset, limit: Number(params.limit), carried: all.allocations.length,
    allocations: all.allocations.slice(offset, offset + Number(params.limit))};
}
