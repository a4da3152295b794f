"""A Markdown summary short enough for a pull-request comment (SPEC §9).

``render_markdown(doc)`` takes a §12 analysis document (verdict, top findings, the step breakdown,
top kernels) or a §12 diff document (gate verdict, overall changes, biggest kernel / operator
changes) and returns GitHub-flavoured Markdown. Every name is escaped: HTML special characters
become entities and Markdown punctuation is backslash-escaped, so a kernel named
``void f<float>|*x*`` prints as itself and cannot break the table.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from typing import Any

from stepscope.report._prose import findings_order_text
from stepscope.report.diff_text import (
    CATEGORY_LABELS,
    by_abs_diff,
    diff_title,
    findings_summary,
    gate_state,
    narrative,
)
from stepscope.report.fmt import (
    BREAKDOWN,
    LABELS,
    breakdown_values,
    culprits_of,
    fmt_int,
    fmt_ms,
    fmt_pct,
    fmt_signed_ms,
    imbalance_text,
    num,
    rule_title,
    verdict_text,
)
from stepscope.report.texts import CAUSE_WORDS, CPU_CAUSE_WORDS, gain_share
from stepscope.report.verdict_texts import NO_DEVICE_COMPILED, dynamo_frames_text

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|#~])")
MAX_STEP_ROWS = 12
#: how the findings' gains are counted (texts.gain_share), as the terminal's "% window" / "% job step"
SHARE_WORDS = {"window": "over the window — the whole trace, no step markers", "job step": "per job step",
               "step": "per step"}


def md(text: object, width: int = 80) -> str:
    """One table cell / inline text: escaped, one line, at most ``width`` characters."""
    s = " ".join(str(text).split())
    if len(s) > width:
        s = s[: width - 1] + "…"
    return _MD_SPECIAL.sub(r"\\\1", html.escape(s, quote=False))


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[int] = ()) -> list[str]:
    aligns = ["---:" if i in right else "---" for i in range(len(headers))]
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join(aligns) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def render_markdown(doc: Mapping[str, Any], *, title: str | None = None, top: int = 5) -> str:
    """The PR-comment summary of an analysis document, or of a diff document (detected by its keys)."""
    if "overall" in doc and "ranks" not in doc:
        return render_diff_markdown(doc, title=title, top=top)
    ranks = [r for r in doc.get("ranks") or [] if isinstance(r, Mapping)]
    lines = [f"### {md(title or 'stepscope report', 120)}", "", f"**Verdict:** {md(verdict_text(doc), 600)}", ""]
    lines += _findings(doc, top)
    if len(ranks) > 1:
        lines += _ranks(doc, ranks)
    if ranks:
        lines += _breakdown(ranks[0])
        lines += _host_collectives(ranks) if len(ranks) == 1 else []
        lines += _categories(ranks[0])
        lines += _roofline(ranks[0], top)
        lines += _kernels(ranks[0], top)
        lines += _device(ranks[0], top)
    lines += _diagnostics(doc)
    return "\n".join(lines).rstrip() + "\n"


def _findings(doc: Mapping[str, Any], top: int) -> list[str]:
    findings = [f for f in doc.get("findings") or [] if isinstance(f, Mapping)]
    if not findings:
        return ["No findings.", ""]
    multi = len({f.get("rank") for f in findings if f.get("rank") is not None}) > 1
    rows = [[str(i + 1), md(f.get("severity", "")), md(rule_title(f), 70),
             *([md(f.get("rank", "")) if f.get("rank") is not None else "all"] if multi else []),
             f"{fmt_ms(f.get('est_gain_ms'))} ({fmt_pct(f.get('est_gain_pct'))})"]
            for i, f in enumerate(findings[:top])]
    more = ["", f"_…and {len(findings) - top} more._", ""] if len(findings) > top else [""]
    first_of_rule: dict[str, Mapping[str, Any]] = {}
    for f in findings:
        if f.get("advice"):
            first_of_rule.setdefault(str(f.get("rule")), f)
    advice = [f"{i + 1}. {md(f.get('advice'), 400)}" for i, f in enumerate(list(first_of_rule.values())[:3])]
    what = ["**What to change**", "", *advice, ""] if advice else []
    share = gain_share((str(f.get("rule")), f.get("ranks") or (), bool(f.get("whole_trace"))) for f in findings)
    headers = ["#", "severity", "finding", *(["rank"] if multi else []), f"est. gain (% {share})"]
    order = findings_order_text([float(f.get("est_gain_ms") or 0.0) for f in findings[:top]])
    return [f"**Findings** ({order}; estimated gain {SHARE_WORDS[share]})", "",
            *_table(headers, rows, right=(len(headers) - 1,)), *more, *what]


def _host_comm_ms(rank: Mapping[str, Any]) -> float:
    """The rank's communication per average step as its breakdown counts it (0 without)."""
    return num(((rank.get("overview") or {}).get("breakdown_ms") or {}).get("communication")) or 0.0


def _on_host(ranks: Sequence[Mapping[str, Any]]) -> bool:
    """No rank runs a communication kernel, yet the steps communicate: the collectives run on the
    host (gloo on the CPU), as the web UI's distributed view says (views_more.js ``hostCollectives``)."""
    return not any(r.get("distributed") for r in ranks) and any(_host_comm_ms(r) > 0 for r in ranks)


def _host_collectives(ranks: Sequence[Mapping[str, Any]]) -> list[str]:
    """One rank whose collectives run on the host: their time, the breakdown's Communication."""
    if not _on_host(ranks):
        return []
    r = ranks[0]
    comm, step = _host_comm_ms(r), num((r.get("overview") or {}).get("avg_step_ms"))
    cpu = " (the CPU)" if r.get("device") is None else ""
    kernels = "" if cpu else "no communication kernels — "  # a CPU-only rank has none to miss
    return [f"**Communication** (rank {md(r.get('rank'))}): {kernels}the collectives run on the "
            f"host{cpu}: {fmt_ms(comm)} per step inside them, {fmt_pct(100 * comm / step if step else None, 0)} of the "
            "step (the breakdown's Communication, waiting for the other ranks included).", ""]


def _ranks(doc: Mapping[str, Any], ranks: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each rank's step, GPU utilization (where a rank has one) and communication: exposed and
    overlapped by its kernels, or the time inside collectives run on the host."""
    cluster = doc.get("cluster") if isinstance(doc.get("cluster"), Mapping) else {}
    slow = culprits_of(cluster)
    host, gpu = _on_host(ranks), any(num((r.get("overview") or {}).get("gpu_utilization_pct")) is not None
                                     for r in ranks)
    npu = any((r.get("device") or {}).get("vendor") == "ascend" for r in ranks)
    headers = ["rank", "avg step", *([f"{'NPU' if npu else 'GPU'} util"] if gpu else []),
               *(["in collectives (on the host)"] if host else ["comm exposed", "comm overlapped"])]
    rows = []
    for r in ranks:
        ov = r.get("overview") or {}
        dist = r.get("distributed") or {}
        comm = [fmt_ms(_host_comm_ms(r))] if host else [fmt_ms(dist.get("communication_ms")),
                                                        fmt_ms(dist.get("overlap_ms"))]
        rows.append([md(r.get("rank")) + (" (culprit)" if r.get("rank") in slow else ""),
                     fmt_ms(ov.get("avg_step_ms")), *([fmt_pct(ov.get("gpu_utilization_pct"))] if gpu else []),
                     *comm])
    head = "**Ranks** — " + imbalance_text(fmt_pct((cluster or {}).get("imbalance_pct")), (cluster or {}).get(
        "imbalance_of"))
    return [head, "", *_table(headers, rows, right=range(1, len(headers))), "",
            *_arrivals(cluster, CPU_CAUSE_WORDS if not gpu else CAUSE_WORDS), *_pipeline_and_all_to_all(cluster),
            *_exposed(cluster)]


def _exposed(cluster: Mapping[str, Any] | None) -> list[str]:
    """Communication exposed vs overlapped per rank and step (cluster.exposed_comm), the most exposed first."""
    ex = (cluster or {}).get("exposed_comm")
    steps = [s for s in (ex.get("steps") or [] if isinstance(ex, Mapping) else []) if isinstance(s, Mapping)]
    if not steps:
        return []
    top = sorted(steps, key=lambda s: -(num(s.get("exposed_ms")) or 0.0))[:MAX_STEP_ROWS]
    rows = [[md(s.get("rank")), md(s.get("step")), fmt_ms(s.get("step_ms")), fmt_ms(s.get("exposed_ms")),
             fmt_ms(s.get("overlapped_ms")), fmt_pct(s.get("exposed_pct"))] for s in top]
    more = f" (the {len(top)} most exposed of {len(steps)})" if len(top) < len(steps) else ""
    return [f"**Communication exposed vs overlapped, per rank and step**{more}", "",
            *_table(["rank", "step", "step time", "exposed", "overlapped", "exposed % of step"], rows,
                    right=(2, 3, 4, 5)), ""]


def _arrivals(cluster: Mapping[str, Any] | None, words: Mapping[str, str]) -> list[str]:
    """One line per culprit (cause, lateness) and who waits; one per slow link."""
    arr = (cluster or {}).get("arrivals")
    if not isinstance(arr, Mapping):
        return []
    out = []
    for c in arr.get("culprits") or []:
        out.append(f"- culprit rank {md(c.get('rank'))}: {md(words.get(str(c.get('cause')), c.get('cause')))}; "
                   f"last at {md(c.get('times_last'))} of {md(arr.get('collective_count'))} collectives, "
                   f"{fmt_ms(c.get('late_ms'))} per step after the next rank")
    victims = ", ".join(str(v) for v in arr.get("victims") or [])
    if out and victims:
        out.append(f"- victims (wait for the culprits): ranks {md(victims)}")
    sl = (cluster or {}).get("slow_links")
    for link in (sl.get("slow") or [] if isinstance(sl, Mapping) else []):
        bw, med = num(link.get("bandwidth_gbps")) or 0.0, num(link.get("class_median_gbps")) or 0.0
        out.append(f"- slow link {md(link.get('link'))} ({md(link.get('kind'))}): {bw:.2f} GB/s, "
                   f"median of its kind and size {med:.2f} GB/s")
    return [*out, ""] if out else []


def _pipeline_and_all_to_all(cluster: Mapping[str, Any] | None) -> list[str]:
    """One line per pipeline (slowest stage, imbalance, critical bubble); one for the all-to-all spread."""
    out = []
    pipe = (cluster or {}).get("pipeline")
    for p in (pipe.get("pipelines") or [] if isinstance(pipe, Mapping) else []):
        out.append(f"- pipeline {md(p.get('pipeline'))} (ranks {md(', '.join(map(str, p.get('ranks') or [])))}): "
                   f"slowest stage {md(p.get('slowest_stage'))}, imbalance {fmt_pct(p.get('imbalance_pct'))}, its "
                   f"bubble {fmt_ms(p.get('critical_bubble_ms'))} per step ({fmt_pct(p.get('critical_bubble_pct'))})")
    a2a = (cluster or {}).get("all_to_all")
    if isinstance(a2a, Mapping):
        spread, routed = num(a2a.get("time_spread")), num(a2a.get("routed_in_spread"))
        top = ", ".join(str(r) for r in (a2a.get("top_receivers") or [])[:5]) or "unknown"
        out.append(f"- all-to-all: time spread {spread or 0:.2f}x, routed bytes spread "
                   f"{'unknown' if routed is None else f'{routed:.2f}x'}; most routed bytes received: ranks {md(top)}")
    return [*out, ""] if out else []


def _breakdown(rank: Mapping[str, Any]) -> list[str]:
    ov = rank.get("overview") or {}
    steps = [s for s in rank.get("steps") or [] if isinstance(s, Mapping)]
    if not ov.get("breakdown_ms") and not steps:
        return []
    bds = [breakdown_values(s.get("breakdown_ms")) for s in steps[:MAX_STEP_ROWS]]
    avg_bd = breakdown_values(ov.get("breakdown_ms")) if ov.get("breakdown_ms") else None
    keys = [k for k, _, _ in BREAKDOWN if any(bd[k] for bd in [*bds, *([avg_bd] if avg_bd else [])])]
    headers = ["step", "total", *[LABELS[k] for k in keys]]
    rows = [[md(s.get("step")), fmt_ms(s.get("total_ms")), *[fmt_ms(bd[k]) for k in keys]]
            for s, bd in zip(steps, bds)]
    if avg_bd is not None:
        avg = num(ov.get("avg_step_ms")) or sum(avg_bd.values())
        rows.append(["**avg**", f"**{fmt_ms(avg)}**", *[fmt_ms(avg_bd[k]) for k in keys]])
        rows.append(["share", "", *[fmt_pct(100 * avg_bd[k] / avg if avg else None, 0) for k in keys]])
    note = f"_first {MAX_STEP_ROWS} of {len(steps)} steps_" if len(steps) > MAX_STEP_ROWS else ""
    return [f"**Step time breakdown** (rank {md(rank.get('rank'))})", "",
            *_table(headers, rows, right=range(1, len(headers))), *(["", note] if note else []), ""]


def _categories(rank: Mapping[str, Any]) -> list[str]:
    cats = [c for c in (rank.get("categories") or {}).get("categories") or []
            if isinstance(c, Mapping) and c.get("activities")]
    if not cats:
        return []
    rows = [[md(c.get("category")), fmt_int(c.get("ops")), fmt_ms(c.get("time_ms")), fmt_pct(c.get("share_pct"))]
            for c in cats]
    return [f"**Op categories** (rank {md(rank.get('rank'))}, device time)", "",
            *_table(["category", "ops", "time", "share"], rows, right=(1, 2, 3)), ""]


def _roofline(rank: Mapping[str, Any], top: int) -> list[str]:
    rf = rank.get("roofline")
    if not isinstance(rf, Mapping):
        return []
    peak = rf.get("peak") if isinstance(rf.get("peak"), Mapping) else None
    head = (f"{md(rf.get('device'))} → {md(peak.get('name'))}, MFU {fmt_pct(rf.get('mfu_pct'))}" if peak else
            f"device {md(rf.get('device') or 'unnamed')} not in the peak table: no bound, no MFU")
    ops = [o for o in rf.get("ops") or [] if isinstance(o, Mapping)][:top]
    rows = [[md(o.get("name", ""), 50), md(o.get("dtype") or "?"), fmt_int(o.get("calls")), fmt_ms(o.get("time_ms")),
             _num(o.get("tflops")), _num(o.get("intensity")), md(o.get("bound") or "–"), fmt_pct(o.get("roof_pct"))]
            for o in ops]
    return [f"**Roofline** (rank {md(rank.get('rank'))}: {head}; FLOPs known for "
            f"{fmt_pct(rf.get('covered_pct'))} of the device busy time)", "",
            *_table(["op", "type", "calls", "time", "TFLOP/s", "FLOP/B", "bound", "of roof"], rows,
                    right=(2, 3, 4, 5, 7)), ""]


def _num(v: object) -> str:
    x = num(v)
    return "–" if x is None else f"{x:,.1f}"


def _kernels(rank: Mapping[str, Any], top: int) -> list[str]:
    kernels = [k for k in rank.get("kernels") or [] if isinstance(k, Mapping)]
    if not kernels:
        return []
    total = sum(num(k.get("total_ms")) or 0.0 for k in kernels)
    rows = [[md(k.get("name", ""), 70), fmt_int(k.get("calls")), fmt_ms(k.get("total_ms")),
             fmt_pct(100 * (num(k.get("total_ms")) or 0.0) / total if total else None)] for k in kernels[:top]]
    return ["**Top kernels**", "", *_table(["kernel", "calls", "total", "share"], rows, right=(1, 2, 3)), ""]


def _frames_line(c: Mapping[str, Any]) -> str:
    """The compiled section's Dynamo line (cache lookups, compiled regions, frames run eager)."""
    return md(dynamo_frames_text(float(c.get("cache_lookups_per_step") or 0),
                                 float(c.get("compiled_regions_per_step") or 0),
                                 float(c.get("eager_frames_per_step") or 0), int(c.get("steps_falling_back") or 0),
                                 int(c.get("steady_steps") or 0)), width=240)


def _device(rank: Mapping[str, Any], top: int) -> list[str]:
    """Graph replays, compiled graphs and inference phases, where their analyses applied."""
    out: list[str] = []
    g = rank.get("graphs")
    if isinstance(g, Mapping):
        rows = [[md(c.get("name"), 60), fmt_int(c.get("kernels")), fmt_ms(c.get("ms"))]
                for c in (g.get("capture_ops") or [])[:top]]
        out += [f"**Graph replays**: {fmt_int(g.get('graph_launches'))} launches ran "
                f"{fmt_int(g.get('graph_kernels'))} kernels ({fmt_pct(g.get('graph_gpu_pct'))} of GPU time); "
                f"unattributed {fmt_int(g.get('unattributed'))}"
                + (f" (+{fmt_int(g.get('launched_before_trace'))} launched before the trace began)"
                   if g.get("launched_before_trace") else "")
                + ("" if g.get("has_capture") else " (no capture trace: ops at capture unknown)"), ""]
        out += [*_table(["op at capture", "kernels", "time"], rows, right=(1, 2)), ""] if rows else []
    c = rank.get("compiled")
    if isinstance(c, Mapping):
        rows = [[md(x.get("name"), 50), fmt_int(x.get("calls")), fmt_int(x.get("kernels")), fmt_ms(x.get("ms")),
                 fmt_pct(x.get("step_share_pct"))] for x in (c.get("graphs") or [])[:top]]
        out += [f"**Dynamo**: {_frames_line(c)}", ""] if c.get("cache_lookups_per_step") else []
        out += [f"**Compiled kernels**: {fmt_int(c.get('triton_kernels'))} Triton kernels, "
                f"{fmt_ms(c.get('triton_ms'))} ({fmt_pct(c.get('triton_pct'))} of device time)" if c.get("device_ms")
                else f"**torch.compile**: {NO_DEVICE_COMPILED}", ""]
        out += [*_table(["compiled graph", "calls", "kernels", "time", "of step"], rows, right=(1, 2, 3, 4)),
                ""] if rows and c.get("device_ms") else []  # a CPU-only rank's graphs launch nothing (the terminal's)
    p = rank.get("phases")
    if isinstance(p, Mapping):
        rows = [[md(x.get("phase")), fmt_int(x.get("steps")), fmt_int(x.get("tokens")),
                 fmt_ms(x.get("device_span_ms")),
                 "–" if x.get("per_token_ms") is None else f"{x['per_token_ms']:.4f} ms"]
                for x in p.get("phases") or []]
        out += ["**Inference phases**", "",
                *_table(["phase", "steps", "tokens", "device span", "per token"], rows, right=(1, 2, 3, 4)), ""]
    return out


def _diagnostics(doc: Mapping[str, Any]) -> list[str]:
    diags = [d for d in doc.get("diagnostics") or [] if isinstance(d, Mapping)]
    if not diags:
        return ["_Ingest: no repairs, nothing dropped._"]
    items = ", ".join(f"{md(d.get('name'), 40)} ×{fmt_int(d.get('count'))}" for d in diags[:6])
    return [f"_Ingest diagnostics: {items}{' …' if len(diags) > 6 else ''}._"]


def render_diff_markdown(doc: Mapping[str, Any], *, title: str | None = None, top: int = 8) -> str:
    """Gate verdict, narrative, overall per-category changes and the biggest kernel / operator changes."""
    lines = [f"### {md(title or diff_title(doc), 120)}", ""]
    passed, reason = gate_state(doc)
    if passed is not None:
        lines += [f"**Gate: {'✅ passed' if passed else '❌ FAILED'}**" + (f" — {md(reason, 200)}" if reason else ""),
                  ""]
    lines += [md(x, 300) for x in narrative(doc)] + [""]
    overall = [r for r in doc.get("overall") or [] if isinstance(r, Mapping)
               and (num(r.get("base_ms")) or num(r.get("new_ms")))]
    if overall:
        rows = [[md(CATEGORY_LABELS.get(str(r.get("category")), r.get("category"))), fmt_ms(r.get("base_ms")),
                 fmt_ms(r.get("new_ms")), fmt_signed_ms(r.get("diff_ms"))] for r in overall]
        lines += ["**Per average step**", "", *_table(["category", "base", "new", "diff"], rows, right=(1, 2, 3)),
                  ""]
    for key, label in (("kernels", "kernel"), ("operators", "operator")):
        rows_in = by_abs_diff(doc.get(key))[:top]
        if rows_in:
            rows = [[md(r.get("name", ""), 70), fmt_ms(r.get("base_ms")), fmt_ms(r.get("new_ms")),
                     fmt_signed_ms(r.get("diff_ms"))] for r in rows_in]
            lines += [f"**Biggest {label} changes**", "",
                      *_table([label, "base", "new", "diff"], rows, right=(1, 2, 3)), ""]
    if findings_summary(doc):
        lines += [f"**Findings:** {md(findings_summary(doc))}", ""]
    return "\n".join(lines).rstrip() + "\n"
