"""A trace's tables as Arrow, pandas or polars frames, for notebooks and other tools.

``Trace.to_arrow("events")`` gives the table as stored (ids and all). With ``decode=True`` (the
default) every string-id column (``schema.STRING_ID_COLUMNS``) becomes an Arrow *dictionary* column
over the trace's string pool: the ids are the indices (``-1`` → null), the text is stored once, and
pandas reads it as a ``Categorical``, polars as ``Categorical``; the other columns are the model's
arrays, zero copy. pandas and polars are optional extras (``stepscope[pandas]``, ``stepscope[polars]``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from stepscope.model.schema import STRING_ID_COLUMNS, TABLE_SCHEMAS

if TYPE_CHECKING:
    from stepscope.model.trace import Trace


def _table_name(table: str) -> str:
    if table not in TABLE_SCHEMAS:
        raise ValueError(f"unknown table {table!r} (tables: {', '.join(TABLE_SCHEMAS)})")
    return table


def to_arrow(trace: Trace, table: str = "events", decode: bool = True) -> pa.Table:
    """One of the trace's tables as an Arrow table (see the module docstring)."""
    at = getattr(trace, _table_name(table)).to_arrow()
    names = [c for c in STRING_ID_COLUMNS[table] if c in at.column_names] if decode else []
    if not names:
        return at
    pool = pa.array(trace.strings.strings, pa.string())
    for name in names:
        ids = np.asarray(at.column(name).to_numpy(), dtype=np.int32)
        indices = pa.array(ids, pa.int32(), mask=ids < 0)
        at = at.set_column(at.column_names.index(name), name, pa.DictionaryArray.from_arrays(indices, pool))
    return at


def to_pandas(trace: Trace, table: str = "events", decode: bool = True) -> Any:
    """The table as a pandas DataFrame (string columns as ``Categorical``); needs pandas."""
    try:
        import pandas  # noqa: F401
    except ImportError as exc:
        raise ImportError("Trace.to_pandas needs pandas: pip install 'stepscope[pandas]'") from exc
    return to_arrow(trace, table, decode).to_pandas()


def to_polars(trace: Trace, table: str = "events", decode: bool = True) -> Any:
    """The table as a polars DataFrame; needs polars."""
    try:
        import polars as pl
    except ImportError as exc:
        raise ImportError("Trace.to_polars needs polars: pip install 'stepscope[polars]'") from exc
    return pl.from_arrow(to_arrow(trace, table, decode))
