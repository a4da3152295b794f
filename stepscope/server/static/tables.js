// Sortable, filterable top-N tables. Rows stay as data in JS; sorting and filtering re-render the
// visible rows (names through textContent), so a 10,000-row table stays responsive.

import {el, clear, isNum} from "./util.js";
import {shareCell} from "./charts.js";

const LIMITS = [25, 50, 100, 500];

/**
 * columns: [{key, label, num: bool, fmt: (v, row) => string, share: bool, title: string}]
 * opts: {id, sortKey, desc = true, limit = 25, filterKey = "name", onRow: (row, tr) => void}
 */
export function dataTable(rows, columns, opts = {}) {
  const state = {sortKey: opts.sortKey || columns.find((c) => c.num)?.key, desc: opts.desc !== false,
    limit: opts.limit || 25, filter: ""};
  const tbody = el("tbody");
  const count = el("span", {class: "count"});
  const heads = columns.map((c) => el("th", {class: c.num && !c.share ? "num" : null, title: c.title || null,
    "data-key": c.key, on: {click: () => sortBy(c.key)}}, c.label));
  const table = el("table", {class: "data sortable", id: opts.id || null}, el("thead", null, el("tr", null, heads)), tbody);
  const filter = el("input", {type: "search", placeholder: "filter by name…", class: "filter",
    "aria-label": "filter rows", on: {input: (e) => { state.filter = e.target.value.toLowerCase(); render(); }}});
  const limitSel = el("select", {class: "limit", "aria-label": "rows shown", on: {change: (e) => {
    state.limit = Number(e.target.value); render(); }}},
    LIMITS.map((n) => el("option", {value: n, selected: n === state.limit}, `top ${n}`)), el("option", {value: 1e9}, "all"));

  function sortBy(key) {
    state.desc = state.sortKey === key ? !state.desc : true;
    state.sortKey = key;
    render();
  }

  function render() {
    const fk = opts.filterKey || "name";
    let shown = state.filter ? rows.filter((r) => String(r[fk] ?? "").toLowerCase().includes(state.filter)) : rows.slice();
    const col = columns.find((c) => c.key === state.sortKey);
    if (col) {
      const sign = state.desc ? -1 : 1;
      shown.sort((a, b) => {
        const va = a[col.key], vb = b[col.key];
        if (col.num) return sign * ((isNum(va) ? va : -Infinity) - (isNum(vb) ? vb : -Infinity));
        return sign * String(va ?? "").localeCompare(String(vb ?? ""), "en", {numeric: true});
      });
    }
    const total = shown.length;
    shown = shown.slice(0, state.limit);
    clear(tbody);
    for (const r of shown) tbody.appendChild(row(r));
    heads.forEach((h) => h.setAttribute("data-dir", h.dataset.key === state.sortKey ? (state.desc ? "desc" : "asc") : ""));
    count.textContent = `${shown.length} of ${total} rows`;
  }

  function row(r) {
    const tr = el("tr", null, columns.map((c) => {
      const v = r[c.key];
      if (c.share) return shareCell(v);
      const text = c.fmt ? c.fmt(v) : v ?? "–";
      return el("td", {class: c.num ? "num" : "txt", title: c.num ? null : String(v ?? ""),
        "data-sort": c.num && isNum(v) ? v : null}, text);
    }));
    if (opts.onRow) opts.onRow(r, tr);
    return tr;
  }

  render();
  return el("div", {class: "tableblock"},
    el("div", {class: "tablebar"}, filter, limitSel, count),
    el("div", {class: "tablewrap"}, table));
}
