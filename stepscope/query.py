"""SQL over a Trace: registers its Arrow tables with an in-process DuckDB connection."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from stepscope.model.schema import EventKind
from stepscope.model.trace import Trace

TABLES = ("events", "tracks", "steps", "memory", "counters", "flows")


def connect(trace: Trace) -> Any:
    """A DuckDB connection with the trace's tables and convenience views registered (zero copy)."""
    import duckdb

    con = duckdb.connect()
    for name in TABLES:
        con.register(name, getattr(trace, name).to_arrow())
    strings = pa.table({"id": pa.array(range(len(trace.strings)), pa.int32()),
                        "s": pa.array(trace.strings.strings, pa.string())})
    con.register("strings", strings)
    kinds = pa.table({"kind": pa.array([int(k) for k in EventKind], pa.int8()),
                      "kind_name": pa.array([k.name.lower() for k in EventKind])})
    con.register("kinds", kinds)
    con.execute("""CREATE VIEW ev AS SELECT e.*, n.s AS name_str, c.s AS cat_str, k.kind_name
                   FROM events e LEFT JOIN strings n ON e.name = n.id LEFT JOIN strings c ON e.cat = c.id
                   LEFT JOIN kinds k ON e.kind = k.kind""")
    con.execute(f"CREATE VIEW kernels AS SELECT * FROM ev WHERE kind = {int(EventKind.KERNEL)}")
    return con
