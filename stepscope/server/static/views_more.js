// Memory (curves from /memory, tables from the §12 document) and distributed (per-rank bars from
// the whole document) views.

import {el, clear, card, empty, fmtMs, fmtPct, fmtNum, fmtBytes, isNum, BREAKDOWN} from "./util.js";
import {stackedColumns, lineChart, legend, niceTicks, stepDecimals} from "./charts.js";
import {dataTable} from "./tables.js";
import {memoryCurves, runDocument} from "./data.js";

const MEM_COLORS = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2"];

export async function memoryView(ctx) {
  const r = ctx.doc.ranks[0];
  const mem = r.memory;
  if (!mem) return [card("memory", "Memory", null, empty(r.skipped?.memory || "no memory events: profile with profile_memory=True"))];
  const data = await memoryCurves(ctx.runId, ctx.rank);
  const out = [];
  const curves = (data.curves || []).filter((c) => c.ts_ms && c.ts_ms.length > 1);
  // one time axis for every device (ms from the rank's first memory event), so their peaks line up
  const lo = Math.min(0, ...curves.map((c) => c.ts_ms[0])), hi = Math.max(...curves.map((c) => c.ts_ms[c.ts_ms.length - 1]));
  const axis = niceTicks(lo, hi, 6), xd = stepDecimals(axis.step);
  const charts = curves.map((c, i) => {
    const series = [{label: "allocated", color: MEM_COLORS[(2 * i) % MEM_COLORS.length], x: c.ts_ms, y: c.allocated_mb}];
    if (c.reserved_mb && c.reserved_mb.some((v) => v > 0)) series.push({label: "reserved", color: MEM_COLORS[(2 * i + 1) % MEM_COLORS.length], x: c.ts_ms, y: c.reserved_mb});
    const keys = series.map((s) => [s.label, s.label, s.color]);
    return el("div", {class: "memcurve"}, el("h3", null, c.device), legend(keys),
      lineChart(`memory-chart-${i}`, series, {xFmt: (v) => `${v.toFixed(1)} ms`, xTickFmt: (v) => `${v.toFixed(xd)} ms`, yFmt: (v) => `${Number(v.toPrecision(4))} MiB`, yUnit: " MiB",
        xDomain: [lo, hi], xTicks: axis.values}));
  });
  out.push(card("memory", "Memory over time", "Allocated (and reserved, when recorded) per device, on one time axis (ms from the "
    + "rank's first memory event); peaks are kept when downsampled.",
    charts.length ? charts : empty("too few memory events to draw a curve")));
  const devs = mem.devices || [];
  out.push(card("memory-devices", "Peaks", null, el("div", {class: "stats"}, devs.flatMap((d) => [
    el("div", {class: "stat"}, el("div", {class: "v"}, fmtBytes(d.peak_allocated_bytes)), el("div", {class: "k"}, `${d.device} peak allocated`)),
    isNum(d.peak_reserved_bytes) && d.peak_reserved_bytes > 0 ? el("div", {class: "stat"}, el("div", {class: "v"}, fmtBytes(d.peak_reserved_bytes)),
      el("div", {class: "k"}, `${d.device} peak reserved`)) : null]))));
  const columns = [{key: "name", label: "operator"}, {key: "device", label: "device"},
    {key: "self_increase_bytes", label: "self increase", num: true, fmt: fmtBytes},
    {key: "total_increase_bytes", label: "total increase", num: true, fmt: fmtBytes},
    {key: "alloc_count", label: "allocs", num: true, fmt: (v) => fmtNum(v)},
    {key: "alloc_bytes", label: "allocated", num: true, fmt: fmtBytes},
    {key: "free_count", label: "frees", num: true, fmt: (v) => fmtNum(v)}];
  out.push(card("memory-ops", "Memory by operator", allocationSummary(mem), dataTable(mem.by_op || [], columns, {id: "memory-table", sortKey: "self_increase_bytes"})));
  return out;
}

// The terminal's line (report/views/memory.py allocation_summary), from the same document counts.
export function allocationSummary(mem) {
  const n = (v) => Number(v || 0).toLocaleString("en-US");
  const line = `${n(mem.allocation_count)} allocations, ${n(mem.free_count)} frees within the trace`;
  if (!isNum(mem.freed_count)) return `${line} (no addresses recorded: frees cannot be paired with allocations)`;
  return `${line}; ${n(mem.freed_count)} of the allocations freed within it`;
}

const SPLIT = [["computation", "Computation", "#4c78a8"], ["overlap", "Overlap", "#9ecae9"],
  ["communication", "Communication (not overlapped)", "#e45756"], ["other", "Other (idle, copies)", "#bab0ac"]];

// what delays a culprit (analysis/arrivals.py CAUSES; report/texts.py CAUSE_WORDS)
const CAUSES = {late_start: "started the step late", compute: "GPU compute", communication: "other communication",
  copy: "copies", input: "input pipeline", host: "host: CPU ops, launches"};

function causeText(cause, cpuOnly) {
  return cause === "host" && cpuOnly ? "CPU work: its ops and the code around them" : CAUSES[cause] || String(cause).replace(/_/g, " ");
}

function ranksText(list) {
  return list.length ? `rank${list.length > 1 ? "s" : ""} ${list.join(", ")}` : "none";
}

/** Collectives the ranks run on the host (gloo or MPI on the CPU): no communication kernel, and the
 *  matched collectives' group reads "host:…" (analysis/collective_records.py), or the step breakdown
 *  counts communication on a rank with no kernel of it. */
function hostCollectives(ranks, arr) {
  if (ranks.some((r) => r.distributed)) return false;
  return (arr?.collectives || []).some((c) => String(c.group || "").startsWith("host:"))
    || ranks.some((r) => (r.overview?.breakdown_ms?.communication || 0) > 0);
}

export async function distributedView(ctx) {
  const full = await runDocument(ctx.runId);
  const ranks = full.ranks || [];
  const withDist = ranks.filter((r) => r.distributed);
  const cluster = full.cluster;
  const arr = cluster && cluster.arrivals;
  const onHost = ranks.length > 1 && hostCollectives(ranks, arr);
  const cpuOnly = ranks.every((r) => !r.device);
  const out = [];
  if (withDist.length) {
    const cols = withDist.map((r) => ({label: String(r.rank), values: {computation: r.distributed.computation_ms,
      overlap: r.distributed.overlap_ms, communication: r.distributed.communication_ms, other: r.distributed.other_ms}}));
    out.push(card("distributed", "Per-rank split of the average step", "Computation, communication overlapped with it, communication alone, and the rest.",
      legend(SPLIT), stackedColumns("rank-chart", cols, SPLIT, {colName: "rank", xTitle: "rank"})));
  } else if (onHost) {
    // no communication kernel: the collectives run on the host (gloo on the CPU); each rank's step as the Overview splits it
    const keys = BREAKDOWN.filter(([k]) => ranks.some((r) => (r.overview?.breakdown_ms?.[k] || 0) > 0));
    const cols = ranks.filter((r) => r.overview).map((r) => ({label: String(r.rank), values: r.overview.breakdown_ms}));
    const rows = ranks.filter((r) => r.overview).map((r) => ({rank: r.rank, step_ms: r.overview.avg_step_ms, ...r.overview.breakdown_ms}));
    const columns = [{key: "rank", label: "rank", num: true, fmt: (v) => String(v)}, {key: "step_ms", label: "step", num: true, fmt: fmtMs},
      ...keys.map(([k, label]) => ({key: k, label: k === "communication" ? "communication (in collectives)" : label, num: true, fmt: fmtMs}))];
    out.push(card("distributed", "Per-rank split of the average step — collectives on the host",
      `${cpuOnly ? "This job's collectives run on the host (gloo on the CPU)" : "No communication kernel: this job's collectives "
        + "run on the host"}, so its communication is `
      + "the time a rank spends inside them, waiting for the others included. Each rank's average step split as its Overview "
      + "splits it (ms per step).", legend(keys), stackedColumns("rank-host-chart", cols, keys, {colName: "rank", xTitle: "rank"}),
      dataTable(rows, columns, {id: "rank-host-table", sortKey: "rank", desc: false, limit: 100})));
  } else {
    out.push(card("distributed", "Distributed", null, empty(ranks[0]?.skipped?.distributed || "no communication kernels in this run")));
  }
  if (cluster && cluster.ranks) {
    const slow = new Set(cluster.slow_ranks || []);
    const rows = cluster.ranks.map((r) => ({...r, slow: slow.has(r.rank) ? "slow" : ""}));
    const kernels = cluster.ranks.some((r) => (r.kernel_count || 0) > 0);
    // a CPU-only job: its ranks compared on their host work, named as their verdicts and critical paths name it
    const hostWords = ranks.find((r) => r.critical_path?.part_words)?.critical_path.part_words.host || "host work";
    const host = !kernels && cpuOnly && cluster.ranks.some((r) => isNum(r.host_ms));
    const columns = [{key: "rank", label: "rank", num: true, fmt: (v) => String(v)},
      ...(host ? [{key: "host_ms", label: hostWords, num: true, fmt: fmtMs}] : []), {key: "step_ms", label: "step", num: true, fmt: fmtMs},
      ...(kernels ? [{key: "compute_ms", label: "compute", num: true, fmt: fmtMs}, {key: "comm_ms", label: "comm kernels", num: true, fmt: fmtMs},
        {key: "wait_ms", label: "wait in comm kernels", num: true, fmt: fmtMs}, {key: "transfer_ms", label: "transfer", num: true, fmt: fmtMs},
        {key: "kernel_count", label: "kernels", num: true, fmt: (v) => fmtNum(v)}] : []), {key: "slow", label: "more work"}];
    // the imbalance figure as what it measures, never "balanced": ranks that wait for a late one have equal steps
    const of = cluster.imbalance_words || {step: "step time", host: "host work (its waits in collectives aside)"}[cluster.imbalance_of]
      || "compute time (kernels)";
    const head = `Per average step. Load imbalance of ${of} across ranks ${fmtPct(cluster.imbalance_pct)} (the busiest rank over the mean); `
      + `ranks with more work (${kernels ? "kernels, compute, step" : "step"}): ${(cluster.slow_ranks || []).join(", ") || "none"}; `
      + "who arrives late at the collectives: below.";
    const sub = kernels ? head : cpuOnly ? `${head} No rank ran on a device: the ranks are compared on ${of} and their steps; step `
      + "times even out when the early ranks wait in the collectives." : `${head} No rank runs kernels, so the kernel columns (compute, `
      + "communication kernels, their wait and transfer) are left out; step times even out when the early ranks wait in the collectives.";
    out.push(card("cluster", "Ranks", sub, dataTable(rows, columns, {id: "cluster-table", sortKey: "rank", desc: false, filterKey: "slow", limit: 100})));
  }
  if (arr && arr.ranks) out.push(...arrivalsCards(arr, onHost, cpuOnly));
  const links = cluster && cluster.slow_links;
  if (links && links.links && links.links.length) {
    const columns = [{key: "link", label: "link"}, {key: "kind", label: "kind"}, {key: "bytes", label: "bytes", num: true, fmt: fmtBytes},
      {key: "time_ms", label: "time", num: true, fmt: fmtMs}, {key: "bandwidth_gbps", label: "GB/s", num: true, fmt: (v) => (isNum(v) ? v.toFixed(2) : "–")},
      {key: "class_median_gbps", label: "median GB/s", num: true, fmt: (v) => (isNum(v) ? v.toFixed(2) : "–")},
      {key: "slow", label: "slow", fmt: (v) => (v ? "slow" : "")}];
    out.push(card("slow-links", "Links", `${(links.slow || []).length} of ${links.links.length} below ${links.slow_fraction} × the median of their kind and size.`,
      dataTable(links.links, columns, {id: "slow-links-table", sortKey: "bandwidth_gbps", desc: false, filterKey: "kind", limit: 100})));
  }
  out.push(...exposedCommCards(cluster && cluster.exposed_comm), ...commMatrixCards(cluster && cluster.comm_matrix));
  out.push(...pipelineCards(cluster && cluster.pipeline), ...allToAllCards(cluster && cluster.all_to_all));
  const mine = ranks.find((r) => r.rank === ctx.rank);
  const coll = mine && mine.distributed ? mine.distributed.collectives || [] : [];
  if (coll.length) {
    const columns = [{key: "type", label: "collective"}, {key: "process_group", label: "group"},
      {key: "count", label: "count", num: true, fmt: (v) => fmtNum(v)}, {key: "bytes", label: "bytes", num: true, fmt: fmtBytes},
      {key: "time_ms", label: "time", num: true, fmt: fmtMs}, {key: "mean_latency_ms", label: "mean latency", num: true, fmt: fmtMs},
      {key: "busbw_gbps", label: "bus GB/s", num: true, fmt: (v) => (isNum(v) ? v.toFixed(1) : "–")}];
    out.push(card("collectives", `Collectives — rank ${ctx.rank}`, `Overlap ratio ${fmtPct(mine.distributed.overlap_ratio_pct)}; wait ${
      fmtMs(mine.distributed.wait_ms)}, transfer ${fmtMs(mine.distributed.transfer_ms)} per step.`,
      dataTable(coll, columns, {id: "collectives-table", sortKey: "time_ms", filterKey: "type"})));
  }
  return out;
}

/** Culprits (late at the collectives) and victims (waiting for them), per average step, and the latest
 *  collectives with each rank's arrival: cluster.arrivals (kernels, or the collectives the host runs). */
function arrivalsCards(arr, onHost, cpuOnly) {
  const n = arr.collective_count;
  const culprits = (arr.culprits || []).map((c) => `rank ${c.rank} (${causeText(c.cause, cpuOnly)}; ${fmtMs(c.late_ms)} late per step, `
    + `last at ${fmtNum(c.times_last)} of ${fmtNum(n)} collectives)`).join("; ") || "none";
  const victims = ranksText(arr.victims || []);
  const columns = [{key: "rank", label: "rank", num: true, fmt: (v) => String(v)}, {key: "role", label: "role"},
    {key: "times_last", label: `last at (of ${fmtNum(n)} collectives)`, num: true, fmt: (v) => fmtNum(v)},
    {key: "late_ms", label: "late, per step", num: true, fmt: fmtMs},
    {key: "wait_ms", label: "waits for the last arrival, per step", num: true, fmt: fmtMs},
    {key: "wait_on_culprits_ms", label: "of it on culprits, per step", num: true, fmt: fmtMs}];
  const where = onHost ? `, run on the host${cpuOnly ? " (gloo on the CPU)" : ""}` : "";
  const out = [card("arrivals", "Culprits and victims at the collectives", `${fmtNum(n)} collectives matched across ranks${where}; `
    + `times are ms per average step (${fmtNum(arr.step_count)} steps). Culprits: ${culprits}. Victims (wait for the culprits at least `
    + `half their lateness): ${victims}.`, dataTable(arr.ranks, columns, {id: "arrivals-table", sortKey: "late_ms", filterKey: "role", limit: 100}))];
  const coll = arr.collectives || [];
  if (coll.length) {
    const order = arr.ranks.map((r) => r.rank);
    const at = (list) => (list || []).map((v, i) => `${order[i]}: ${isNum(v) ? v.toFixed(2) : "–"}`).join(", ");
    const rows = coll.map((c) => {
      const causes = Object.entries(c.cause_ms || {}).filter(([, v]) => v > 0).sort((p, q) => q[1] - p[1]);
      return {index: c.index, type: c.type, group: c.group || "–", bytes: c.bytes, last_rank: c.last_rank ?? "tie",
        lateness_ms: c.lateness_ms, arrival: at(c.arrival_ms), wait: at(c.wait_ms), cause: causes.length ? causeText(causes[0][0], cpuOnly) : "–"};
    });
    const cols = [{key: "index", label: "#", num: true, fmt: (v) => String(v)}, {key: "type", label: "type"}, {key: "group", label: "group"},
      {key: "bytes", label: "bytes", num: true, fmt: (v) => (isNum(v) && v >= 0 ? fmtBytes(v) : "–")},
      {key: "last_rank", label: "last rank"}, {key: "lateness_ms", label: "lateness", num: true, fmt: fmtMs},
      {key: "cause", label: "mostly"}, {key: "arrival", label: "arrival per rank (ms)"}, {key: "wait", label: "wait per rank (ms)"}];
    out.push(card("arrival-collectives", "Collectives, the latest last arrival first", `Each collective matched across ranks${where}: who arrived `
      + "last and how late (ms after the second-to-last arrival), what delayed it, and per rank its arrival (ms from the first "
      + "matched arrival of the trace, clocks aligned on the collectives' ends) and its wait for the last one (ms).",
    dataTable(rows, cols, {id: "arrival-collectives-table", sortKey: "lateness_ms", filterKey: "type", limit: 100})));
  }
  return out;
}

/** The nn.Module tree (the §12 `modules` rows linked by `parent`): self and total host and device
 *  time; a row with children folds and unfolds on click. */
export function modulesView(ctx) {
  const r = ctx.doc.ranks[0];
  const rows = r.modules || [];
  if (!rows.length) {
    return [card("modules", "Modules", null, empty(r.skipped?.modules || "no nn.Module events on this rank: profile with with_stack=True / with_modules=True"))];
  }
  const names = new Set(rows.map((m) => m.name));
  const kids = new Map();
  for (const m of rows) {
    const p = m.parent !== null && m.parent !== undefined && names.has(m.parent) ? m.parent : "";
    if (!kids.has(p)) kids.set(p, []);
    kids.get(p).push(m);
  }
  const byTime = (a, b) => (b.device_total_ms || 0) - (a.device_total_ms || 0) || (b.host_total_ms || 0) - (a.host_total_ms || 0);
  kids.forEach((list) => list.sort(byTime));
  const tbody = el("tbody");
  const open = new Set((kids.get("") || []).map((m) => m.name));
  const render = () => {
    clear(tbody);
    const walk = (parent, level) => {
      for (const m of kids.get(parent) || []) {
        const has = kids.has(m.name);
        const toggle = has ? el("button", {type: "button", class: "fold", "aria-label": "fold", on: {click: () => {
          if (open.has(m.name)) open.delete(m.name); else open.add(m.name);
          render(); }}}, open.has(m.name) ? "▾" : "▸") : el("span", {class: "fold"});
        const name = el("td", {class: "txt", title: m.name}, toggle, m.name);
        name.style.paddingLeft = `${8 + 16 * level}px`;
        tbody.append(el("tr", {"data-module": m.name, "data-depth": level}, name, el("td", {class: "num"}, fmtNum(m.calls)),
          ...["host_total_ms", "host_self_ms", "device_total_ms", "device_self_ms"].map((k) => el("td", {class: "num", "data-key": k}, fmtMs(m[k])))));
        if (has && open.has(m.name)) walk(m.name, level + 1);
      }
    };
    walk("", 0);
  };
  render();
  const head = el("thead", null, el("tr", null, ["module", "calls", "host total", "host self", "device total", "device self"]
    .map((h, i) => el("th", {class: i ? "num" : null}, h))));
  const all = el("button", {type: "button", id: "modules-expand", on: {click: () => { kids.forEach((_, k) => k && open.add(k)); render(); }}}, "expand all");
  return [card("modules", "Modules", `${fmtNum(rows.length)} nn.Module instances as a tree (largest device time first); self excludes child modules. Click ▸ to unfold.`,
    el("div", {class: "tlbar"}, all), el("div", {class: "tablewrap"}, el("table", {class: "data", id: "modules-table"}, head, tbody)))];
}

// pipeline stages per pipeline: busy, bubble (warm-up / interior / cool-down), recv wait, per average step: cluster.pipeline
function pipelineCards(pipe) {
  if (!pipe || !pipe.pipelines || !pipe.pipelines.length) return [];
  const columns = [{key: "stage", label: "stage", num: true, fmt: (v) => String(v)}, {key: "rank", label: "rank", num: true, fmt: (v) => String(v)},
    {key: "step_ms", label: "step", num: true, fmt: fmtMs}, {key: "busy_ms", label: "busy", num: true, fmt: fmtMs},
    {key: "other_ms", label: "other", num: true, fmt: fmtMs}, {key: "bubble_ms", label: "bubble", num: true, fmt: fmtMs},
    {key: "warmup_ms", label: "warm-up", num: true, fmt: fmtMs}, {key: "interior_ms", label: "interior", num: true, fmt: fmtMs},
    {key: "cooldown_ms", label: "cool-down", num: true, fmt: fmtMs}, {key: "p2p_wait_ms", label: "recv wait", num: true, fmt: fmtMs},
    {key: "bubble_pct", label: "bubble %", num: true, fmt: fmtPct}];
  return pipe.pipelines.map((p) => card(`pipeline-${p.pipeline}`, `Pipeline ${p.pipeline}: ranks ${p.ranks.join(", ")}`,
    `Stage order from ${p.order}; ${p.step_count} steps. Slowest stage ${p.slowest_stage}: busy ${fmtMs(p.busy_max_ms)} against a mean of ${
      fmtMs(p.busy_mean_ms)} (imbalance ${fmtPct(p.imbalance_pct)}); its bubble, on the critical path: ${fmtMs(p.critical_bubble_ms)} per step (${
      fmtPct(p.critical_bubble_pct)}).`,
    dataTable(pipe.stages.filter((s) => s.pipeline === p.pipeline), columns, {id: `pipeline-table-${p.pipeline}`, sortKey: "stage", desc: false, limit: 200})));
}

// all-to-all / expert-parallel time and routed bytes per rank, per average step: cluster.all_to_all
function allToAllCards(a2a) {
  if (!a2a || !a2a.ranks || !a2a.ranks.length) return [];
  const ratio = (v) => (isNum(v) ? `${v.toFixed(2)}×` : "–");
  const columns = [{key: "rank", label: "rank", num: true, fmt: (v) => String(v)}, {key: "time_ms", label: "time", num: true, fmt: fmtMs},
    {key: "dispatch_ms", label: "dispatch", num: true, fmt: fmtMs}, {key: "combine_ms", label: "combine", num: true, fmt: fmtMs},
    {key: "bytes_out", label: "sent", num: true, fmt: fmtBytes}, {key: "bytes_in", label: "received", num: true, fmt: fmtBytes},
    {key: "routed_in_bytes", label: "routed in", num: true, fmt: fmtBytes}, {key: "time_vs_median", label: "time / median", num: true, fmt: ratio},
    {key: "routed_in_vs_median", label: "routed / median", num: true, fmt: ratio}];
  const top = (a2a.top_receivers || []).slice(0, 5).join(", ") || "unknown (no sizes recorded)";
  return [card("all-to-all", "All-to-all across ranks", `Time spread ${ratio(a2a.time_spread)}, routed bytes spread ${
    ratio(a2a.routed_in_spread)} (max / median); most routed bytes received: ${top}.`,
    dataTable(a2a.ranks, columns, {id: "all-to-all-table", sortKey: "routed_in_bytes", limit: 100}))];
}

// communication exposed (not hidden by the rank's compute) vs overlapped, per rank and step: cluster.exposed_comm,
// the same numbers as each rank's distributed.steps (communication_ms, overlap_ms)
function exposedCommCards(ex) {
  if (!ex || !ex.steps || !ex.steps.length) return [];
  const rows = ex.steps.map((r) => ({...r, step_label: r.step < 0 ? "all" : String(r.step)}));
  const columns = [{key: "rank", label: "rank", num: true, fmt: (v) => String(v)}, {key: "step_label", label: "step"},
    {key: "step_ms", label: "step", num: true, fmt: fmtMs}, {key: "comm_ms", label: "all comm", num: true, fmt: fmtMs},
    {key: "exposed_ms", label: "exposed", num: true, fmt: fmtMs}, {key: "overlapped_ms", label: "overlapped", num: true, fmt: fmtMs},
    {key: "exposed_pct", label: "exposed % of step", num: true, fmt: fmtPct},
    {key: "overlapped_pct", label: "overlapped % of comm", num: true, fmt: fmtPct}];
  const worst = (ex.ranks || []).reduce((a, b) => (a && a.exposed_ms >= b.exposed_ms ? a : b), null);
  const sub = worst ? `Most exposed: rank ${worst.rank}, ${fmtMs(worst.exposed_ms)} over its steps (${fmtPct(worst.exposed_pct)} of its step time).` : null;
  return [card("exposed-comm", "Communication exposed vs overlapped, per rank and step", sub,
    dataTable(rows, columns, {id: "exposed-comm-table", sortKey: "rank", desc: false, limit: 500}))];
}

// rank x rank traffic: cluster.comm_matrix (the profiler's matrix, or the Kineto p2p / all-to-all cells)
function commMatrixCards(m) {
  if (!m || !m.links || !m.links.length) return [];
  const columns = [{key: "src", label: "src", num: true, fmt: (v) => String(v)}, {key: "dst", label: "dst", num: true, fmt: (v) => String(v)},
    {key: "transport", label: "transport", fmt: (v) => v || "–"}, {key: "op", label: "op", fmt: (v) => v || "all"},
    {key: "basis", label: "peer from"}, {key: "count", label: "count", num: true, fmt: (v) => fmtNum(v)},
    {key: "bytes", label: "bytes", num: true, fmt: fmtBytes}, {key: "time_ms", label: "time", num: true, fmt: fmtMs},
    {key: "bandwidth_gbps", label: "GB/s", num: true, fmt: (v) => (isNum(v) ? v.toFixed(3) : "–")}];
  const unplaced = m.unplaced_kernels ? ` ${fmtNum(m.unplaced_kernels)} kernels name no peer or group (not in a cell).` : "";
  const guessed = m.links.some((l) => l.basis === "group" || l.basis === "world")
    ? " Peer from group / world: the trace names no Src/Dst Rank; all-to-all splits taken as even." : "";
  const total = isNum(m.links_total) ? m.links_total : m.links.length;
  const listed = total > m.links.length ? ` The ${fmtNum(m.links.length)} largest of ${fmtNum(total)} links are listed.` : "";
  return [card("comm-matrix", "Communication matrix", `From the ${m.source} of ranks ${(m.ranks || []).join(", ")}.${unplaced}${guessed}${listed}`,
    dataTable(m.links, columns, {id: "comm-matrix-table", sortKey: "bytes", filterKey: "op", limit: 200}))];
}
