// The per-run views drawn from a rank's §12 document: overview, step breakdown, kernels, operators.

import {el, card, empty, fmtMs, fmtPct, fmtNum, isNum, BREAKDOWN, breakdownOf, cpuRank} from "./util.js";
import {stackedColumns, legend} from "./charts.js";
import {dataTable} from "./tables.js";
import {stepControl} from "./stepms.js";

function stat(label, value, attrs = {}) {
  return el("div", {class: "stat", ...attrs}, el("div", {class: "v"}, value), el("div", {class: "k"}, label));
}

function jobVerdict(doc) {
  // a multi-rank run's first verdict is the job's (rank null): what bounds the whole job
  return (doc.verdicts || []).find((v) => v.rank === null || v.rank === undefined) || null;
}

function rankFindings(doc, rank) {
  // a multi-rank run: the job's findings, all in the advisor's order, as the terminal prints them (a
  // straggler on another rank is every rank's story); one rank: its own and the cluster's
  if (jobVerdict(doc)) return doc.findings || [];
  return (doc.findings || []).filter((f) => f.rank === null || f.rank === undefined || f.rank === rank ||
    (f.ranks || []).includes(rank));
}

function gainText(f, rank) {
  // a finding of several ranks is a share of the job's step (the same numbers as the terminal); this rank's own beside it
  const elsewhere = Number.isInteger(f.rank) && f.rank !== rank ? `, rank ${f.rank}` : "";
  const ev = f.evidence || {};
  const per = f.whole_trace ? "window" : isNum(ev.job_step_ms) ? "job step" : "step";  // a job finding: the job's step
  if ((f.ranks || []).length < 2) return `≈ ${fmtMs(f.est_gain_ms)} / ${per} (${fmtPct(f.est_gain_pct)})${elsewhere}`;
  const own = (f.evidence && f.evidence.per_rank_gain_ms) ? f.evidence.per_rank_gain_ms[String(rank)] : undefined;
  return `≈ ${fmtMs(f.est_gain_ms)} / job step (${fmtPct(f.est_gain_pct)}), ranks ${rankList(f.ranks)}` +
    (isNum(own) ? `; rank ${rank} alone ${fmtMs(own)}` : "");
}

function rankList(ranks) {
  const r = [...ranks].sort((a, b) => a - b);
  return r.length > 2 && r[r.length - 1] - r[0] === r.length - 1 ? `${r[0]}–${r[r.length - 1]}` : r.join(", ");
}

function verdictOf(doc, rank) {
  return (doc.verdicts || []).find((v) => v.rank === rank) || null;
}

function evidenceValue(v) {
  if (v === null || v === undefined) return "–";
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : String(Math.round(v * 1000) / 1000);
  if (typeof v === "string" || typeof v === "boolean") return String(v);
  return JSON.stringify(v).slice(0, 600);
}

/** One finding card: severity, title, gain, advice, evidence; a replayed gain links to the What-if view. */
export function findingCard(f, runId, rank, stepMs) {
  const sev = f.severity || "low";
  const ev = Object.entries(f.evidence || {});
  const remedy = f.evidence && typeof f.evidence.whatif_remedy === "string" ? f.evidence.whatif_remedy : null;
  const where = (f.ranks || []).includes(rank) || !Number.isInteger(f.rank) ? rank : f.rank;
  return el("li", {class: `finding sev-${sev}`, "data-rule": f.rule},
    el("div", {class: "fhead"}, el("span", {class: `badge ${sev}`}, sev), el("span", {class: "ftitle"}, f.title || f.rule),
      el("span", {class: "rule"}, f.rule), el("span", {class: "gain", title: f.basis || ""}, gainText(f, rank))),
    el("div", {class: "advice"}, f.advice || ""),
    remedy && runId ? el("a", {class: "whatif-link", "data-remedy": remedy,
      href: `#/run/${encodeURIComponent(runId)}/whatif?rank=${where}&remedy=${encodeURIComponent(remedy)}`
        + (stepMs ? `&step_ms=${encodeURIComponent(stepMs)}` : "")},
    `replayed (${remedy}): see What-if →`) : null,
    ev.length ? el("details", {class: "evidence"}, el("summary", null, `evidence (${ev.length})`),
      el("dl", null, ev.map(([k, v]) => [el("dt", null, k), el("dd", null, evidenceValue(v))])),
      f.basis ? el("p", {class: "note"}, "estimate: " + f.basis) : null) : null);
}

function avgBreakdown(ov) {
  const bd = ov.breakdown_ms || {};
  const total = ov.avg_step_ms || 0;
  const bar = el("div", {class: "hstack", id: "avg-breakdown"});
  for (const [k, label, color] of BREAKDOWN) {
    const v = bd[k];
    if (!isNum(v) || v <= 0 || total <= 0) continue;
    const seg = el("span", {class: "hseg", "data-cat": k, "data-value": v, title: `${label}: ${fmtMs(v)} (${fmtPct(100 * v / total)})`});
    seg.style.width = `${(100 * v) / total}%`;
    seg.style.background = color;
    bar.appendChild(seg);
  }
  const rows = BREAKDOWN.filter(([k]) => isNum(bd[k]) && bd[k] > 0).map(([k, label, color]) => {
    const sw = el("i", {class: "sw"});
    sw.style.background = color;
    return el("tr", null, el("td", null, sw, label), el("td", {class: "num"}, fmtMs(bd[k])),
      el("td", {class: "num"}, fmtPct(total > 0 ? (100 * bd[k]) / total : null)));
  });
  return [bar, el("table", {class: "data compact"}, el("tbody", null, rows))];
}

export function overviewView(ctx) {
  const {doc, rank} = ctx;
  const r = doc.ranks[0];
  const ov = r.overview;
  const v = verdictOf(doc, rank);
  const job = jobVerdict(doc);
  const found = rankFindings(doc, rank);
  const dev = r.device;
  const where = [dev ? dev.name : "CPU only", r.event_counts ? `${fmtNum(Object.values(r.event_counts).reduce((s, x) => s + x, 0))} events` : null,
    rankText(rank, (doc.cluster && doc.cluster.rank_count) || ctx.run?.ranks?.length || 1)].filter(Boolean).join(" · ");
  const hero = card("overview", "Overview", where,
    job || v ? el("div", {class: "verdict", id: "verdict"}, (job || v).text) : null,
    job && v ? el("div", {class: "verdict rank-verdict", id: "rank-verdict"}, v.text) : null,
    stepControl(ctx, r),
    ov ? el("div", {class: "stats"},
      // a job: its step (the job verdict's, the arrivals' and the job replay's one number), then the rank's own window
      job ? stat("job step", fmtMs(job.avg_step_ms), {id: "job-step", "data-value": job.avg_step_ms}) : null,
      stat(job ? `rank ${r.rank} average step` : "average step", fmtMs(ov.avg_step_ms), {id: "avg-step", "data-value": ov.avg_step_ms}),
      stat("steps", fmtNum(ov.step_count)),
      // a rank with no device (a CPU-only run) shows no device figures, as the terminal's overview
      ...(dev || ov.kernel_ms || isNum(ov.gpu_utilization_pct) ? [
        stat(said("GPU utilization", dev), fmtPct(ov.gpu_utilization_pct)),
        stat(said("est. SM efficiency", dev) + gridNote(ov), fmtPct(ov.sm_efficiency_pct)),
        stat("est. occupancy", fmtPct(ov.achieved_occupancy_pct)),
        // an Ascend NPU's kernels do not name the unit they ran on: no Tensor-Core figure there
        ...(dev && dev.vendor === "ascend" ? [] : [stat(said("Tensor Core time (every kernel, by its name)", dev), fmtPct(ov.tensor_core_pct))])] : []),
      stat("steps / s", isNum(ov.steps_per_s) ? ov.steps_per_s.toFixed(2) : "–")) : empty(r.skipped?.overview || "no overview for this rank"));
  hero.classList.add("hero");
  const parts = [hero];
  const priority = breakdownOf(r).map(([, label]) => label).join(" > ");
  if (ov) parts.push(card("avg-step-card", "Average step", `Where the average step's wall time goes (priority: ${priority}).`, avgBreakdown(ov)));
  parts.push(card("findings", `Findings (${found.length})`, "What shortens the bound first, then by estimated time saved per step.",
    found.length ? el("ol", {class: "findings"}, found.map((f) => findingCard(f, ctx.runId, rank, ctx.stepMs))) : el("p", {class: "empty ok", id: "no-findings"}, "No findings: nothing stands out.")));
  parts.push(deepCard(r, dev));
  if ((doc.diagnostics || []).length) parts.push(diagnosticsCard(doc.diagnostics));
  return parts;
}

// the device's own names for NVIDIA's parts, as the terminal and the findings say them
// (stepscope/report/platform_texts.py: _ROCM_WORDS on an AMD GPU, _NPU_WORDS on an Ascend NPU)
const DEVICE_WORDS = {amd: [["Tensor Core", "Matrix Core"], ["SM ", "CU "]], ascend: [["GPU", "NPU"], ["SM ", "AI core "]]};

function said(text, dev) {
  return (DEVICE_WORDS[dev && dev.vendor] || []).reduce((t, [from, to]) => t.split(from).join(to), text);
}

/** An Ascend NPU's rank: no Tensor-Core or SM figures (report/views/kernels.py's GPU_COLUMNS). */
function npu(r) {
  return (r.device && r.device.vendor) === "ascend";
}

/** Every text of a rendered view in the device's words (an Ascend NPU's, an AMD GPU's), as the terminal's
 * views are said (report/console.said): one pass over the view's text nodes, so no view repeats the choice. */
export function sayView(root, dev) {
  if (!DEVICE_WORDS[dev && dev.vendor]) return;
  const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    const text = said(n.nodeValue, dev);
    if (text !== n.nodeValue) n.nodeValue = text;
  }
}

function gridNote(ov) {
  // graph-replayed kernels record no grid: the SM efficiency weighs the others only, said so
  if (!isNum(ov.sm_efficiency_pct) || !isNum(ov.grid_kernel_pct) || ov.grid_kernel_pct >= 100) return "";
  return ` (of the kernels with a known grid: ${fmtPct(ov.grid_kernel_pct)} of kernel time)`;
}

function rankText(rank, count) {
  return count > 1 ? `rank ${rank} of ${count}` : `single rank (${rank})`;
}

function deepCard(r, dev) {
  const idle = r.idle, sync = r.sync, launch = r.launch, cp = r.critical_path;
  const stats = [];
  // the bound in the words the verdict uses ("the model's CPU work" on a CPU-only rank: report/verdict_texts.py part_words)
  if (cp && cp.bound_by) stats.push(stat("critical path bound by", String(cp.bound_text || cp.bound_by).replace(/_/g, " "), {class: "stat textual"}));
  if (idle) {
    stats.push(stat(said("GPU idle / step", dev), fmtMs(idle.idle_ms)), stat("idle: host wait", fmtMs(idle.host_wait_ms)),
      stat("idle: kernel wait", fmtMs(idle.kernel_wait_ms)), stat("idle: other gaps", fmtMs(idle.other_ms)));
  }
  if (sync && !cpuRank(r)) stats.push(stat("sync calls / step", isNum(sync.sync_calls_per_step) ? sync.sync_calls_per_step.toFixed(1) : "–"));
  if (launch) stats.push(stat("short kernels", fmtPct(launch.short_kernel_pct)));
  if (!stats.length) return null;
  return card("deep", "Deep analyses", "Per average step; the findings above say what to change.", el("div", {class: "stats"}, stats));
}

function diagnosticsCard(diags) {
  return card("diagnostics", "Diagnostics", "What ingest repaired or dropped.",
    el("table", {class: "data"}, el("thead", null, el("tr", null, ["severity", "name", "count", "example"].map((h) => el("th", null, h)))),
      el("tbody", null, diags.map((d) => el("tr", null, el("td", null, d.severity), el("td", {class: "txt"}, d.name),
        el("td", {class: "num"}, fmtNum(d.count)), el("td", {class: "txt", title: String(d.example ?? "")}, String(d.example ?? "")))))));
}

export function stepsView(ctx) {
  const r = ctx.doc.ranks[0];
  const steps = r.steps || [];
  if (!steps.length) return [card("breakdown", "Step time breakdown", null, empty(r.skipped?.breakdown || "no steps"))];
  const cols = steps.map((s) => ({label: String(s.step), values: s.breakdown_ms || {}}));
  const cats = breakdownOf(r);  // a CPU-only rank: no device categories (all 0 there)
  const chart = stackedColumns("step-chart", cols, cats, {xTitle: "ProfilerStep"});
  const rows = steps.map((s) => ({step: String(s.step), total_ms: s.total_ms, ...s.breakdown_ms}));
  const columns = [{key: "step", label: "step"}, {key: "total_ms", label: "total", num: true, fmt: fmtMs},
    ...cats.map(([k, label]) => ({key: k, label, num: true, fmt: fmtMs}))];
  return [card("breakdown", "Step time breakdown", "Each step's wall time split by priority; the parts sum to the step.",
    legend(cats), chart), card("steps-table", "Steps", null, dataTable(rows, columns, {id: "steps-data", sortKey: "step", desc: false, filterKey: "step", limit: 100}))];
}

export function kernelsView(ctx) {
  const r = ctx.doc.ranks[0];
  const rows = r.kernels || [];
  if (!rows.length) return [card("kernels", "Kernels", null, empty(r.skipped?.kernels || "no kernels on this rank"))];
  const us = (v) => (isNum(v) ? v.toFixed(1) : "–");
  const columns = [
    {key: "name", label: "kernel"}, {key: "calls", label: "calls", num: true, fmt: (v) => fmtNum(v)},
    {key: "total_ms", label: "total", num: true, fmt: fmtMs}, {key: "share_pct", label: "share", num: true, share: true},
    {key: "mean_us", label: "mean µs", num: true, fmt: us}, {key: "median_us", label: "median µs", num: true, fmt: us},
    {key: "max_us", label: "max µs", num: true, fmt: us},
    // an NPU's kernels launch no grid of blocks on SMs and name no Tensor Core: no such columns there
    ...(npu(r) ? [] : [{key: "mean_blocks_per_sm", label: "blocks/SM", num: true, fmt: (v) => (isNum(v) ? v.toFixed(2) : "–")},
      {key: "mean_occupancy_pct", label: "occupancy", num: true, fmt: (v) => fmtPct(v)},
      {key: "tc_used", label: "TC", fmt: (v) => (v ? "yes" : "")}]),
  ];
  const total = rows.reduce((s, k) => s + (k.total_ms || 0), 0);
  return [card("kernels", "Kernels", `${fmtNum(rows.length)} kernels, ${fmtMs(total)} of GPU time in all. Click a header to sort.`,
    dataTable(rows, columns, {id: "kernels-table", sortKey: "total_ms"})), categoriesCard(r)];
}

/** Device time by kind of work (the §12 `categories` section). */
function categoriesCard(r) {
  const cat = r.categories;
  const rows = (cat && cat.categories || []).filter((c) => (c.time_ms || 0) > 0);
  if (!rows.length) return null;
  const columns = [{key: "category", label: "category"}, {key: "time_ms", label: "device time", num: true, fmt: fmtMs},
    {key: "share_pct", label: "share", num: true, share: true}, {key: "ops", label: "ops", num: true, fmt: (v) => fmtNum(v)},
    {key: "activities", label: "activities", num: true, fmt: (v) => fmtNum(v)}];
  return card("categories", "Op categories", "Every kernel, copy and memset by kind of work: by its launching op's name, else its own name.",
    dataTable(rows, columns, {id: "categories-table", sortKey: "time_ms", filterKey: "category"}));
}

export function operatorsView(ctx) {
  const r = ctx.doc.ranks[0];
  const rows = r.operators || [];
  if (!rows.length) return [card("operators", "Operators", null, empty(r.skipped?.operators || "no operators on this rank"))];
  const columns = [
    {key: "name", label: "operator"}, {key: "calls", label: "calls", num: true, fmt: (v) => fmtNum(v)},
    {key: "device_self_ms", label: "device self", num: true, fmt: fmtMs},
    {key: "device_total_ms", label: "device total", num: true, fmt: fmtMs},
    {key: "host_self_ms", label: "host self", num: true, fmt: fmtMs},
    {key: "host_total_ms", label: "host total", num: true, fmt: fmtMs},
    ...(npu(r) ? [] : [{key: "tc_self_pct", label: "TC self", num: true, fmt: (v) => fmtPct(v)},
      {key: "tc_eligible", label: "TC eligible", fmt: (v) => (v ? "yes" : "")}]),
  ];
  return [card("operators", "Operators", `${fmtNum(rows.length)} operators (a same-name only child is merged into its parent).`,
    dataTable(rows, columns, {id: "operators-table", sortKey: "device_self_ms"}))];
}
