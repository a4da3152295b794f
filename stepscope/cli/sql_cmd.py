"""``stepscope sql PATH "SELECT ..."``: DuckDB over the model's tables, for questions no view answers."""

from __future__ import annotations

import click

from stepscope.cli.common import InputPath, load_trace, trace_options
from stepscope.errors import UsageError
from stepscope.query import connect


@click.command("sql", short_help="Run SQL (DuckDB) over a trace's tables and views.")
@click.argument("path", type=InputPath())
@click.argument("query")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV instead of a table.")
@click.option("--limit", default=100, show_default=True, help="Rows to print (table output).")
@trace_options
def command(path: str, query: str, as_csv: bool, limit: int, no_cache: bool, span: str | None,
            ranks: tuple[int, ...]) -> None:
    """Run SQL (DuckDB) over the trace's tables: events, tracks, steps, memory, counters, flows, strings.

    In the tables, names are numbers: events.name and events.cat are ids into strings (id, s). For
    names you can read, query the view ev (every events column plus name_str, cat_str and kind_name)
    or kernels (the GPU kernels of ev).

    \b
    Example, the five kernels that take the most time:
      stepscope sql trace.json.gz "SELECT name_str, count(*) AS n, sum(dur_ns)/1e6 AS ms
        FROM kernels GROUP BY 1 ORDER BY ms DESC LIMIT 5"
    """
    import duckdb

    trace = load_trace(path, no_cache, span, ranks)
    con = connect(trace)
    try:
        rel = con.sql(query)
    except duckdb.Error as exc:
        raise UsageError(f"SQL error: {str(exc).splitlines()[0]}") from None
    if rel is None:
        return
    _hint_names(rel)
    if as_csv:
        click.echo(rel.df().to_csv(index=False) if _has_pandas() else _csv(rel))
        return
    rel.limit(limit).show(max_width=200)


#: a result column of these names holding integers is a string id
ID_COLUMNS = ("name", "cat")


def _hint_names(rel: object) -> None:
    """``SELECT name FROM events`` gives numbers: say on stderr where the names are."""
    ids = [c for c, t in zip(rel.columns, rel.types) if c in ID_COLUMNS and "INT" in str(t)]  # type: ignore[attr-defined]
    if ids:
        said = "is a string id" if len(ids) == 1 else "are string ids"
        click.echo(f"stepscope sql: {' and '.join(ids)} {said} (into strings: id, s); for names, query the view "
                   "ev (events with name_str, cat_str, kind_name) or kernels", err=True)


def _has_pandas() -> bool:
    try:
        import pandas  # noqa: F401
    except ImportError:
        return False
    return True


def _csv(rel: object) -> str:
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(rel.columns)  # type: ignore[attr-defined]
    w.writerows(rel.fetchall())  # type: ignore[attr-defined]
    return buf.getvalue()
