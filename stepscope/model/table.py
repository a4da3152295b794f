"""A table of equal-length numpy columns with a fixed schema."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from stepscope.runtime.parallel import map_columns

Schema = Mapping[str, tuple[type[np.generic], int | float]]
Column = npt.NDArray[Any]


class Table:
    """Struct of arrays. Columns are read with ``table["ts_ns"]``; rows are never objects."""

    __slots__ = ("_cols", "_filled", "_n", "schema")

    def __init__(self, schema: Schema, cols: Mapping[str, npt.ArrayLike], n: int | None = None) -> None:
        self.schema = schema
        if n is None:
            n = len(next(iter(cols.values()))) if cols else 0  # type: ignore[arg-type]
        self._n = int(n)
        out: dict[str, Column] = {}
        filled: list[str] = []
        for name, (dtype, fill) in schema.items():
            if name in cols:
                arr = np.asarray(cols[name], dtype=dtype)
                if arr.shape != (self._n,):
                    raise ValueError(f"column {name} has shape {arr.shape}, expected ({self._n},)")
            else:  # one value seen n times: no memory until something makes a copy (read-only)
                arr = np.broadcast_to(np.asarray(fill, dtype=dtype), (self._n,))
                filled.append(name)
            out[name] = arr
        self._cols = out
        self._filled = frozenset(filled)  # columns that hold only the schema's absent value

    @classmethod
    def empty(cls, schema: Schema) -> Table:
        return cls(schema, {}, 0)

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, name: str) -> Column:
        return self._cols[name]

    def __contains__(self, name: object) -> bool:
        return name in self._cols

    def __iter__(self) -> Iterator[str]:
        return iter(self._cols)

    @property
    def columns(self) -> dict[str, Column]:
        return self._cols

    def take(self, rows: npt.NDArray[np.integer] | npt.NDArray[np.bool_]) -> Table:
        """A new table with the selected rows (indices or a boolean mask). Row-link columns are NOT remapped.

        Columns that only hold the absent value are filled anew rather than gathered row by row."""
        n = int(np.count_nonzero(rows)) if rows.dtype == np.bool_ else len(rows)
        moving = {k: v for k, v in self._cols.items() if k not in self._filled}
        return Table(self.schema, map_columns(lambda v: v[rows], moving, self._n), n)

    def with_columns(self, **cols: npt.ArrayLike) -> Table:
        merged: dict[str, npt.ArrayLike] = dict(self._cols)
        merged.update(cols)
        out = Table(self.schema, merged, self._n)
        out._filled = self._filled.difference(cols)
        return out

    @staticmethod
    def concat(schema: Schema, tables: Sequence[Table]) -> Table:
        if not tables:
            return Table.empty(schema)
        cols = {k: np.concatenate([t[k] for t in tables]) for k in schema}
        return Table(schema, cols, sum(len(t) for t in tables))

    def to_arrow(self) -> pa.Table:
        return pa.table({k: pa.array(v) for k, v in self._cols.items()})

    @classmethod
    def from_arrow(cls, schema: Schema, table: pa.Table) -> Table:
        cols = {k: table.column(k).to_numpy() for k in schema if k in table.column_names}
        return cls(schema, cols, table.num_rows)
