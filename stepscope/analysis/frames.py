"""Table-shaped results → pandas / polars / Arrow, imported lazily (they are optional extras).

Every table-shaped analysis result derives from :class:`TableResult` and says which of its fields
form the table in :meth:`TableResult.columns`; ``to_frame`` then builds the frame the caller asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

Backend = Literal["pandas", "polars", "arrow"]


def to_frame(columns: Mapping[str, npt.ArrayLike], backend: Backend = "pandas") -> Any:
    """Build a frame from equal-length columns; the library is imported only when asked for."""
    cols = {k: np.asarray(v) for k, v in columns.items()}
    if backend == "arrow":
        import pyarrow as pa

        return pa.table({k: pa.array(v.tolist() if v.dtype == object else v) for k, v in cols.items()})
    if backend == "polars":
        import polars as pl

        return pl.DataFrame({k: (v.tolist() if v.dtype == object else v) for k, v in cols.items()})
    if backend == "pandas":
        import pandas as pd

        return pd.DataFrame(cols)
    raise ValueError(f"unknown frame backend {backend!r} (pandas, polars or arrow)")


class TableResult:
    """Mixin for results that are one table: subclasses implement :meth:`columns`."""

    def columns(self) -> dict[str, npt.NDArray[Any]]:
        """The result's table as named, equal-length columns."""
        raise NotImplementedError

    def to_frame(self, backend: Backend = "pandas") -> Any:
        """The table as a pandas / polars DataFrame or an Arrow table."""
        return to_frame(self.columns(), backend)

    def __len__(self) -> int:
        cols = self.columns()
        return len(next(iter(cols.values()))) if cols else 0
