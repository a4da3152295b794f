// The What-if view: the rank's standard remedies replayed (the §12 document's `remedies`), on a
// multi-rank run the job replayed with each straggler fixed and each remedy on every rank
// (`cluster.job_whatif`), and a form that replays any combination of changes through
// POST /api/v1/runs/<id>/whatif (the options of `stepscope whatif`; "fix a slow rank" only on a
// multi-rank run): the predicted step per step, the mean and median, the bound before and after,
// and the critical-path shares before and after. `remedy=fix-rank` in the route (the straggler-rank
// finding's link) replays the route's rank fixed at once; a standalone report shows the document's
// numbers for it instead. Every value reaches the page as text.

import {el, svg, card, empty, clear, tip, fmtMs, fmtPct, isNum} from "./util.js";
import {dataTable} from "./tables.js";
import {replay as replayRun, standalone} from "./data.js";
import {stepControl} from "./stepms.js";

const PARTS = [["compute", "GPU compute", "#4c78a8"], ["communication", "communication", "#72b7b2"],
  ["copy", "memory copies", "#f58518"], ["input", "input pipeline", "#eeca3b"], ["host", "host (CPU, launches)", "#b279a2"]];

/** The parts a prediction shows, in its words (`job.part_words`, report/verdict_texts.py part_words: a CPU-only
 *  run has no device parts, and its host is "the model's CPU work", as its verdict says); PARTS' elsewhere. */
function partsOf(job) {
  const words = job.part_words;
  return words ? PARTS.filter(([k]) => k in words).map(([k, , color]) => [k, words[k], color]) : PARTS;
}

/** A bound in the prediction's words ("the model's CPU work" on a CPU-only run). */
function boundWord(job, bound) {
  return (job.part_words || {})[bound] || bound;
}

/** A run none of whose ranks ran on a device (a CPU-only run): its critical path has no device part. */
export function cpuOnly(doc) {
  const ranks = doc?.ranks || [];
  return ranks.length > 0 && ranks.every((r) => r.critical_path?.part_words && !("compute" in r.critical_path.part_words));
}

const FIELDS = [
  {name: "workers", label: "DataLoader workers", type: "workers", attrs: {placeholder: "e.g. 8, or 2:4"},
    hint: "N workers prepare batches while the step runs; where the loader already has workers, FROM:TO (the num_workers it ran with and after)"},
  {name: "drop_syncs", device: true, label: "Drop syncs (regex)", type: "text", attrs: {placeholder: "e.g. item, or . for all"},
    hint: "blocking calls whose name or op matches no longer block"},
  {name: "pin_copies", device: true, label: "Pinned copies", type: "checkbox", hint: "pageable copies pinned: half their time, non-blocking"},
  {name: "host_overhead", device: true, label: "Host overhead ×", type: "number", attrs: {min: 0, max: 1000, step: "any", placeholder: "0 = CUDA graphs"},
    hint: "launch calls and host work between them take F × their time"},
  {name: "host_in", label: "Host work in ops (REGEX=F)", type: "lines", attrs: {placeholder: "^Optimizer.step=0.5"},
    hint: "one per line: host work inside matching ops × F (a fused optimizer)"},
  {name: "fused_optimizer", label: "Fused optimizer", type: "checkbox",
    hint: "the optimizer step's host work and its kernels take 1/3 of their time (foreach / fused=True)"},
  {name: "no_compile", label: "No compiling in steps", type: "checkbox",
    hint: "torch.compile compiles once, before the steps: no recompiles (the host's compile time removed)"},
  {name: "batch_copies", device: true, label: "Batch small copies", type: "checkbox",
    hint: "the small host-device copies made as one: the ops issuing them take no host time"},
  {name: "amp", device: true, label: "Mixed precision", type: "checkbox",
    hint: "the eligible ops' kernels without Tensor Cores run faster by the device's half-precision peak over its FP32 one"},
  {name: "bf16", device: true, label: "bf16 over TF32", type: "checkbox",
    hint: "the TF32 Tensor-Core kernels run faster by the device's bf16 peak over its TF32 one (bf16 autocast)"},
  {name: "fill_sms", device: true, label: "Fill the SMs", type: "checkbox",
    hint: "under-filled grids (kernels of ≥ 10 µs with fewer blocks than ¾ of the SMs) recover half the SM time they leave idle"},
  {name: "pad_gemms", device: true, label: "Pad GEMM dims", type: "checkbox",
    hint: "fp16 / bf16 GEMMs with N or K not a multiple of 8 padded: their kernels take half their time"},
  {name: "fuse_elementwise", device: true, label: "Fuse elementwise", type: "checkbox",
    hint: "each run of unfused elementwise kernels fused into one pass, its longest kernel's time (torch.compile)"},
  {name: "fused_attention", device: true, label: "Fused attention", type: "checkbox",
    hint: "SDPA's math-backend kernels replaced by a fused kernel: the attention's FLOPs at the device's peak"},
  {name: "set_to_none", device: true, label: "zero_grad to None", type: "checkbox",
    hint: "zero_grad(set_to_none=True): the zeroing kernels and the host's work in Optimizer.zero_grad take no time"},
  {name: "no_launch_blocking", device: true, label: "No launch blocking", type: "checkbox",
    hint: "CUDA_LAUNCH_BLOCKING unset: launch calls that waited for their kernel take 5 µs"},
  {name: "move_host_work", device: true, label: "Move host work", type: "checkbox",
    hint: "the step's top-level ops that launch nothing and idle the GPU ≥ 5 % of the step moved off it"},
  {name: "no_algo_search", device: true, label: "No algorithm search", type: "checkbox",
    hint: "static shapes: the convolution calls that tried many cuDNN algorithms run one (1 / count of their kernels' time)"},
  {name: "move_loop_code", label: "Move loop code", type: "checkbox",
    hint: "the host's time outside every recorded op (the loop's Python, I/O, garbage collection) moved off the step"},
  {name: "scale", device: true, label: "Scale kernels (REGEX=F)", type: "lines", attrs: {placeholder: "gemm|conv=0.5"},
    hint: "one per line: matching kernels and copies take F × their time (AMP, Tensor Cores)"},
  {name: "overlap_comm", label: "Overlap communication", type: "checkbox", hint: "communication hidden under compute (an upper bound)"},
  {name: "batch", label: "Larger batch (FROM:TO)", type: "text", attrs: {placeholder: "e.g. 32:64"},
    hint: "work on tensors with a batch dimension of FROM, and the DataLoader, grow TO/FROM × (an upper bound)"},
  {name: "unprofiled", label: "Without the profiler (µs / op)", type: "number", attrs: {min: 0, max: 1000, step: "any", placeholder: "8"},
    hint: "each op the profiler recorded costs this much less (its own cost); the other changes then act on that step"},
  {name: "remedy", label: "Standard remedies (names)", type: "lines", attrs: {placeholder: "loader-workers"},
    hint: "one per line: a remedy by the name the findings and the remedies table give, replayed as they replay it"},
  {name: "fix_rank", label: "Fix a slow rank", type: "rank", multiRank: true, attrs: {min: 0, step: 1, placeholder: "e.g. 7"},
    hint: "rank R arrives with the second-to-last rank at every collective it was last at (the job replayed)"},
];
/** The route's `remedy` of the straggler-rank finding's link: the route's rank fixed. */
const FIX_RANK = "fix-rank";

/** The form's fields: "fix a slow rank" on a multi-rank run only; on a CPU-only run none that changes a device's
 *  work alone (`device`: the changes `stepscope whatif` refuses there, analysis/whatif/transforms.py device_part). */
function fieldsOf(multiRank, device = true) {
  return FIELDS.filter((f) => (multiRank || !f.multiRank) && (device || !f.device));
}

function stat(label, value, attrs = {}) {
  return el("div", {class: "stat", ...attrs}, el("div", {class: "v"}, value), el("div", {class: "k"}, label));
}

/** A checkbox's hint from the run's own document where a standard remedy is that one flag: its basis, the
 *  words the prediction shows (with this device's numbers: "run 14.8 × faster"); the static hint elsewhere. */
export function remedyHints(doc) {
  const hints = {};
  for (const rank of doc?.ranks || []) {
    for (const r of rank.remedies?.remedies || []) {
      const keys = Object.keys(r.options || {});
      if (keys.length === 1 && r.options[keys[0]] === true && !(keys[0] in hints)) hints[keys[0]] = r.basis;
    }
  }
  return hints;
}

function field(f, hints = {}) {
  const id = `wi-${f.name}`;
  const attrs = {id, name: f.name, spellcheck: "false", ...(f.attrs || {})};
  const input = f.type === "lines" ? el("textarea", {rows: 2, ...attrs})
    : el("input", {type: f.type === "checkbox" ? "checkbox" : f.type === "rank" ? "number" : f.type === "workers" ? "text" : f.type, ...attrs});
  return el("div", {class: `wi-field wi-${f.type}`}, el("label", {for: id}, f.label), input,
    el("div", {class: "hint", id: `${id}-hint`}, hints[f.name] || f.hint));
}

/** The form as the request body: only the fields given (the server checks every value). */
export function readForm(form) {
  const body = {};
  for (const f of FIELDS) {
    const input = form.elements[f.name];
    if (!input || input.disabled) continue;  // fix_rank: not on a one-rank run
    if (f.type === "checkbox") {
      if (input.checked) body[f.name] = true;
      continue;
    }
    const text = input.value.trim();
    if (!text) continue;
    if (f.type === "lines") body[f.name] = text.split("\n").map((s) => s.trim()).filter(Boolean);
    else if (f.type === "rank") body[f.name] = [Number(text)];
    else if (f.type === "workers") body[f.name] = /^\d+$/.test(text) ? Number(text) : text;  // N, or FROM:TO
    else body[f.name] = f.type === "number" ? Number(text) : text;
  }
  return body;
}

function fillForm(form, options) {
  form.reset();
  for (const [k, v] of Object.entries(options || {})) {
    const input = form.elements[k];
    if (!input) continue;
    if (input.type === "checkbox") input.checked = v === true;
    else input.value = Array.isArray(v) ? v.join("\n") : String(v);
  }
}

/** The change of the mean step a saving makes: −X shorter, +X longer (saved_ms is signed), 0 as is. */
function stepChange(savedMs) {
  return savedMs > 0 ? `−${fmtMs(savedMs)}` : savedMs < 0 ? `+${fmtMs(-savedMs)}` : fmtMs(0);
}

/** Measured (grey) and predicted (blue) mean step per remedy, the saving written at the end. */
function pairedBars(id, measured, remedies) {
  const W = 960, rowH = 34, nameW = 150, span = W - nameW - 130;
  const root = svg("svg", {class: "chart", id, viewBox: `0 0 ${W} ${rowH * remedies.length + 8}`, role: "img"});
  const max = Math.max(measured || 0, ...remedies.map((r) => r.predicted_mean_ms || 0)) || 1;
  remedies.forEach((r, i) => {
    const y = 4 + i * rowH;
    root.appendChild(svg("text", {class: "name", x: nameW - 8, y: y + 19, "text-anchor": "end"}, r.remedy));
    [["measured", measured, "#9aa5b1"], ["predicted", r.predicted_mean_ms, "#4c78a8"]].forEach(([side, v, color], j) => {
      const bar = svg("rect", {class: "seg", x: nameW, y: y + 3 + j * 14, width: Math.max(1, (span * (v || 0)) / max), height: 12,
        fill: color, "data-remedy": r.remedy, "data-side": side, "data-value": v});
      root.appendChild(tip(bar, [r.remedy, `${side}: ${fmtMs(v)}`]));
    });
    root.appendChild(svg("text", {class: r.saved_ms > 0 ? "axis neg change" : "axis change", "data-remedy": r.remedy,
      x: nameW + span + 10, y: y + 19}, stepChange(r.saved_ms)));
  });
  return root;
}

function remediesCard(ctx, onReplay) {
  const r = ctx.doc.ranks[0];
  const sec = r.remedies;
  if (!sec || !(sec.remedies || []).length) {
    return card("remedies", "Remedies replayed", null, empty(r.skipped?.remedies || "no what-if replay for this rank (no steps and no device work)"));
  }
  const m = sec.measured_mean_ms;
  const unprof = isNum(sec.unprofiled_mean_ms);
  // remedies with nothing in this trace to change (no DataLoader call, no optimizer step): named once, as the terminal does
  const shown = sec.remedies.filter((x) => x.applies !== false);
  const idle = sec.remedies.filter((x) => x.applies === false).map((x) => x.remedy);
  const rows = shown.map((x) => el("tr", {id: `remedy-${x.remedy}`, class: x.remedy === ctx.remedy ? "remedy on" : "remedy",
    "data-remedy": x.remedy, "data-predicted": x.predicted_mean_ms, "data-saved": x.saved_ms},
  el("td", {class: "txt"}, x.remedy), el("td", {class: "wrap"}, x.basis), el("td", {class: "num"}, fmtMs(x.predicted_mean_ms)),
  el("td", {class: "num"}, fmtMs(x.saved_ms)), el("td", {class: "num"}, fmtPct(m > 0 ? (100 * x.saved_ms) / m : null)),
  ...(unprof ? [el("td", {class: "num unprofiled"}, fmtMs(x.unprofiled_saved_ms))] : []),
  el("td", null, replayButton({"data-remedy": x.remedy}, () => onReplay(x, m, `rank ${ctx.rank}'s steps replayed with ${x.remedy}`, false)))));
  const heads = ["remedy", "basis", "predicted mean", "saved / step", "saved", ...(unprof ? ["saved / step, unprofiled"] : []), ""];
  const table = el("table", {class: "data", id: "remedies-table"}, el("thead", null, el("tr", null,
    heads.map((h, i) => el("th", {class: i >= 2 && i < heads.length - 1 ? "num" : null}, h)))),
  el("tbody", null, rows));
  const left = idle.length ? ` Left out, nothing in this trace for them to change: ${idle.join(", ")}.` : "";
  // the profiler's own cost changes this step's bound: the same remedies replayed on the step without it (the findings' gains)
  // where the step was replayed without the profiler's own cost, the bars are the remedies on that step: the findings' gains
  const without = unprof ? ` Without the profiler's own cost per recorded op the mean step is ${fmtMs(sec.unprofiled_mean_ms)}: `
    + "the bars and “saved / step, unprofiled” are each remedy on that step, the findings' gains." : "";
  const bars = unprof ? shown.map((x) => ({remedy: x.remedy, predicted_mean_ms: x.unprofiled_predicted_mean_ms,
    saved_ms: x.unprofiled_saved_ms})) : shown;
  const barsOf = unprof ? `grey: without the profiler's cost (${fmtMs(sec.unprofiled_mean_ms)}), blue: predicted on it` : "grey: measured, blue: predicted";
  return card("remedies", `Remedies replayed — rank ${ctx.rank}`, `Each standard remedy replayed on this rank's steps. Measured mean step ${fmtMs(m)}; ${barsOf}.${without}${left}`,
    stepControl(ctx, r), pairedBars("remedies-chart", unprof ? sec.unprofiled_mean_ms : m, bars), el("div", {class: "tablewrap"}, table));
}

/** The job replayed (`cluster.job_whatif`): each straggler fixed, each standard remedy on every rank. */
function jobCard(ctx, onReplay) {
  const jw = ctx.doc.cluster?.job_whatif;
  const m = jw?.measured_mean_ms;
  const rows = [
    ...(jw?.fixes || []).map((x) => ({...x, id: `job-fix-${x.rank}`, name: `fix rank ${x.rank}`,
      on: ctx.remedy === FIX_RANK && x.rank === ctx.rank})),
    ...(jw?.remedies || []).map((x) => ({...x, id: `job-remedy-${x.remedy}`, name: `${x.remedy} on every rank`, on: false})),
  ];
  if (!rows.length) return null;
  const body = rows.map((x) => el("tr", {id: x.id, class: x.on ? "remedy on" : "remedy", "data-predicted": x.predicted_mean_ms,
    "data-saved": x.saved_ms}, el("td", {class: "txt"}, x.name), el("td", {class: "wrap"}, x.basis),
  el("td", {class: "num"}, fmtMs(x.predicted_mean_ms)), el("td", {class: "num"}, fmtMs(x.saved_ms)),
  el("td", {class: "num"}, fmtPct(m > 0 ? (100 * x.saved_ms) / m : null)),
  el("td", null, replayButton({"data-job": x.id}, () => onReplay(x, m, `the job with ${x.name}`, true)))));
  const table = el("table", {class: "data", id: "job-whatif-table"}, el("thead", null, el("tr", null,
    ["change", "basis", "job's predicted mean", "saved / step", "saved", ""].map((h, i) => el("th", {class: i >= 2 && i <= 4 ? "num" : null}, h)))),
  el("tbody", null, body));
  return card("job-whatif", "The job replayed — every rank together", `Measured mean step of the job ${fmtMs(m)} (the slowest rank's `
    + "at each step). Each straggler fixed, and each standard remedy applied on every rank, the ranks tied at their collectives: "
    + "the advisor's gains for the job.", el("div", {class: "tablewrap"}, table));
}

/** A replay's options as `stepscope whatif` flags: {workers: 4, fix_rank: [7]} → "--workers 4 --fix-rank 7". */
export function whatifFlags(options) {
  const out = [];
  for (const [k, v] of Object.entries(options || {})) {
    const flag = `--${k.replace(/_/g, "-")}`;
    if (v === true) out.push(flag);
    else if (Array.isArray(v)) v.forEach((x) => out.push(`${flag} ${quoted(x)}`));
    else if (v !== false && v !== null && v !== undefined) out.push(`${flag} ${quoted(v)}`);
  }
  return out.join(" ");
}

function quoted(v) {
  const text = String(v);
  return /^[\w.:=+-]+$/.test(text) ? text : `'${text.replace(/'/g, "'\\''")}'`;
}

/** A standalone report's answer for a replay it carries (a rank's remedy, or the job with a rank fixed or
 *  a remedy on every rank): the numbers the document holds (ranks[].remedies, cluster.job_whatif). */
function documentNodes(row, measured, what, job) {
  const saved = measured > 0 ? (100 * row.saved_ms) / measured : null;
  return [
    el("p", {class: "note", id: "whatif-from-document"}, `Replayed when this report was written `
      + `(${job ? "cluster.job_whatif" : "ranks[].remedies"}): ${what}. Step by step, with the new bound: `
      + `\`stepscope whatif TRACE ${whatifFlags(row.options)}\`, or the trace in \`stepscope serve\`.`),
    el("div", {class: "stats wi-stats"},
      stat(job ? "job's mean step" : "mean step", `${fmtMs(measured)} → ${fmtMs(row.predicted_mean_ms)}`,
        {id: "whatif-mean", "data-measured": measured, "data-value": row.predicted_mean_ms}),
      stat("saved on the mean step", `${fmtMs(row.saved_ms)} (${fmtPct(saved)})`, {id: "whatif-saved", "data-value": row.saved_ms})),
    el("h3", null, "Change replayed"), el("ul", {class: "story", id: "whatif-changes"}, el("li", null, row.basis)),
  ];
}

/** A row's button: served, it replays the row's options (filled into the form); in a standalone report
 *  it shows the prediction the report carries for the row. */
function replayButton(attrs, onClick) {
  const mark = (e) => {  // the row shown (or replayed) is highlighted, as the finding's link highlights it
    const row = e.target.closest("tr"), table = e.target.closest("section")?.parentNode;
    table?.querySelectorAll("tr.remedy.on").forEach((tr) => tr.classList.remove("on"));
    row?.classList.add("on");
    onClick();
  };
  return el("button", {type: "button", class: "replay", ...attrs, on: {click: mark},
    title: standalone ? "show the prediction this report carries (replayed when it was written)" : "put its options in the form below and predict"},
  standalone ? "show" : "replay");
}

function shareBar(id, shares, parts = PARTS) {
  const bar = el("div", {class: "hstack", id});
  for (const [k, label, color] of parts) {
    const v = shares[k];
    if (!isNum(v) || v <= 0) continue;
    const seg = el("span", {class: "hseg", "data-cat": k, "data-value": v, title: `${label}: ${fmtPct(v)}`});
    seg.style.width = `${v}%`;
    seg.style.background = color;
    bar.appendChild(seg);
  }
  return bar;
}

/** Whose critical path the shares are: the rank that bounds the job before and after (boundText). */
function sharesTitle(job) {
  const b = job.bound_rank_before, a = job.bound_rank_after;
  if (b === null || b === undefined) return "Critical path, before and after";
  const who = b === a ? `rank ${b}` : `rank ${b} before, rank ${a} after`;
  return `Critical path of the rank that bounds the job (${who}), before and after`;
}

function sharesBlock(job) {
  const before = job.critical_path_pct_before || {}, after = job.critical_path_pct_after || {};
  const parts = partsOf(job);
  const rows = parts.filter(([k]) => (before[k] || 0) > 0 || (after[k] || 0) > 0).map(([k, label, color]) => {
    const sw = el("i", {class: "sw"});
    sw.style.background = color;
    return el("tr", {"data-part": k}, el("td", null, sw, label), el("td", {class: "num"}, fmtPct(before[k])), el("td", {class: "num"}, fmtPct(after[k])));
  });
  return el("div", {class: "wi-shares"}, el("h3", null, sharesTitle(job)),
    el("div", {class: "wi-barrow"}, el("span", {class: "k"}, "before"), shareBar("whatif-shares-before", before, parts)),
    el("div", {class: "wi-barrow"}, el("span", {class: "k"}, "after"), shareBar("whatif-shares-after", after, parts)),
    el("table", {class: "data compact", id: "whatif-shares"}, el("thead", null, el("tr", null, el("th", null, "part"),
      el("th", {class: "num"}, "before"), el("th", {class: "num"}, "after"))), el("tbody", null, rows)));
}

function stepsTable(res) {
  const rows = res.job.steps.map((s) => ({step: String(s.step), measured_ms: s.measured_ms, predicted_ms: s.predicted_ms,
    saved_ms: s.measured_ms - s.predicted_ms}));
  const columns = [{key: "step", label: "step"}, {key: "measured_ms", label: "measured", num: true, fmt: fmtMs},
    {key: "predicted_ms", label: "predicted", num: true, fmt: fmtMs}, {key: "saved_ms", label: "saved", num: true, fmt: fmtMs}];
  return dataTable(rows, columns, {id: "whatif-steps", sortKey: "step", desc: false, filterKey: "step", limit: 100});
}

/** "host", or on a job "host (rank 7, the rank the others wait for)" (report/whatif_view.py bound_text). */
function boundText(job, when) {
  const rank = job[`bound_rank_${when}`], bound = boundWord(job, job[`bound_${when}`]);
  if (rank === null || rank === undefined) return bound;
  const why = job[`paced_by_${when}`] !== null && job[`paced_by_${when}`] !== undefined ? "the rank the others wait for" : "the slowest";
  return `${bound} (rank ${rank}, ${why})`;
}

/** The prediction: headline numbers, the verdict before → after, the changes, shares, the steps. */
export function resultNodes(res) {
  const job = res.job;
  const saved = job.measured_mean_ms > 0 ? (100 * job.saved_mean_ms) / job.measured_mean_ms : null;
  const out = [
    el("div", {class: "verdict", id: "whatif-verdict"}, `Bound by ${boundText(job, "before")} now; after this, bound by ${boundText(job, "after")}.`),
    el("div", {class: "stats wi-stats"},
      stat("mean step", `${fmtMs(job.measured_mean_ms)} → ${fmtMs(job.predicted_mean_ms)}`,
        {id: "whatif-mean", "data-measured": job.measured_mean_ms, "data-value": job.predicted_mean_ms}),
      stat("median step", `${fmtMs(job.measured_median_ms)} → ${fmtMs(job.predicted_median_ms)}`,
        {id: "whatif-median", "data-measured": job.measured_median_ms, "data-value": job.predicted_median_ms}),
      stat("saved on the mean step", `${fmtMs(job.saved_mean_ms)} (${fmtPct(saved)})`, {id: "whatif-saved", "data-value": job.saved_mean_ms}),
      ...(isNum(job.samples_per_step_factor) && job.samples_per_step_factor !== 1
        ? [stat(`samples/s (×${job.samples_per_step_factor} samples a step)`,
          `${job.throughput_change_pct >= 0 ? "+" : ""}${fmtPct(job.throughput_change_pct)}`,
          {id: "whatif-throughput", "data-value": job.throughput_change_pct})] : []),
      stat("bound by", `${boundWord(job, job.bound_before)} → ${boundWord(job, job.bound_after)}`, {id: "whatif-bound", class: "stat textual",
        "data-before": job.bound_before, "data-after": job.bound_after})),
    el("h3", null, "Changes replayed together"),
    el("ul", {class: "story", id: "whatif-changes"}, res.changes.map((c) => el("li", null, c))),
    ...(res.caveats || []).map((c) => el("p", {class: "note whatif-caveat"}, `Caveat: ${c}`)),
    sharesBlock(job), el("h3", null, "Each step, measured and predicted (the slowest rank's)"), stepsTable(res),
  ];
  if (res.ranks.length > 1) {
    out.push(el("h3", null, "Per rank"), el("table", {class: "data compact", id: "whatif-ranks"},
      el("thead", null, el("tr", null, ["rank", "bound before", "bound after"].map((h) => el("th", null, h)))),
      el("tbody", null, res.ranks.map((r) => el("tr", null, el("td", null, String(r.rank)), el("td", null, r.bound_before ? boundWord(job, r.bound_before) : "–"),
        el("td", null, r.bound_after ? boundWord(job, r.bound_after) : "–"))))));
  }
  return out;
}

async function predict(ctx, form, output, button) {
  const body = readForm(form);
  button.disabled = true;
  output.dataset.state = "loading";
  clear(output).append(el("div", {class: "loading"}, el("span", {class: "spinner"}), "replaying every step…"));
  try {
    const res = await replayRun(ctx.runId, body, ctx.stepMs);
    clear(output).append(...resultNodes(res));
    output.dataset.state = "ready";
  } catch (err) {
    clear(output).append(el("p", {class: "errmsg", id: "whatif-error"}, err.message || String(err)));
    output.dataset.state = "error";
  } finally {
    button.disabled = false;
    if (output.isConnected) output.closest("section").scrollIntoView({block: "start"});
  }
}

export function whatifView(ctx) {
  const multiRank = (ctx.run?.ranks?.length || 1) > 1 || (ctx.doc.cluster?.rank_count || 1) > 1;
  const output = el("div", {id: "whatif-output", "data-state": "empty"}, empty("Name one or more changes and press Predict."));
  const go = el("button", {type: "submit", class: "primary", id: "whatif-go"}, "Predict");
  const hints = remedyHints(ctx.doc);
  const form = el("form", {id: "whatif-form", class: "wi-form", novalidate: true, on: {submit: (e) => { e.preventDefault(); predict(ctx, form, output, go); }}},
    el("div", {class: "wi-grid"}, fieldsOf(multiRank, !cpuOnly(ctx.doc)).map((f) => field(f, hints))),
    el("div", {class: "wi-actions"}, go, el("button", {type: "button", id: "whatif-clear", on: {click: () => form.reset()}}, "Clear")));
  // served: a row's button replays its options; standalone: it shows what the report carries for it
  const replay = (row, measured, what, job) => {
    fillForm(form, row.options);
    if (!standalone) return predict(ctx, form, output, go);
    clear(output).append(...documentNodes(row, measured, what, job));
    output.dataset.state = "document";
    output.closest("section")?.scrollIntoView({block: "start"});
  };
  const formCard = card("whatif", "Try a change", "Replays every step of the run with the changes applied together "
    + "(stepscope whatif). Combined fixes do not simply add.", form);
  const resultCard = card("whatif-result", "Prediction", (ctx.run?.ranks?.length || 1) > 1
    ? "Every rank is replayed; the job's step is the slowest rank's at each step." : null, output);
  const remedy = ctx.remedy === FIX_RANK && multiRank ? fixOf(ctx)
    : (ctx.doc.ranks[0].remedies?.remedies || []).find((x) => x.remedy === ctx.remedy);
  if (standalone) {  // a new replay needs the trace: the form only shows a carried replay's options
    form.classList.add("offline");
    form.querySelectorAll("input, textarea, button").forEach((n) => { n.disabled = true; });
    go.title = "a new replay needs the trace: open it with `stepscope serve`";
    formCard.append(el("p", {class: "note", id: "whatif-standalone"}, "This report carries the replays above (their "
      + "“show” buttons show each prediction); a new combination needs the trace: open it with `stepscope serve`, "
      + "or run `stepscope whatif TRACE …`."));
    const fixed = ctx.remedy === FIX_RANK;
    const measured = fixed ? ctx.doc.cluster?.job_whatif?.measured_mean_ms : ctx.doc.ranks[0].remedies?.measured_mean_ms;
    if (remedy && isNum(remedy.predicted_mean_ms)) {
      fillForm(form, remedy.options);
      clear(output).append(...documentNodes(remedy, measured, fixed ? `the job with rank ${remedy.rank} fixed`
        : `rank ${ctx.rank}'s steps replayed with ${remedy.remedy}`, fixed));
      output.dataset.state = "document";
    } else if (remedy) fillForm(form, remedy.options);
    if (output.dataset.state === "empty") clear(output).append(empty("Press “show” on a replay above to see its prediction."));
  } else if (remedy) replay(remedy);
  return [remediesCard(ctx, replay), jobCard(ctx, replay), formCard, resultCard].filter(Boolean);
}

/** The straggler-rank link's change: the route's rank fixed (with the document's numbers when it has them). */
function fixOf(ctx) {
  const fix = (ctx.doc.cluster?.job_whatif?.fixes || []).find((x) => x.rank === ctx.rank);
  return fix || {rank: ctx.rank, options: {fix_rank: [ctx.rank]}};
}
