"""The What-if section: each standard remedy replayed on a rank's steps (the §12 ``remedies`` key).

Drawn from the document only: per remedy its basis, the predicted mean step and the saving, as a
measured-vs-predicted bar chart and a table whose rows the findings with a replayed gain link to
(``#whatif-r<rank>-<remedy>``). Each row names the ``stepscope whatif`` options that replay the same
change, so a reader can combine them on the command line or in the web UI.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stepscope.report.html import svg
from stepscope.report.html.fmt import data_num, esc, fmt_ms, fmt_pct, num

SUB = ("Each standard remedy replayed on this rank's steps with the step's dependency graph "
       "(stepscope whatif): the mean step it predicts and what that saves. Changes combine: name "
       "several in stepscope whatif or in the web UI's What-if form.")


def anchor(rank: object, remedy: object) -> str:
    """The id of a remedy's row (what a finding with a replayed gain links to)."""
    return f"whatif-r{rank}-{remedy}"


def cli_options(options: object) -> str:
    """``{"workers": 4, "pin_copies": true}`` → ``--workers 4 --pin-copies``."""
    if not isinstance(options, Mapping):
        return ""
    out = []
    for key, value in options.items():
        flag = "--" + str(key).replace("_", "-")
        if value is True:
            out.append(flag)
        elif value is not False and value is not None:
            out.append(f"{flag} {value:g}" if isinstance(value, float) else f"{flag} {value}")
    return " ".join(out)


def _row(rank: int, r: Mapping[str, Any], measured: float | None) -> str:
    saved, predicted = num(r.get("saved_ms")), num(r.get("predicted_mean_ms"))
    pct = 100.0 * saved / measured if saved is not None and measured else None
    opts = cli_options(r.get("options"))
    return (f'<tr id="{esc(anchor(rank, r.get("remedy")))}" class="remedy" data-remedy="{esc(r.get("remedy"))}" '
            f'data-predicted-ms="{data_num(predicted)}" data-saved-ms="{data_num(saved)}">'
            f'<td class="txt">{esc(r.get("remedy"))}</td>'
            f'<td class="wrap">{esc(r.get("basis") or "")}</td>'
            f'<td class="num">{esc(fmt_ms(predicted, 2))}</td><td class="num">{esc(fmt_ms(saved, 2))}</td>'
            f'<td class="num">{esc(fmt_pct(pct))}</td>'
            f'<td class="txt"><code>{esc("stepscope whatif RUN " + opts if opts else "")}</code></td></tr>')


def whatif_html(rank: Mapping[str, Any], rank_id: int) -> str:
    """The section body for one rank, or a note when the document has no ``remedies`` for it."""
    sec = rank.get("remedies")
    items = [r for r in (sec.get("remedies") or []) if isinstance(r, Mapping)] if isinstance(sec, Mapping) else []
    if not isinstance(sec, Mapping) or not items:
        return ('<p class="empty">No what-if replay for this rank (no steps and no device work, or the '
                "remedies analysis did not run).</p>")
    measured = num(sec.get("measured_mean_ms"))
    bars = [(str(r.get("remedy", "")), measured or 0.0, num(r.get("predicted_mean_ms")) or 0.0) for r in items]
    chart = svg.paired_hbars(f"whatif-chart-r{rank_id}", bars, label="mean step, measured and predicted")
    head = (f'<p class="note" id="whatif-measured-r{rank_id}" data-value="{data_num(measured)}">Measured mean '
            f"step {esc(fmt_ms(measured, 2))}; grey: measured, blue: predicted with the remedy.</p>")
    rows = "".join(_row(rank_id, r, measured) for r in items)
    table = ('<div class="tablewrap"><table class="data whatif"><thead><tr><th class="txt">remedy</th>'
             '<th class="txt">basis</th><th class="num">predicted mean</th><th class="num">saved / step</th>'
             '<th class="num">saved</th><th class="txt">replay it</th></tr></thead>'
             f"<tbody>{rows}</tbody></table></div>")
    return head + svg.legend([("measured", "#9aa5b1"), ("predicted", "#4c78a8")]) + chart + table


def finding_link(f: Mapping[str, Any], first_rank: int | None) -> str:
    """A link from a finding whose gain was replayed (its evidence names ``whatif_remedy``) to that row."""
    ev = f.get("evidence")
    remedy = ev.get("whatif_remedy") if isinstance(ev, Mapping) else None
    rank = f.get("rank") if isinstance(f.get("rank"), int) else first_rank
    if not isinstance(remedy, str) or rank is None:
        return ""
    return (f'<a class="whatif-link" href="#{esc(anchor(rank, remedy))}" data-goto-rank="{esc(rank)}">'
            f"replayed: see What-if ({esc(remedy)}) →</a>")
