// SVG charts drawn from API JSON: stacked columns (step breakdown, per-rank split), line curves
// (memory). Names go into <title>-free tooltips through textContent only.

import {el, svg, tip, fmtMs, fmtTick, isNum, showTip, hideTip} from "./util.js";

const W = 960;

function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function ticks(max, n = 4) {
  const out = [];
  for (let i = 0; i <= n; i++) out.push((max * i) / n);
  return out;
}

/** A legend: [[key, label, colour], ...]. */
export function legend(keys) {
  return el("div", {class: "legend"}, keys.map(([, label, color]) => {
    const sw = el("i");
    sw.style.background = color;
    return el("span", null, sw, label);
  }));
}

/**
 * Stacked columns. columns: [{label, values: {key: number}, total?}]; keys: [[key, label, colour]].
 * Each segment is rect.seg with data-col, data-cat and data-value (the exact number).
 */
export function stackedColumns(id, columns, keys, opts = {}) {
  const fmt = opts.fmt || fmtMs;
  const H = opts.height || 280, left = 64, right = 16, top = 12, bottom = 40;
  const totals = columns.map((c) => keys.reduce((s, [k]) => s + (isNum(c.values[k]) ? Math.max(0, c.values[k]) : 0), 0));
  const max = niceMax(Math.max(...totals, 0));
  const plotW = W - left - right, plotH = H - top - bottom;
  const slot = plotW / Math.max(columns.length, 1);
  const barW = Math.max(2, Math.min(64, slot * 0.72));
  const root = svg("svg", {class: "chart", id, viewBox: `0 0 ${W} ${H}`, role: "img", "data-columns": columns.length});
  for (const t of ticks(max)) {
    const y = top + plotH - (t / max) * plotH;
    root.appendChild(svg("line", {class: "grid", x1: left, x2: W - right, y1: y, y2: y}));
    root.appendChild(svg("text", {x: left - 8, y: y + 4, "text-anchor": "end"}, (opts.tickFmt || fmtTick)(t)));
  }
  const labelEvery = Math.ceil(columns.length / Math.max(1, Math.floor(plotW / 46)));
  columns.forEach((c, i) => {
    const x = left + i * slot + (slot - barW) / 2;
    let y = top + plotH;
    for (const [k, label, color] of keys) {
      const v = c.values[k];
      if (!isNum(v) || v <= 0) continue;
      const h = (v / max) * plotH;
      y -= h;
      const r = svg("rect", {class: "seg", x, y, width: barW, height: Math.max(h, 0.5), fill: color,
        "data-col": c.label, "data-cat": k, "data-value": v});
      tip(r, () => [`${opts.colName || "step"} ${c.label}`, `${label}: ${fmt(v)}`, `total: ${fmt(totals[i])}`]);
      root.appendChild(r);
    }
    if (i % labelEvery === 0) {
      root.appendChild(svg("text", {x: x + barW / 2, y: H - bottom + 16, "text-anchor": "middle"}, c.label));
    }
  });
  if (opts.xTitle) root.appendChild(svg("text", {x: left + plotW / 2, y: H - 6, "text-anchor": "middle"}, opts.xTitle));
  return root;
}

/** Decimals that write every multiple of `step` exactly (at most 6): 25 → 0, 2.5 → 1, 0.375 → 3. */
export function stepDecimals(step) {
  for (let d = 0; d < 6; d++) {
    const scaled = step * Math.pow(10, d);
    if (Math.abs(scaled - Math.round(scaled)) < 1e-6 * Math.max(1, scaled)) return d;
  }
  return 6;
}

/** Round tick values (1, 2 or 5 × 10^k apart, about `n` of them) from lo to hi, and their spacing. */
export function niceTicks(lo, hi, n = 6) {
  const span = hi - lo;
  if (!(span > 0)) return {values: [lo], step: 1};
  const p = Math.pow(10, Math.floor(Math.log10(span / n)));
  const step = [1, 2, 5, 10].map((m) => m * p).find((s) => span / s <= n) || 10 * p;
  const values = [];
  for (let k = Math.ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; k++) values.push(k * step);
  return {values, step};
}

/**
 * Line chart. series: [{label, color, x: [...], y: [...]}], all sharing the x unit.
 * opts: {xFmt (the tooltip's x, and the ticks' unless xTickFmt), xTickFmt, yFmt (the tooltip's numbers, and the ticks' unless yUnit), yUnit (ticks written
 * "<v><yUnit>", all with the decimals of the tick spacing), xTicks (the x ticks' values; default 5
 * even divisions), xDomain ([lo, hi]: charts that share a time axis), height}.
 * Tick labels are text.xtick / text.ytick. A vertical crosshair shows every series' value under the mouse.
 */
export function lineChart(id, series, opts = {}) {
  const H = opts.height || 260, left = 72, right = 40, top = 12, bottom = 32;
  const plotW = W - left - right, plotH = H - top - bottom;
  const xs = series.flatMap((s) => s.x), ys = series.flatMap((s) => s.y.filter(isNum));
  const [x0, x1] = opts.xDomain || [Math.min(...xs), Math.max(...xs)];
  // with a unit, round ticks (0, 50, 100, 150 ms) all written with one precision; else 4 divisions of a round top
  const nice = opts.yUnit !== undefined ? niceTicks(0, Math.max(...ys, 0) || 1, 5) : null;
  const yTicks = nice ? (nice.values[nice.values.length - 1] >= Math.max(...ys, 0) ? nice.values : [...nice.values,
    nice.values.length * nice.step]) : ticks(niceMax(Math.max(...ys, 0)));
  const ymax = yTicks[yTicks.length - 1];
  const sx = (v) => left + ((v - x0) / Math.max(x1 - x0, 1e-9)) * plotW;
  const sy = (v) => top + plotH - (v / ymax) * plotH;
  const root = svg("svg", {class: "chart", id, viewBox: `0 0 ${W} ${H}`, role: "img"});
  const yd = stepDecimals(yTicks[1] - yTicks[0]);
  const yTick = nice ? (v) => v.toFixed(yd) + opts.yUnit : opts.yFmt || String;
  for (const t of yTicks) {
    root.appendChild(svg("line", {class: "grid", x1: left, x2: W - right, y1: sy(t), y2: sy(t)}));
    root.appendChild(svg("text", {class: "ytick", x: left - 8, y: sy(t) + 4, "text-anchor": "end"}, yTick(t)));
  }
  const xTicks = opts.xTicks || ticks(x1 - x0, 5).map((t) => x0 + t);
  for (const t of xTicks) {
    root.appendChild(svg("text", {class: "xtick", x: sx(t), y: H - 10, "text-anchor": "middle"},
      (opts.xTickFmt || opts.xFmt || ((v) => v.toFixed(0)))(t)));
  }
  for (const s of series) {
    const pts = s.x.map((x, i) => `${sx(x).toFixed(1)},${sy(s.y[i]).toFixed(1)}`).join(" ");
    root.appendChild(svg("polyline", {class: "line", points: pts, fill: "none", stroke: s.color,
      "data-series": s.label, "data-points": s.x.length}));
  }
  const cross = svg("line", {class: "cross", y1: top, y2: top + plotH, x1: -10, x2: -10});
  root.appendChild(cross);
  const hit = svg("rect", {x: left, y: top, width: plotW, height: plotH, fill: "transparent"});
  root.appendChild(hit);
  hit.addEventListener("mouseleave", () => { hideTip(); cross.setAttribute("x1", -10); cross.setAttribute("x2", -10); });
  hit.addEventListener("mousemove", (e) => {
    const box = root.getBoundingClientRect();
    const px = ((e.clientX - box.left) / box.width) * W;
    const xv = x0 + ((px - left) / plotW) * (x1 - x0);
    cross.setAttribute("x1", px); cross.setAttribute("x2", px);
    const lines = [opts.xFmt ? opts.xFmt(xv) : xv.toFixed(2)];
    for (const s of series) lines.push(`${s.label}: ${opts.yFmt ? opts.yFmt(valueAt(s, xv)) : valueAt(s, xv)}`);
    showTip(e, lines);
  });
  return root;
}

function valueAt(s, x) {
  let lo = 0, hi = s.x.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (s.x[mid] <= x) lo = mid; else hi = mid - 1;
  }
  return s.y[lo];
}

/** A horizontal share bar inside a table cell (width set through CSSOM, allowed by the CSP). */
export function shareCell(pct) {
  const bar = el("span", {class: "bar"});
  bar.style.width = `${Math.max(0, Math.min(100, pct || 0))}%`;
  return el("td", {class: "share", "data-sort": isNum(pct) ? pct : 0}, bar,
    el("span", {class: "pct"}, isNum(pct) ? pct.toFixed(1) + " %" : "–"));
}
