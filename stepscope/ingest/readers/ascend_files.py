"""The Ascend PyTorch profiler's summary files (``ASCEND_PROFILER_OUTPUT/*.csv``, ``*.json``), read leniently.

A CSV is read whole by pyarrow with every column as text (numbers are converted by the caller, so a
timestamp keeps every ns digit and one bad cell costs one row, not the file); a file that is not a
CSV, or lacks a column the caller needs, is one :class:`TraceFormatError` naming it. JSON summaries
(``communication.json``, ``communication_matrix.json``, ``profiler_info_N.json``) are small and
read with msgspec. :class:`Cells` converts text columns to numbers and counts what it could not
read, per file and column, as the repairs of the file's batch.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from stepscope.errors import TraceFormatError
from stepscope.ingest.readers.batch import Repair
from stepscope.ingest.readers.kineto_values import decimal_us_to_ns

Text = npt.NDArray[np.str_]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
B = npt.NDArray[np.bool_]
PROFILER_INFO = re.compile(r"^profiler_info(?:_(\d+))?\.json$")
MISSING = frozenset({"", "N/A", "NA", "n/a", "-", "None", "nan", "NaN"})


def read_csv(path: Path, required: tuple[str, ...] = ()) -> dict[str, Text]:
    """Every column of a CSV as stripped text (``str`` numpy arrays); ``required`` columns must exist."""
    try:
        with path.open(newline="", encoding="utf-8-sig", errors="replace") as fh:
            header = next(csv.reader(fh), [])
    except OSError as exc:
        if exc.errno is not None:
            raise
        raise TraceFormatError(f"not a readable CSV file ({exc})", path) from None
    except csv.Error as exc:  # a header field past the csv module's limit (131,072 characters), a NUL ...
        raise TraceFormatError(f"not a readable CSV header ({exc})", path) from None
    names = [h.strip() for h in header]
    missing = [c for c in required if c not in names]
    if not header or missing:
        raise TraceFormatError(f"not an Ascend profiler CSV: no column {', '.join(missing) or 'header'}", path)
    opts = pacsv.ReadOptions(column_names=names, skip_rows=1, encoding="utf8")
    conv = pacsv.ConvertOptions(column_types=dict.fromkeys(names, pa.string()), strings_can_be_null=False)
    parse = pacsv.ParseOptions(newlines_in_values=True)
    try:
        table = pacsv.read_csv(path, read_options=opts, parse_options=parse, convert_options=conv)
    except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TraceFormatError(f"not a readable CSV file ({first})", path) from None
    out: dict[str, Text] = {}
    for i, name in enumerate(names):  # a few dozen columns
        if name not in out:
            _check_width(table.column(i), name, path)
            col = table.column(i).to_numpy(zero_copy_only=False).astype(str)
            out[name] = np.char.strip(col) if len(col) else col
    return out


#: the most a text column may take as numpy's fixed-width unicode (every row as wide as its longest
#: cell, 4 bytes a character): a real column's longest cell is a few hundred characters
MAX_COLUMN_BYTES = 1 << 30


def _check_width(column: pa.ChunkedArray, name: str, path: Path) -> None:
    """Refuse, in one line, a column whose longest cell would make the whole column gigabytes wide."""
    if len(column) == 0:
        return
    longest = pc.max(pc.utf8_length(column)).as_py() or 0
    if len(column) * longest * 4 > MAX_COLUMN_BYTES:
        raise TraceFormatError(f"column {name!r} has a cell of {longest:,} characters: as a table of "
                               f"{len(column):,} rows it would take {len(column) * longest * 4 / 2**30:,.1f} GiB "
                               "(not an Ascend profiler CSV as written)", path)


def present(col: Text) -> B:
    """Cells that hold a value (not empty, not N/A)."""
    return ~np.isin(col, list(MISSING))


@dataclass
class Cells:
    """Text → number conversions for one file; what did not convert is counted in ``repairs``."""

    path: Path
    repairs: list[Repair] = field(default_factory=list)

    def _count(self, bad: B, col: str, values: Text, what: str) -> None:
        n = int(bad.sum())
        if n:
            example = f"{self.path.name}: column {col!r}: {n} {what} (e.g. {str(values[bad][0])[:40]!r})"
            self.repairs.append(("ascend-csv-bad-value", "warning", example, n))

    def us_to_ns(self, cols: dict[str, Text], name: str) -> tuple[I64, B]:
        """µs text → exact int64 ns; (values, valid). Missing cells are invalid and counted."""
        col = cols[name]
        if len(col) == 0:
            return np.zeros(0, np.int64), np.zeros(0, bool)
        has = present(col)
        ns, ok = decimal_us_to_ns(np.where(has, col, "0").tolist())
        ok &= has
        self._count(~ok, name, col, "values that are not a time in µs")
        return ns, ok

    def ints(self, cols: dict[str, Text], name: str, missing_ok: bool = True) -> I64:
        """Integer column; N/A and empty cells are -1 (counted only when not ``missing_ok``)."""
        col = cols.get(name)
        if col is None:
            return np.full(len(next(iter(cols.values()), [])), -1, np.int64)
        has = present(col)
        digits = np.char.isdigit(col)
        self._count(has & ~digits if missing_ok else ~digits, name, col, "values that are not an integer")
        long = np.char.str_len(col) > 18
        return np.where(digits & ~long, np.where(digits & ~long, col, "0").astype(np.int64), -1)

    def floats(self, cols: dict[str, Text], name: str) -> F64:
        """Float column; N/A and empty cells are NaN, other junk is NaN and counted."""
        col = cols.get(name)
        if col is None:
            return np.full(len(next(iter(cols.values()), [])), np.nan)
        has = present(col)
        try:
            parsed = col[has].astype(np.float64)
        except ValueError:  # junk among the numbers: cell by cell (rare)
            parsed = np.array([_float_or_nan(v) for v in col[has].tolist()], np.float64)
        out = np.full(len(col), np.nan)
        out[has] = parsed
        self._count(has & np.isnan(out), name, col, "values that are not a number")
        return out


def _float_or_nan(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return float("nan")


def read_json(path: Path) -> Any:
    """A small JSON summary; TraceFormatError naming the file when it is not JSON."""
    try:
        return msgspec.json.decode(path.read_bytes())
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise TraceFormatError(f"not a readable JSON file ({exc})", path) from None


def profiler_info(run_dir: Path) -> dict[str, Any]:
    """The run's ``profiler_info_N.json`` (the profiler's settings and ``rank_id``); {} when absent or unreadable."""
    for p in sorted(run_dir.glob("profiler_info*.json")):
        if PROFILER_INFO.match(p.name):
            try:
                info = read_json(p)
            except TraceFormatError:
                return {}
            return info if isinstance(info, dict) else {}
    return {}


def rank_of_info(info: dict[str, Any]) -> int | None:
    """``rank_id`` of a profiler_info document (None when absent or -1: not a distributed run)."""
    rank = info.get("rank_id")
    return rank if isinstance(rank, int) and not isinstance(rank, bool) and 0 <= rank < 2**31 else None
