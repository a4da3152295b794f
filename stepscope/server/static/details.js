// A standalone report's event details: the file carries, per rank, the details of every event of its
// timeline windows as columns (stepscope/analysis/timeline_details.py, details_table); detailsOf()
// answers one row in the shape GET .../event answers (stepscope/analysis/timeline_event.py), so the
// details panel is the same code served or not. The columns are indexed once per rank.

const indexes = new WeakMap();

function text(col, i) {
  if (!col) return null;
  const k = col.index[i];
  return k < 0 ? null : col.strings[k];
}

function jsonText(col, i) {
  const t = text(col, i);
  if (t === null) return null;
  try { return JSON.parse(t); } catch (e) { return t; }
}

/** Column `col` at position i: a list (null where unset) or the sparse {at, values}. */
function cell(col, i) {
  if (Array.isArray(col)) return col[i];
  let lo = 0, hi = col.at.length;
  while (lo < hi) { const m = (lo + hi) >> 1; if (col.at[m] < i) lo = m + 1; else hi = m; }
  return col.at[lo] === i ? col.values[lo] : null;
}

/** {row → index}, {row → ref} (the windows' events, then the table's refs) and the row → parent links. */
function build(table, events) {
  const pos = new Map(), refs = new Map(), parent = new Map();
  let row = 0;
  table.row_delta.forEach((d, i) => { row += d; pos.set(row, i); });
  for (const ev of events) {
    for (let j = 0; j < ev.row.length; j++) {
      if (!refs.has(ev.row[j])) {
        refs.set(ev.row[j], {row: ev.row[j], name: ev.name[j], kind: ev.kind[j], ts_ns: ev.ts_ns[j], dur_ns: ev.dur_ns[j],
          track: ev.track[j], depth: ev.depth[j], step: ev.step[j]});
      }
    }
  }
  const r = table.refs;
  r.row.forEach((x, j) => {
    refs.set(x, {row: x, name: text(r.name, j), kind: text(r.kind, j), ts_ns: r.ts_ns[j], dur_ns: r.dur_ns[j], track: r.track[j]});
    if (r.parent[j] >= 0) parent.set(x, r.parent[j]);
  });
  for (const [x, i] of pos) if (table.parent_back[i] !== 0) parent.set(x, x - table.parent_back[i]);
  return {pos, refs, parent};
}

function ref(ix, row) {
  const e = ix.refs.get(row);
  return e ? {row, name: e.name, kind: e.kind, ts_ns: e.ts_ns, dur_ns: e.dur_ns, track: e.track} : null;
}

/** The details of `row` (GET .../event's shape), or null when the table does not hold it. `events`: the
 *  expanded event columns of the rank's carried windows (name, kind, times, track, depth, step). */
export function detailsOf(table, events, row) {
  if (!indexes.has(table)) indexes.set(table, build(table, events));
  const ix = indexes.get(table), i = ix.pos.get(row), e = ix.refs.get(row);
  if (i === undefined || !e) return null;
  const link = (col) => (table[col][i] !== 0 ? ref(ix, row - table[col][i]) : null);
  const args = {};
  for (const [k, col] of Object.entries(table.args || {})) {
    const v = cell(col, i);
    if (v !== null && v !== undefined) args[k] = v;
  }
  const parents = [];
  for (let p = ix.parent.get(row); p !== undefined && parents.length < table.max_parents; p = ix.parent.get(p)) {
    const pr = ref(ix, p);
    if (!pr) break;
    parents.push(pr);
  }
  const count = table.kernel_count[i], first = table.kernel_first[i];
  const kernels = first < 0 ? [] : table.launched.slice(first, first + Math.min(count, table.max_kernels)).map((k) => ref(ix, k));
  const stack = text(table.call_stack, i);
  return {rank: table.rank, row, name: e.name, kind: e.kind, cat: text(table.cat, i), ts_ns: e.ts_ns, dur_ns: e.dur_ns,
    end_ns: e.ts_ns + e.dur_ns, self_ns: table.self_ns[i], track: e.track, depth: e.depth, step: e.step, args,
    input_dims: jsonText(table.input_dims, i), input_types: jsonText(table.input_types, i),
    concrete_inputs: jsonText(table.concrete_inputs, i),
    call_stack: stack === null ? [] : stack.split(";").filter((f) => f), parents,
    launch: link("launch_back"), op: link("op_back"), kernels, kernel_count: count, kernel_ns: table.kernel_ns[i]};
}
