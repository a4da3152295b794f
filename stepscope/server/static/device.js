// The Graphs view: CUDA / HIP graph replays, compiled (Triton) kernels and inference phases, from the
// rank's §12 sections `graphs`, `compiled` and `phases` (each null where its analysis did not apply).

import {el, card, empty, fmtMs, fmtPct, fmtNum, isNum} from "./util.js";
import {dataTable} from "./tables.js";

const n = (v) => fmtNum(v);
const ms3 = (v) => fmtMs(v, 3);

function graphsCard(g) {
  const head = `${n(g.graph_launches)} graph launches ran ${n(g.graph_kernels)} of ${n(g.gpu_activities)} GPU activities, `
    + `${ms3(g.graph_gpu_ms)} (${fmtPct(g.graph_gpu_pct)} of GPU time); unattributed: ${n(g.unattributed)}`
    + (g.launched_before_trace ? ` (+${n(g.launched_before_trace)} launched before the trace began)` : "") + ".";
  const launches = dataTable(g.launches || [], [{key: "launcher", label: "launched from"}, {key: "kernels", label: "kernels", num: true, fmt: n},
    {key: "gpu_ms", label: "GPU", num: true, fmt: fmtMs}, {key: "cpu_us", label: "call µs", num: true, fmt: (v) => (isNum(v) ? v.toFixed(1) : "–")},
    {key: "first_delay_ms", label: "first kernel after", num: true, fmt: fmtMs},
    {key: "captured_kernels", label: "named at capture", num: true, fmt: n}], {id: "graph-launches", sortKey: "gpu_ms", filterKey: "launcher"});
  const capture = g.has_capture
    ? dataTable(g.capture_ops || [], [{key: "name", label: "op at capture"}, {key: "calls", label: "calls", num: true, fmt: n},
      {key: "kernels", label: "kernels", num: true, fmt: n}, {key: "ms", label: "GPU", num: true, fmt: fmtMs}], {id: "graph-capture", sortKey: "ms"})
    : el("p", {class: "note", id: "no-capture"}, "No capture trace: graph kernels are attributed to their launch and the code around it, "
      + "not to the ops that recorded them.");
  return card("graphs", "Graph replays", head, el("h3", null, "Launches"), launches, el("h3", null, "Ops at capture"), capture);
}

// a CPU-only rank (no device time): Inductor's code is C++ run inside the host's ops (report/verdict_texts.py)
const NO_DEVICE_COMPILED = "No device time: the code Inductor generates for the CPU runs inside the host's ops (see the operators view).";

// Dynamo's cache lookups and compiled regions a step: the document's sentence (report/verdict_texts)
function framesNote(c) {
  return c.frames_text ? el("p", {class: "note", id: "dynamo-frames"}, c.frames_text) : null;
}

function compiledCard(c) {
  if (!c.device_ms) return card("compiled", "torch.compile", NO_DEVICE_COMPILED, framesNote(c));
  const head = `${n(c.triton_kernels)} Triton kernels, ${ms3(c.triton_ms)} (${fmtPct(c.triton_pct)} of device time); `
    + `${fmtPct(c.in_graphs_pct)} of device time inside compiled graphs.`;
  const graphs = dataTable(c.graphs || [], [{key: "name", label: "compiled graph"}, {key: "calls", label: "calls", num: true, fmt: n},
    {key: "kernels", label: "kernels", num: true, fmt: n}, {key: "triton_kernels", label: "Triton", num: true, fmt: n},
    {key: "ms", label: "device", num: true, fmt: fmtMs}, {key: "step_share_pct", label: "of step", num: true, fmt: (v) => fmtPct(v)}],
  {id: "compiled-graphs", sortKey: "ms"});
  const kernels = (c.kernels || []).map((k) => ({...k, ops: (k.fused_ops || []).join(", ")}));
  const triton = dataTable(kernels, [{key: "name", label: "kernel"}, {key: "kind", label: "kind"}, {key: "ops", label: "fused ops"},
    {key: "count", label: "count", num: true, fmt: n}, {key: "ms", label: "time", num: true, fmt: fmtMs}], {id: "triton-kernels", sortKey: "ms"});
  return card("compiled", "Compiled kernels", head, framesNote(c), el("h3", null, "Compiled graphs"), graphs,
    el("h3", null, "Triton kernels"), triton);
}

function phasesCard(p) {
  const rows = p.phases || [];
  const table = dataTable(rows, [{key: "phase", label: "phase"}, {key: "steps", label: "steps", num: true, fmt: n},
    {key: "tokens", label: "tokens", num: true, fmt: n}, {key: "device_span_ms", label: "device span", num: true, fmt: fmtMs},
    {key: "per_token_ms", label: "per token", num: true, fmt: (v) => (isNum(v) ? `${v.toFixed(4)} ms` : "–")}],
  {id: "phase-table", sortKey: "device_span_ms", filterKey: "phase"});
  const mixed = rows.some((r) => r.phase === "mixed")
    ? el("p", {class: "note", id: "mixed-note"}, "A mixed step ran prefill and decode requests in one forward: its time is not split.") : null;
  return card("phases", "Inference phases", `Prefill and decode steps (from ${p.source === "vllm" ? "vLLM's step ranges" : "ranges named prefill / decode"}).`, table, mixed);
}

export function graphsView(ctx) {
  const r = ctx.doc.ranks[0];
  const out = [r.graphs ? graphsCard(r.graphs) : null, r.compiled ? compiledCard(r.compiled) : null, r.phases ? phasesCard(r.phases) : null].filter(Boolean);
  return out.length ? out : [card("graphs", "Graphs, compiled kernels, phases", null,
    empty("No CUDA / HIP graph replays, compiled (Triton) kernels or inference phases on this rank."))];
}
