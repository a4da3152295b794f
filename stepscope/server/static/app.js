// The single page: hash routes, the run and rank pickers, and the view dispatch.
//   #/                             runs
//   #/run/<id>/<view>?rank=<r>     overview | steps | kernels | operators | modules | memory | distributed | graphs |
//                                  timeline | whatif | roofline
//                                  (whatif also takes &remedy=<name>: that remedy replayed at once;
//                                  every view &step_ms=<ms>: the run at that step without the profiler, stepms.js)
//   #/run/<id>/snapshot            an allocator snapshot (run kind "snapshot"; its only view: snapshot.js), or
//                                  in a report of a run made with `--snapshot FILE`, the snapshot it carries
//   #/diff?base=<id>&new=<id>      compare two runs
// The same app is the standalone report (data.js): one run (or one diff) embedded in the file.

import {el, clear, empty, fmtMs, fmtBytes} from "./util.js";
import {standalone, embeddedKind, reportTitle, listRuns, runDocument, carriesSnapshot} from "./data.js";
import {overviewView, stepsView, kernelsView, operatorsView, sayView} from "./views.js";
import {memoryView, distributedView, modulesView} from "./views_more.js";
import {timelineView} from "./timeline.js";
import {graphsView} from "./device.js";
import {whatifView} from "./whatif.js";
import {rooflineView} from "./roofline.js";
import {diffPicker, diffView, defaultPair} from "./diff.js";
import {snapshotView} from "./snapshot.js";

const VIEWS = [
  ["overview", "Overview", overviewView], ["steps", "Step breakdown", stepsView], ["kernels", "Kernels", kernelsView],
  ["operators", "Operators", operatorsView], ["modules", "Modules", modulesView], ["memory", "Memory", memoryView],
  ["distributed", "Distributed", distributedView], ["graphs", "Graphs", graphsView],
  ["timeline", "Timeline", timelineView], ["whatif", "What-if", whatifView], ["roofline", "Roofline", rooflineView],
];
// the views of a device's work: not offered on a run without a device (a CPU-only run: `cpu_only`, from its ranks'
// `platform`), as the terminal leaves them out there
const DEVICE_VIEWS = new Set(["kernels", "graphs", "roofline"]);
// the views of an allocator snapshot run (kind "snapshot")
const SNAPSHOT_VIEWS = [["snapshot", "Memory snapshot", snapshotView]];

const main = document.getElementById("view");
const nav = document.getElementById("nav");
const picker = document.getElementById("picker");
let runs = [];
let token = 0;
let pollTimer = null;

function parseRoute() {
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, qs] = hash.split("?");
  const q = new URLSearchParams(qs || "");
  const parts = path.split("/").filter(Boolean);
  if (parts[0] === "run" && parts[1]) return {page: "run", id: parts[1], view: parts[2] || "overview", rank: q.get("rank"),
    remedy: q.get("remedy"), stepMs: q.get("step_ms")};
  if (parts[0] === "diff") return {page: "diff", base: q.get("base"), next: q.get("new")};
  return {page: "home"};
}

function href(id, view, rank, stepMs) {
  const q = new URLSearchParams();
  if (rank !== null && rank !== undefined) q.set("rank", String(rank));
  if (stepMs) q.set("step_ms", stepMs);  // the step without the profiler the run is shown at (stepms.js)
  const qs = q.toString();
  return `#/run/${encodeURIComponent(id)}/${view}` + (qs ? `?${qs}` : "");
}

async function loadRuns(fresh = true) {
  runs = await listRuns(fresh);
  return runs;
}

function header(route, run, rank) {
  clear(picker);
  if (standalone) return standaloneHeader(route, run, rank);
  const sel = el("select", {id: "run-picker", "aria-label": "run", on: {change: (e) => { location.hash = href(e.target.value, route.view || "overview"); }}},
    el("option", {value: "", disabled: true, selected: !run}, "choose a run…"),
    runs.map((r) => el("option", {value: r.id, selected: run && r.id === run.id}, r.label)));
  picker.append(el("label", null, "run ", sel));
  if (run && run.ranks && run.ranks.length > 1) {
    picker.append(el("label", null, "rank ", el("select", {id: "rank-picker", "aria-label": "rank",
      on: {change: (e) => { location.hash = href(run.id, route.view, e.target.value, route.stepMs); }}},
      run.ranks.map((k) => el("option", {value: k, selected: k === rank}, String(k))))));
  }
  picker.append(el("a", {class: "navbtn", id: "diff-link", href: "#/diff"}, "Compare runs"));
  navLinks(route, run, rank);
}

function navLinks(route, run, rank) {
  clear(nav);
  if (route.page === "run" && run) {
    const views = run.kind === "snapshot" ? SNAPSHOT_VIEWS : carriesSnapshot() ? [...VIEWS, ...SNAPSHOT_VIEWS] : VIEWS;
    for (const [key, label] of views) {
      if (run.cpu_only && DEVICE_VIEWS.has(key) && key !== route.view) continue;
      nav.append(el("a", {href: href(run.id, key, rank, route.stepMs), "data-view": key, class: key === route.view ? "on" : null}, label));
    }
  }
}

/** The standalone report's header: its title, the rank picker, the views; no run list, no compare. */
function standaloneHeader(route, run, rank) {
  picker.append(el("span", {class: "reporttitle", id: "report-title"}, reportTitle()));
  if (run && run.ranks && run.ranks.length > 1) {
    picker.append(el("label", null, "rank ", el("select", {id: "rank-picker", "aria-label": "rank",
      on: {change: (e) => { location.hash = href(run.id, route.view, e.target.value); }}},
      run.ranks.map((k) => el("option", {value: k, selected: k === rank}, String(k))))));
  }
  navLinks(route, run, rank);
}

function loading(text) {
  return el("div", {class: "loading"}, el("span", {class: "spinner"}), text);
}

function failure(err) {
  return el("section", {class: "card error"}, el("h2", null, "Could not show this"), el("p", {class: "errmsg"}, err.message || String(err)));
}

async function show(nodes, my) {
  if (my !== token) return;
  clear(main);
  main.append(...[nodes].flat().filter(Boolean));
}

async function route() {
  const my = ++token;
  clearTimeout(pollTimer);
  const r = parseRoute();
  try {
    if (!runs.length) await loadRuns();
    if (standalone && embeddedKind() === "diff") return await diffPage({page: "diff", base: "base", next: "new"}, my);
    if (standalone && r.page !== "run") return await runPage({page: "run", id: runs[0].id, view: "overview", rank: null}, my);
    if (r.page === "run") return await runPage(r, my);
    if (r.page === "diff") return await diffPage(r, my);
    return await homePage(my);
  } catch (err) {
    show(failure(err), my);
  }
}

async function runPage(r, my) {
  let run = runs.find((x) => x.id === r.id);
  if (!run) throw new Error("no such run: pick one from the list");
  if (run.kind === "snapshot") return snapshotPage({...r, view: "snapshot"}, run, my);
  header(r, run, null);
  show(loading(`analysing ${run.label}… (once; later views are instant)`), my);
  const whole = await runDocument(r.id, undefined, r.stepMs);
  if (run.state !== "ready") { await loadRuns(); run = runs.find((x) => x.id === r.id) || run; }
  const ranks = (whole.ranks || []).map((x) => x.rank);
  const rank = r.rank !== null && ranks.includes(Number(r.rank)) ? Number(r.rank) : ranks[0];
  header(r, {...run, ranks}, rank);
  if (rank === undefined) return show(el("section", {class: "card"}, empty("this run has no ranks")), my);
  if (r.view === "snapshot" && carriesSnapshot()) {  // a report of a run with its allocator snapshot
    document.title = `Memory snapshot · ${reportTitle()}`;
    return show(await snapshotView({runId: r.id, run}), my);
  }
  const doc = await runDocument(r.id, rank, r.stepMs);
  const entry = VIEWS.find(([k]) => k === r.view) || VIEWS[0];
  document.title = standalone ? `${entry[1]} · ${reportTitle()}` : `${entry[1]} · ${run.label} · stepscope`;
  const setStep = (ms) => { location.hash = href(r.id, entry[0], rank, ms); };
  const nodes = await entry[2]({runId: r.id, rank, doc, run, remedy: r.remedy, stepMs: r.stepMs, setStep});
  show(nodes, my);
  if (my === token) sayView(main, (doc.ranks || [])[0]?.device);  // an NPU's views in its words
}

async function snapshotPage(r, run, my) {
  header(r, run, null);
  show(loading(standalone ? `drawing ${run.label}…` : `reading ${run.label}… (once, on the server; the page receives only what it shows)`), my);
  document.title = standalone ? `Memory snapshot · ${reportTitle()}` : `Memory snapshot · ${run.label} · stepscope`;
  show(await snapshotView({runId: r.id, run}), my);
}

function runMeta(r) {
  if (r.state === "error") return "could not be read";
  if (r.state !== "ready") return "analysing…";
  if (r.kind === "snapshot") return [`allocator snapshot · peak live ${fmtBytes(r.peak_live_bytes)}`, ` · reserved ${fmtBytes(r.reserved_bytes)}`];
  return [`${fmtMs(r.avg_step_ms)} / step`, ` · ${r.ranks.length} rank${r.ranks.length === 1 ? "" : "s"}`,
    r.device ? ` · ${r.device}` : " · CPU", ` · ${r.findings} finding${r.findings === 1 ? "" : "s"}`];
}

async function homePage(my) {
  header({page: "home"}, null, null);
  document.title = "stepscope";
  const rows = runs.map((r) => el("a", {class: `runcard state-${r.state}`, href: href(r.id, r.kind === "snapshot" ? "snapshot" : "overview"), "data-run": r.id},
    el("div", {class: "runlabel"}, r.label),
    el("div", {class: "runmeta"}, runMeta(r)),
    r.verdict ? el("div", {class: "runverdict"}, r.verdict.replace(/^rank \d+: /, "")) : null,
    r.error ? el("div", {class: "errmsg"}, r.error) : null));
  show(el("section", {class: "card"}, el("h2", null, `Runs (${runs.length})`),
    el("p", {class: "sub"}, "Every trace file and run directory found under the served directory. Pick one to see why its step is slow."),
    el("div", {class: "runs", id: "runs"}, rows)), my);
  if (runs.some((r) => r.state === "pending" || r.state === "loading")) {
    pollTimer = setTimeout(async () => { if (my === token) { await loadRuns(); homePage(my); } }, 1500);
  }
}

async function diffPage(r, my) {
  header({page: "diff"}, null, null);
  document.title = standalone ? reportTitle() : "compare · stepscope";
  if (standalone) return show(await diffView(r.base, r.next), my);
  const [older, newer] = defaultPair(runs);  // BASE recorded before NEW: the newest run and the one before it
  const base = r.base || older;
  const next = r.next || newer || base;
  const pick = diffPicker(runs, base, next, (b, n) => { location.hash = `#/diff?base=${encodeURIComponent(b)}&new=${encodeURIComponent(n)}`; });
  if (!r.base || !r.next) return show([pick, el("section", {class: "card"}, empty("Choose BASE and NEW, then Compare."))], my);
  show([pick, loading("comparing… (both runs are analysed once, then the diff is cached)")], my);
  show([pick, ...(await diffView(r.base, r.next))], my);
}

if (standalone) {
  document.querySelector("footer").textContent = "stepscope report · self-contained, works offline · "
    + "every number is in the embedded JSON (#stepscope-doc)";
}
window.addEventListener("hashchange", route);
route();
