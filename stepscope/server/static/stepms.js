// "Step without the profiler (ms)": the step the user's training log times without the profiler
// (`--step-ms`). Served, the overview asks the server for the run's document at that step
// (GET /api/v1/runs/<id>?step_ms=MS: the profiler's cost per op measured from it, cost_source "given")
// and keeps it in the route (#/run/<id>/<view>?rank=R&step_ms=MS), so every view, the what-if
// replays among them, is of that step. The page computes nothing: it shows the document's
// `profiler_cost` as the server wrote it. A standalone report has no server to ask: no input there.

import {el} from "./util.js";
import {standalone} from "./data.js";

const SOURCES = {
  calibrated: "assumed: calibrated on H200 captures",
  measured: "measured from the steps `stepscope run` timed without the profiler",
  given: "measured from the step given here",
};

/** The control, or null where it has nothing to act on (a standalone report; a rank with no device and
 *  no profiler-cost section, unless a step was given). `ctx.setStep(text | null)` re-routes. */
export function stepControl(ctx, r) {
  const pc = r.profiler_cost || null;
  if (standalone || !ctx.setStep || (!pc && !r.device && !ctx.stepMs)) return null;
  const given = pc && pc.cost_source === "given" ? pc.measured_step_ms : null;
  const input = el("input", {type: "number", id: "step-ms", name: "step_ms", min: 0, step: "any", class: "stepms",
    placeholder: "e.g. 33.05", "aria-label": "step without the profiler (ms)",
    value: ctx.stepMs ?? (given === null || given === undefined ? "" : String(given))});
  const error = el("span", {class: "errmsg", id: "step-ms-error", role: "alert"});
  const form = el("form", {class: "stepform", id: "step-form", on: {submit: (e) => {
    e.preventDefault();
    const text = input.value.trim();
    const ms = Number(text);
    if (!text || !Number.isFinite(ms) || ms <= 0) {
      error.textContent = "give the step in milliseconds, a number above 0 (your training log's step time)";
      return;
    }
    ctx.setStep(text);
  }}},
  el("label", {for: "step-ms"}, "step without the profiler (ms)"), input,
  el("button", {type: "submit", class: "primary", id: "step-ms-apply"}, "apply"),
  ctx.stepMs ? el("button", {type: "button", id: "step-ms-clear", on: {click: () => ctx.setStep(null)}}, "clear") : null,
  error);
  const cost = pc ? el("div", {class: "sub", id: "profiler-cost", "data-source": pc.cost_source},
    `The profiler's own cost per recorded op: ${pc.event_cost_us} µs (${SOURCES[pc.cost_source] || pc.cost_source}).`) : null;
  return el("div", {class: "stepctl", id: "step-control"}, form, cost,
    el("div", {class: "hint"}, "Your training log's step time without the profiler: the profiler's cost per op is "
      + "measured from it instead of assumed, which moves the verdict's step without the profiler and the findings' gains "
      + "(stepscope … --step-ms)."));
}
