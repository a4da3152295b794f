// The selected event's details under the timeline: name, kind, track, times, arguments, input shapes
// and types, call stack, enclosing host events, launching op / launch call, and the GPU work it
// launched. They come from data.js's eventDetails: GET .../event (stepscope.analysis.timeline_event)
// when served, the details embedded for the carried events in a standalone report — the same shape.
// Every related event is a button that jumps to it and selects it. Text via textContent.

import {eventDetails} from "./data.js";
import {el, clear, fmtNs, fmtNum} from "./util.js";

export class DetailsPanel {
  constructor(jump) {
    this.jump = jump;  // (ref) => reveal and select ref {row, track, ts_ns, dur_ns} in the same group
    this.node = el("div", {class: "tldetails", id: "timeline-details"});
    this.hint();
    this.seq = 0;
  }

  hint() {
    this.node.dataset.row = "";
    this.node.replaceChildren(el("p", {class: "muted"}, "Click an event for its details and its flows (zoom in until events are exact)."));
  }

  async show(sel, group, canvas) {
    const seq = ++this.seq;
    if (!sel) { this.hint(); return; }
    this.node.dataset.state = "loading";
    let det = null, err = null;
    try {
      det = await eventDetails(group.runId, group.rank, sel.row);
    } catch (e) { err = e; }
    if (seq !== this.seq) return;
    if (!det) det = bare(sel);
    this.render(det, group, err);
    canvas.relate([...det.kernels.map((k) => ({...k, dir: "out"})), ...[det.launch, det.op].filter(Boolean).map((r) => ({...r, dir: "in"}))]);
    this.node.dataset.state = "ready";
  }

  render(d, group, err) {
    const n = this.node;
    clear(n);
    n.dataset.row = d.row;
    n.dataset.durNs = d.dur_ns;
    n.dataset.rank = group.rank;
    n.append(el("h3", {id: "tl-det-name", class: "detname"}, d.name || "(unnamed)"));
    const rel = d.ts_ns - group.start_ns;
    const facts = [["kind", String(d.kind).replace(/_/g, " ")], ["track", trackLabel(group, d.track)],
      ["starts", `${fmtNs(rel)} after ${group.label}'s first event`], ["duration", fmtNs(d.dur_ns)],
      d.self_ns !== undefined ? ["self", fmtNs(d.self_ns)] : null, ["step", d.step >= 0 ? String(d.step) : "outside steps"],
      d.cat ? ["category", d.cat] : null, ["row", String(d.row)]].filter(Boolean);
    n.append(kv("tl-det-facts", facts));
    if (err) n.append(el("p", {class: "errmsg"}, `details unavailable: ${err.message}`));
    const args = Object.entries(d.args || {}).map(([k, v]) => [k, typeof v === "object" ? JSON.stringify(v) : String(v)]);
    if (args.length) n.append(el("h4", null, "Arguments"), kv("tl-det-args", args));
    const shapes = [["input dims", d.input_dims], ["input types", d.input_types], ["concrete inputs", d.concrete_inputs]]
      .filter(([, v]) => v !== null && v !== undefined).map(([k, v]) => [k, JSON.stringify(v)]);
    if (shapes.length) n.append(el("h4", null, "Inputs"), kv("tl-det-inputs", shapes));
    if (d.call_stack && d.call_stack.length) n.append(el("h4", null, "Call stack"), el("ol", {id: "tl-det-stack", class: "stack"}, d.call_stack.map((f) => el("li", null, f))));
    if (d.parents && d.parents.length) n.append(el("h4", null, "Inside"), refs("tl-det-parents", d.parents, this.jump));
    if (d.op) n.append(el("h4", null, "Launched by op"), refs("tl-det-op", [d.op], this.jump));
    if (d.launch) n.append(el("h4", null, "Launch call"), refs("tl-det-launch", [d.launch], this.jump));
    if (d.kernels && d.kernels.length) {
      const more = d.kernel_count > d.kernels.length ? ` (first ${fmtNum(d.kernels.length)} listed)` : "";
      n.append(el("h4", {id: "tl-det-kernel-head", "data-count": d.kernel_count, "data-ns": d.kernel_ns},
        `GPU work launched: ${fmtNum(d.kernel_count)} · ${fmtNs(d.kernel_ns)}${more}`), refs("tl-det-kernels", d.kernels, this.jump));
    }
  }
}

function trackLabel(group, track) {
  const t = group.data && group.data.tracks.find((x) => x.id === track);
  return t ? t.label : `track ${track}`;
}

function kv(id, pairs) {
  return el("table", {class: "kv", id}, el("tbody", null, pairs.map(([k, v]) => el("tr", {"data-key": k}, el("th", null, k), el("td", null, v)))));
}

function refs(id, list, jump) {
  return el("ul", {class: "refs", id}, list.map((r) => el("li", null,
    el("button", {type: "button", class: "linkish", "data-row": r.row, on: {click: () => jump(r)}}, r.name || "(unnamed)"),
    el("span", {class: "muted"}, ` ${String(r.kind).replace(/_/g, " ")} · ${fmtNs(r.dur_ns)}`))));
}

/** What the drawn event says of itself, shown with the error when its details could not be had. */
function bare(sel) {
  const e = sel.ev || {};
  return {row: sel.row, name: e.name, kind: e.kind, ts_ns: e.ts_ns, dur_ns: e.dur, track: e.track, step: e.step, args: {},
    kernels: [], kernel_count: 0, kernel_ns: 0};
}
