// The diff page: pick BASE and NEW among the runs, then the diff document (computed once by the
// server) as a side-by-side chart of the average step, the story in a few sentences, findings
// resolved / new / still, and the operator and kernel tables sorted by |diff|.

import {el, svg, card, empty, tip, fmtMs, fmtSigned, fmtNum, isNum, BREAKDOWN} from "./util.js";
import {dataTable} from "./tables.js";
import {lineChart, legend} from "./charts.js";
import {diffDocument} from "./data.js";
import {alignedTimelines} from "./timeline.js";

const LABELS = Object.fromEntries(BREAKDOWN.map(([k, label]) => [k, label]));
const COLORS = Object.fromEntries(BREAKDOWN.map(([k, , c]) => [k, c]));
Object.assign(LABELS, {step: "Step", computing: "Computing", communication_not_overlapped: "Comm. not overlapped", free: "Free (no kernel, no comm)"});
Object.assign(COLORS, {step: "#3b5bdb", computing: "#4c78a8", communication_not_overlapped: "#e45756", free: "#bab0ac"});

/** The runs a diff can take (traces that did not fail), oldest first: by when each was recorded
 *  (`recorded_ns`: the run's file names or file times, server/discover.py), then by label. */
export function comparable(runs) {
  return runs.filter((r) => r.state !== "error" && r.kind !== "snapshot")
    .map((r, i) => [r, i]).sort(([p, i], [q, j]) => (p.recorded_ns || 0) - (q.recorded_ns || 0) || i - j).map(([r]) => r);
}

/** The default pair: NEW the newest run, BASE the one recorded before it ([base id, new id]). */
export function defaultPair(runs) {
  const list = comparable(runs);
  if (!list.length) return [null, null];
  const next = list[list.length - 1];
  return [(list[list.length - 2] || next).id, next.id];
}

/** "2026-11-28 02:59:02" (local time) of a Unix ns timestamp; "" when unknown. */
function when(ns) {
  if (!isNum(ns) || ns <= 0) return "";
  const d = new Date(ns / 1e6), p = (v) => String(v).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** The picker shown above every diff: two selects (oldest run first, each with when it was recorded)
 *  and a Compare button. */
export function diffPicker(runs, base, next, go) {
  const ready = comparable(runs);
  const options = (sel) => ready.map((r) => el("option", {value: r.id, selected: r.id === sel, "data-recorded": r.recorded_ns || 0,
    title: r.recorded_from ? `recorded ${when(r.recorded_ns)} (from its ${r.recorded_from})` : null},
  when(r.recorded_ns) ? `${r.label} · ${when(r.recorded_ns)}` : r.label));
  const b = el("select", {id: "diff-base", "aria-label": "base run"}, options(base));
  const n = el("select", {id: "diff-new", "aria-label": "new run"}, options(next));
  return card("diff-pick", "Compare two runs", "BASE is before, NEW is after (by default the newest run, and the one recorded "
    + "before it); each side's lowest rank, per average step.",
    el("div", {class: "pickrow"}, el("label", null, "base ", b), el("span", {class: "arrow"}, "→"), el("label", null, "new ", n),
      el("button", {type: "button", id: "diff-go", class: "primary", on: {click: () => go(b.value, n.value)}}, "Compare")));
}

export async function diffView(base, next) {
  const doc = await diffDocument(base, next);
  const step = (doc.overall || []).find((r) => r.category === "step");
  const pct = step && step.base_ms > 0 ? (100 * (step.new_ms - step.base_ms)) / step.base_ms : null;
  const headline = step ? el("div", {class: "verdict", id: "diff-headline", "data-base": step.base_ms, "data-new": step.new_ms},
    `Average step ${fmtMs(step.base_ms)} → ${fmtMs(step.new_ms)} `, el("span", {class: step.diff_ms > 0 ? "pos" : "neg"},
      `(${fmtSigned(step.diff_ms)}, ${isNum(pct) ? (pct > 0 ? "+" : "") + pct.toFixed(1) + " %" : "–"})`)) : null;
  // the narrative opens with the average step (compare/narrative.py word): the headline says it already
  const story = (doc.narrative || []).filter((s, i) => !(headline && i === 0 && /^Average step /.test(s))).map((s) => el("li", null, s));
  const out = [card("diff-summary", `${sideName(doc.base, "base")} → ${sideName(doc.new, "new")}`, null, headline, gateLine(doc.gate),
    story.length ? el("ul", {class: "story"}, story) : null, overallChart(doc.overall || []))];
  if (doc.findings) out.push(findingsCard(doc.findings));
  const steps = perStepChart(doc.base, doc.new);
  if (steps) out.push(card("diff-steps", "Each step", "Every ProfilerStep's wall time, BASE (grey) and NEW (blue), step by step in order.", steps));
  out.push(await alignedTimelines(base, next, [sideName(doc.base, "base"), sideName(doc.new, "new")],
    [(doc.base || {}).rank ?? null, (doc.new || {}).rank ?? null]));
  const names = [...new Set([...TABLE_ORDER, ...Object.keys(doc.tables || {})])].filter((k) => Array.isArray(doc[k]) && doc[k].length);
  for (const name of names) {
    const meta = (doc.tables || {})[name] || {};
    const n = (v) => fmtNum(Array.isArray(v) ? v.length : v);
    out.push(card(`diff-${name}`, TABLE_TITLES[name] || name, `${meta.metric || ""} ${doc.per_step === false ? "in total" : "per average step"} · ${
      n(meta.matched)} matched, ${n(meta.added)} only in NEW, ${n(meta.removed)} only in BASE`, diffTable(doc[name], name, meta.unit || "ms")));
  }
  (doc.notes || []).forEach((n) => out.push(el("p", {class: "note"}, n)));
  return out;
}

/** The CI gate of `diff --fail-if-slower` (the document's `gate`), when the diff ran with one. */
function gateLine(gate) {
  if (!gate || typeof gate.passed !== "boolean") return null;
  const why = gate.reason || (isNum(gate.slower_pct) && isNum(gate.threshold_pct)
    ? `new is ${gate.slower_pct > 0 ? "+" : ""}${gate.slower_pct.toFixed(1)} % vs base (limit ${gate.threshold_pct.toFixed(1)} %)` : "");
  return el("p", {class: "gateline"}, el("span", {class: `gate ${gate.passed ? "pass" : "fail"}`, id: "gate", "data-passed": String(gate.passed)},
    gate.passed ? "gate passed" : "gate failed"), " ", why);
}

const TABLE_ORDER = ["operators", "kernels", "modules", "memory", "runtime", "categories"];
const TABLE_TITLES = {operators: "Operators", kernels: "Kernels", modules: "Modules", memory: "Memory by operator",
  runtime: "Runtime API", categories: "Op categories"};

/** A side's label, else the last part of its source path. */
function sideName(side, fallback) {
  if (!side) return fallback;
  const src = String(side.label || side.source || "").replace(/\/+$/, "");
  return src ? src.split("/").pop() : fallback;
}

/** A table of the diff document; its value keys carry the table's unit (base_ms, base_mb, ...). */
function diffTable(rows, name, unit) {
  const u = unit.toLowerCase();
  const fmt = u === "ms" ? fmtMs : (v) => (isNum(v) ? `${fmtNum(v, 2)} ${unit}` : "–");
  const signed = u === "ms" ? (v) => fmtSigned(v) : (v) => fmtSigned(v, ` ${unit}`);
  const shaped = rows.map((r) => ({...r, base_ms: r[`base_${u}`], new_ms: r[`new_${u}`], diff_ms: r[`diff_${u}`],
    abs: Math.abs(r[`diff_${u}`] || 0)}));
  const columns = [{key: "name", label: "name"}, {key: "base_ms", label: "base", num: true, fmt},
    {key: "new_ms", label: "new", num: true, fmt}, {key: "diff_ms", label: "diff", num: true, fmt: signed},
    {key: "ratio", label: "ratio", num: true, fmt: (v) => (isNum(v) ? v.toFixed(2) + "×" : "–")},
    {key: "status", label: "status"}];
  return dataTable(shaped, columns, {id: `diff-${name}-table`, sortKey: "abs", onRow: (r, tr) => {
    const cell = tr.children[3];
    if (cell && isNum(r.diff_ms)) cell.classList.add(r.diff_ms > 0 ? "pos" : "neg");
  }});
}

function findingsCard(findings) {
  const items = findings.map((f) => el("li", {class: `finding sev-${f.severity || "low"} status-${f.status}`, "data-rule": f.rule},
    el("div", {class: "fhead"}, el("span", {class: `badge st-${f.status}`}, f.status), el("span", {class: "ftitle"}, f.title || f.rule),
      el("span", {class: "rule"}, f.rule), el("span", {class: "gain"},
        `${fmtMs(f.base_est_gain_ms)} → ${fmtMs(f.new_est_gain_ms)}`))));
  return card("diff-findings", "Findings", "Advisor findings of both runs, matched by rule (estimated gain per step).",
    items.length ? el("ol", {class: "findings"}, items) : empty("no findings on either side"));
}

/** Each side's steps in order (the diff document's base/new per_step): two lines of step wall time. */
function perStepChart(base, next) {
  const b = (base && base.per_step) || [], n = (next && next.per_step) || [];
  if (b.length + n.length < 2) return null;
  const series = [["base", "#9aa5b1", b], ["new", "#3b5bdb", n]].filter(([, , p]) => p.length).map(([label, color, p]) => ({
    label, color, x: p.map((_, i) => i + 1), y: p.map((x) => x.total_ms)}));
  // one tick per step (every k-th when they would crowd: at most one per 60 px), under its points
  const count = Math.max(b.length, n.length), every = Math.ceil(count / 14);
  const xTicks = [...Array(count).keys()].map((i) => i + 1).filter((k) => (k - 1) % every === 0);
  return el("div", null, legend(series.map((x) => [x.label, x.label, x.color])),
    lineChart("diff-steps-chart", series, {xFmt: (v) => stepLabel(b, n, Math.round(v)), yFmt: (v) => fmtMs(v), yUnit: " ms",
      xTicks, xDomain: [1, Math.max(count, 2)]}));
}

function stepLabel(b, n, k) {
  // the k-th step of each side: named by its ProfilerStep number where both sides number it alike
  const same = b.length === n.length && b.every((x, i) => x.step === n[i].step);
  return same && b[k - 1] && b[k - 1].step !== undefined ? `step ${b[k - 1].step}` : `#${k}`;
}

/** Paired horizontal bars per category: base (grey) above new (coloured). */
function overallChart(rows) {
  const shown = rows.filter((r) => (r.base_ms || 0) > 0 || (r.new_ms || 0) > 0);
  if (!shown.length) return null;
  const W = 960, left = 170, right = 120, rowH = 34, H = shown.length * rowH + 10;
  const max = Math.max(...shown.map((r) => Math.max(r.base_ms || 0, r.new_ms || 0)), 1e-9);
  const sx = (v) => ((v || 0) / max) * (W - left - right);
  const root = svg("svg", {class: "chart", id: "overall-chart", viewBox: `0 0 ${W} ${H}`, role: "img"});
  shown.forEach((r, i) => {
    const y = 6 + i * rowH;
    root.appendChild(svg("text", {class: "name", x: left - 10, y: y + 18, "text-anchor": "end"}, LABELS[r.category] || r.category));
    const b = svg("rect", {class: "seg", x: left, y: y + 2, width: Math.max(sx(r.base_ms), 0.5), height: 11, fill: "#9aa5b1",
      "data-cat": r.category, "data-side": "base", "data-value": r.base_ms});
    const n = svg("rect", {class: "seg", x: left, y: y + 15, width: Math.max(sx(r.new_ms), 0.5), height: 11,
      fill: COLORS[r.category] || "#4c78a8", "data-cat": r.category, "data-side": "new", "data-value": r.new_ms});
    const lines = () => [LABELS[r.category] || r.category, `base ${fmtMs(r.base_ms)}`, `new ${fmtMs(r.new_ms)}`, `diff ${fmtSigned(r.diff_ms)}`];
    tip(b, lines); tip(n, lines);
    root.append(b, n, svg("text", {x: left + Math.max(sx(r.base_ms), sx(r.new_ms)) + 8, y: y + 18,
      class: (r.diff_ms || 0) > 0 ? "pos" : "neg"}, fmtSigned(r.diff_ms)));
  });
  return el("div", null, el("div", {class: "legend"}, el("span", null, swatch("#9aa5b1"), "base"), el("span", null, swatch("#3b5bdb"), "new")), root);
}

function swatch(color) {
  const i = el("i");
  i.style.background = color;
  return i;
}
