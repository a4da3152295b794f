// Roofline view: from the §12 document's per-rank "roofline" section (docs/json.md) — the device
// and MFU, a log-log roofline (one dot per op shape, the memory roof and a compute roof per
// element type used), the op shapes, MFU per step and TraceLens's SDPA rows.

import {el, svg, card, empty, tip, fmtMs, fmtPct, fmtNum, isNum} from "./util.js";
import {dataTable} from "./tables.js";

const DTYPE_COLORS = {fp64: "#6b4c9a", fp32: "#1f77b4", tf32: "#17becf", fp16: "#ff7f0e", bf16: "#d62728",
  fp8: "#2ca02c", int8: "#8c564b", "": "#7f7f7f"};
const W = 1000, H = 380, L = 70, R = 110, T = 14, B = 36;

function axes(xs, ys) {
  const lo = (v) => Math.floor(Math.log10(Math.min(...v))), hi = (v) => Math.ceil(Math.log10(Math.max(...v)));
  const x0 = lo(xs), y0 = lo(ys), x1 = Math.max(hi(xs), x0 + 1), y1 = Math.max(hi(ys), y0 + 1);
  return {x0, x1, y0, y1,
    x: (v) => L + (W - L - R) * (Math.log10(v) - x0) / (x1 - x0),
    y: (v) => H - B - (H - T - B) * (Math.log10(v) - y0) / (y1 - y0)};
}

function grid(ax) {
  const out = [];
  for (let d = ax.x0; d <= ax.x1; d++) {
    const x = ax.x(10 ** d);
    out.push(svg("line", {class: "grid", x1: x, y1: T, x2: x, y2: H - B}),
      svg("text", {class: "axis", x, y: H - B + 16, "text-anchor": "middle"}, String(10 ** d)));
  }
  for (let d = ax.y0; d <= ax.y1; d++) {
    const y = ax.y(10 ** d);
    out.push(svg("line", {class: "grid", x1: L, y1: y, x2: W - R, y2: y}),
      svg("text", {class: "axis", x: L - 6, y: y + 4, "text-anchor": "end"}, String(10 ** d)));
  }
  out.push(svg("text", {class: "axis", x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle"}, "arithmetic intensity (FLOP / byte)"),
    svg("text", {class: "axis", x: L + 6, y: T + 24}, "TFLOP/s"));
  return out;
}

export function rooflineChart(id, ops, peak) {
  const pts = ops.filter((o) => isNum(o.intensity) && isNum(o.tflops) && o.intensity > 0 && o.tflops > 0);
  if (!pts.length) return empty("No op has both FLOPs and bytes known.");
  const bw = peak && isNum(peak.bandwidth_tbps) ? peak.bandwidth_tbps : 0;
  const used = new Set(pts.map((o) => o.dtype || ""));
  const peaks = bw ? Object.entries(peak.tflops || {}).filter(([d, v]) => used.has(d) && isNum(v)) : [];
  const ax = axes([...pts.map((o) => o.intensity), ...peaks.map(([, v]) => v / bw)],
    [...pts.map((o) => o.tflops), ...peaks.map(([, v]) => v)]);
  const roofs = peaks.map(([d, p]) => {
    const start = Math.max(10 ** ax.x0, 10 ** ax.y0 / bw), xr = 10 ** ax.x1;
    const points = `${ax.x(start)},${ax.y(start * bw)} ${ax.x(p / bw)},${ax.y(p)} ${ax.x(xr)},${ax.y(p)}`;
    return [svg("polyline", {class: "roof", fill: "none", stroke: DTYPE_COLORS[d] || "#7f7f7f", "stroke-width": 2, points,
      dataset: {dtype: d, peak: p, ridge: p / bw}}),
      svg("text", {class: "axis", x: ax.x(xr) + 4, y: ax.y(p) + 4}, `${d} ${fmtNum(p)}`)];
  });
  const total = pts.reduce((s, o) => s + (o.time_ms || 0), 0) || 1;
  const dots = pts.map((o) => tip(svg("circle", {class: "dot", cx: ax.x(o.intensity), cy: ax.y(o.tflops),
    r: 3 + 12 * Math.sqrt((o.time_ms || 0) / total), fill: DTYPE_COLORS[o.dtype || ""] || "#7f7f7f", "fill-opacity": 0.6,
    dataset: {name: o.name, intensity: o.intensity, tflops: o.tflops}}),
  [`${o.name} (${o.dtype || "?"}, ${o.calls} calls)`, `${fmtNum(o.intensity, 1)} FLOP/B, ${fmtNum(o.tflops, 1)} TFLOP/s`,
    `${fmtMs(o.time_ms, 3)}, ${o.bound || "no bound"}`]));
  return svg("svg", {id, class: "chart roofline", viewBox: `0 0 ${W} ${H}`, role: "img",
    "aria-label": "roofline: achieved TFLOP/s against arithmetic intensity"}, grid(ax), roofs, dots);
}

export function rooflineView(ctx) {
  const r = ctx.doc.ranks[0];
  const rf = r.roofline;
  if (!rf) return [card("roofline", "Roofline", null, empty(r.skipped?.roofline || "no op of known FLOPs ran on the device"))];
  const p = rf.peak;
  const head = p ? `${rf.device} → ${p.name} (${p.bandwidth_tbps} TB/s; source ${p.source}). MFU ${fmtPct(rf.mfu_pct)}; `
    + `ops of known FLOPs cover ${fmtPct(rf.covered_pct)} of the device busy time.`
    : `Device ${rf.device || "(no name recorded)"} is not in the peak table: no roofs, no bound and no MFU.`;
  const num = (d) => (v) => (isNum(v) ? fmtNum(v, d) : "–");
  const opCols = [{key: "name", label: "op"}, {key: "dtype", label: "type"}, {key: "kind", label: "kind"},
    {key: "calls", label: "calls", num: true, fmt: num(0)}, {key: "gflops", label: "GFLOP / call", num: true, fmt: num(3)},
    {key: "time_ms", label: "time", num: true, fmt: (v) => fmtMs(v, 3)}, {key: "tflops", label: "TFLOP/s (all calls)", num: true, fmt: num(1)},
    {key: "tbps", label: "TB/s", num: true, fmt: num(3)}, {key: "intensity", label: "FLOP/B", num: true, fmt: num(1)},
    {key: "bound", label: "bound", fmt: (v) => v || "–"}, {key: "roof_pct", label: "of roof", num: true, fmt: (v) => fmtPct(v)}];
  const stepCols = [{key: "step", label: "step", num: true, fmt: (v) => (v < 0 ? "all" : String(v))},
    {key: "time_ms", label: "time", num: true, fmt: (v) => fmtMs(v, 3)}, {key: "tflop", label: "TFLOP", num: true, fmt: num(2)},
    {key: "mfu_pct", label: "MFU", num: true, fmt: (v) => fmtPct(v)}, {key: "covered_pct", label: "FLOPs cover", num: true, fmt: (v) => fmtPct(v)}];
  const out = [card("roofline", "Roofline", head, rooflineChart("roofline-chart", rf.ops || [], p),
    dataTable(rf.ops || [], opCols, {id: "roofline-table", sortKey: "time_ms"})),
  card("roofline-steps", "Model FLOP utilisation per step", "FLOPs known in the step ÷ (step time × peak of each op's type).",
    dataTable(rf.steps || [], stepCols, {id: "roofline-steps-table", sortKey: "step"}))];
  if ((rf.sdpa || []).length) {
    const sdpaCols = [{key: "name", label: "op"}, {key: "b", label: "B", num: true}, {key: "h_q", label: "H", num: true},
      {key: "n_q", label: "N_Q", num: true}, {key: "n_kv", label: "N_KV", num: true}, {key: "d_qk", label: "d", num: true},
      {key: "causal", label: "causal", fmt: (v) => (v ? "yes" : "no")}, {key: "calls", label: "calls", num: true},
      {key: "gflops", label: "GFLOP", num: true, fmt: num(3)}, {key: "tflops_median", label: "median TFLOP/s", num: true, fmt: num(1)},
      {key: "tbps_median", label: "median TB/s", num: true, fmt: num(3)}];
    out.push(card("roofline-sdpa", "Attention per shape", "TraceLens's SDPA rows (FLOPs and bytes from the shapes; median over the calls).",
      dataTable(rf.sdpa, sdpaCols, {id: "roofline-sdpa-table", sortKey: "gflops"})));
  }
  return out;
}
