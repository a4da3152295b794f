// Small DOM, formatting and fetch helpers. Every piece of data reaches the page through
// textContent or an attribute value, never through innerHTML, so a kernel name like
// "void gemm<float, 128>" is shown as text and cannot become markup.

const SVG_NS = "http://www.w3.org/2000/svg";

/** Build an element: el("td", {class: "num", title: name}, "text", childNode, ...). */
export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  setAttrs(node, attrs);
  append(node, children);
  return node;
}

/** Build an SVG element the same way. */
export function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  setAttrs(node, attrs);
  append(node, children);
  return node;
}

function setAttrs(node, attrs) {
  if (!attrs) return;
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "on") {
      for (const [ev, fn] of Object.entries(v)) node.addEventListener(ev, fn);
    } else if (k === "dataset") {
      for (const [dk, dv] of Object.entries(v)) node.dataset[dk] = String(dv);
    } else {
      node.setAttribute(k, v === true ? "" : String(v));
    }
  }
}

function append(node, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    node.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Remove every child of a node. */
export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

// ---- formatting -------------------------------------------------------------------------

export function isNum(v) {
  return typeof v === "number" && Number.isFinite(v);
}

/** v to d decimals as Python's format writes it, so the page shows the digits the terminal shows: both
 * round the double's exact value, but at an exact tie JavaScript goes away from zero and Python to the
 * even neighbour (1361.125 → "1361.12" in both now). */
export function fixed(v, d) {
  const s = v.toFixed(d);
  if (!isNum(v) || Math.abs(v) >= 1e21) return s;
  const exact = Math.abs(v).toFixed(Math.min(d + 30, 100));
  const dot = exact.indexOf(".");
  if (!/^50*$/.test(exact.slice(dot + 1 + d))) return s;  // no tie: both round alike
  const down = exact.slice(0, d > 0 ? dot + 1 + d : dot);  // toward zero
  return Number(down[down.length - 1]) % 2 === 0 ? (v < 0 ? "-" : "") + down : s;
}

function grouped(text) {
  const [whole, frac] = text.split(".");
  const neg = whole.startsWith("-");
  const digits = (neg ? whole.slice(1) : whole).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return (neg ? "-" : "") + digits + (frac !== undefined ? "." + frac : "");
}

export function fmtMs(v, digits) {
  if (!isNum(v)) return "–";
  const a = Math.abs(v);
  const d = digits !== undefined ? digits : a >= 100 ? 1 : a >= 10 ? 2 : 3;
  return fixed(v, d) + " ms";
}

export function fmtNs(ns) {
  if (!isNum(ns)) return "–";
  const a = Math.abs(ns);
  if (a >= 1e9) return (ns / 1e9).toFixed(3) + " s";
  if (a >= 1e6) return (ns / 1e6).toFixed(a >= 1e8 ? 1 : 3) + " ms";
  if (a >= 1e3) return (ns / 1e3).toFixed(a >= 1e5 ? 1 : 2) + " µs";
  return Math.round(ns) + " ns";
}

/** An axis tick: at most 3 significant digits, no trailing zeros ("15 ms", "2.5 ms"). */
export function fmtTick(v, unit = " ms") {
  if (!isNum(v)) return "";
  return String(Number(v.toPrecision(3))) + unit;
}

/** A time-axis tick in ns with the unit chosen by the tick spacing, so all ticks read alike. */
export function fmtTimeTick(ns, stepNs) {
  const [div, unit] = stepNs >= 1e8 ? [1e9, " s"] : stepNs >= 1e5 ? [1e6, " ms"] : stepNs >= 1e2 ? [1e3, " µs"] : [1, " ns"];
  const digits = Math.max(0, Math.ceil(-Math.log10(stepNs / div) + 1e-9));
  return (ns / div).toFixed(Math.min(digits, 6)) + unit;
}

export function fmtPct(v, digits = 1) {
  return isNum(v) ? fixed(v, digits) + " %" : "–";
}

export function fmtNum(v, digits = 0) {
  if (!isNum(v)) return "–";
  return grouped(fixed(v, digits));
}

export function fmtBytes(v) {
  if (!isNum(v)) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let x = Math.abs(v), i = 0;
  while (x >= 1024 && i < units.length - 1) { x /= 1024; i++; }
  return (v < 0 ? "-" : "") + x.toFixed(i === 0 ? 0 : 1) + " " + units[i];
}

export function fmtSigned(v, unit = " ms") {
  if (!isNum(v)) return "–";
  const s = Math.abs(v) >= 100 ? v.toFixed(1) : Math.abs(v) >= 10 ? v.toFixed(2) : v.toFixed(3);
  return (v > 0 ? "+" : "") + s + unit;
}

// ---- categories and colours (the same as report/fmt.py BREAKDOWN) ----------------------------

export const BREAKDOWN = [
  ["kernel", "Kernel", "#4c78a8"], ["memcpy", "Memcpy", "#f58518"], ["memset", "Memset", "#e45756"],
  ["communication", "Communication", "#72b7b2"], ["runtime", "Runtime", "#54a24b"],
  ["dataloader", "DataLoader", "#eeca3b"], ["cpu_exec", "CPU Exec", "#b279a2"], ["other", "Other", "#bab0ac"],
];

// the categories of a device's work: none on a rank without a device (a CPU-only run, its `platform` "cpu"),
// whose views leave them out as the terminal's step breakdown does
const DEVICE_CATEGORIES = new Set(["kernel", "memcpy", "memset", "runtime"]);

/** A rank object of the document that ran on no device (its `platform`, report/json_out.py). */
export function cpuRank(r) {
  return String(r?.platform || "").split("+")[0] === "cpu";
}

/** The step breakdown's categories a rank shows: without the device's on a CPU-only rank. */
export function breakdownOf(r) {
  return cpuRank(r) ? BREAKDOWN.filter(([k]) => !DEVICE_CATEGORIES.has(k)) : BREAKDOWN;
}

export const KIND_COLORS = {
  kernel: "#4c78a8", memcpy: "#f58518", memset: "#e45756", communication: "#72b7b2", runtime: "#54a24b",
  driver: "#54a24b", cpu_op: "#b279a2", user_annotation: "#c9b8a6", gpu_user_annotation: "#d8cfc4",
  python_function: "#d6a5c9", dataloader: "#eeca3b", other: "#bab0ac",
};

export function kindColor(kind) {
  return KIND_COLORS[kind] || "#9aa5b1";
}

// ---- fetching -----------------------------------------------------------------------------

const cache = new Map();

async function answer(res) {
  let body = null;
  try { body = await res.json(); } catch (e) { body = null; }
  if (!res.ok) {
    const msg = body && typeof body.error === "string" ? body.error : `HTTP ${res.status}`;
    throw new Error(msg);
  }
  return body;
}

/** GET a JSON API path; rejects with the server's error message. Cached unless fresh=true. */
export async function api(path, fresh = false) {
  if (!fresh && cache.has(path)) return cache.get(path);
  const promise = fetch(path, {headers: {Accept: "application/json"}, credentials: "same-origin"}).then(answer);
  if (!fresh) {
    cache.set(path, promise);
    promise.catch(() => cache.delete(path));
  }
  return promise;
}

/** POST a JSON body to an API path (the what-if route); rejects with the server's error message. */
export async function post(path, body) {
  return fetch(path, {method: "POST", credentials: "same-origin", body: JSON.stringify(body),
    headers: {"Content-Type": "application/json", Accept: "application/json"}}).then(answer);
}

export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined) q.set(k, String(v));
  const s = q.toString();
  return s ? "?" + s : "";
}

// ---- tooltip ------------------------------------------------------------------------------

let tipNode = null;

/** Show a tooltip with plain-text lines near the mouse (hide with hideTip). */
export function showTip(evt, lines) {
  if (!tipNode) tipNode = document.getElementById("tip");
  clear(tipNode);
  lines.forEach((line, i) => tipNode.appendChild(el("div", {class: i === 0 ? "tip-title" : "tip-line"}, line)));
  tipNode.style.display = "block";
  const w = tipNode.offsetWidth, h = tipNode.offsetHeight;
  let x = evt.clientX + 14, y = evt.clientY + 14;
  if (x + w > innerWidth - 8) x = evt.clientX - w - 14;
  if (y + h > innerHeight - 8) y = evt.clientY - h - 14;
  tipNode.style.left = Math.max(4, x) + "px";
  tipNode.style.top = Math.max(4, y) + "px";
}

export function hideTip() {
  if (!tipNode) tipNode = document.getElementById("tip");
  tipNode.style.display = "none";
}

/** Attach a tooltip to a node: lines() is called on hover. */
export function tip(node, lines) {
  node.addEventListener("mousemove", (e) => showTip(e, typeof lines === "function" ? lines() : lines));
  node.addEventListener("mouseleave", hideTip);
  return node;
}

/** A titled card section. */
export function card(id, title, sub, ...body) {
  return el("section", {class: "card", id}, el("h2", null, title), sub ? el("p", {class: "sub"}, sub) : null, body);
}

export function empty(text) {
  return el("p", {class: "empty"}, text);
}
