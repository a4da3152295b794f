"""Mutations of Ascend exports (a ``*_ascend_pt`` directory): a file deleted, emptied or cut short,
CSV cells, columns and rows edited, the JSON files mutated as JSON, the profiler database edited
as SQLite. The directory is rebuilt with hard links to the seed's untouched files; a mutated file is
always written anew, never in place."""

from __future__ import annotations

import csv
import io
import json
import os
import random
import shutil
from pathlib import Path

from tests.fuzz.mutate_json import byte_damage, dumps, mutate_doc
from tests.fuzz.mutate_sqlite import mutate_sqlite

CELLS = ["", " ", "abc", "-1", "0", "-0.5", "1e308", "-1e308", "nan", "NaN", "inf", "N/A", "\"", "9" * 40,
         "18446744073709551616", "-9223372036854775809", "1,2", "\x00", "\u202e", "\ufffd", "1.7976931348623157e309"]


def link_tree(src: Path, dst: Path) -> None:
    """``dst`` as a copy of ``src`` made of hard links (a copy where links are not possible)."""
    for root, _dirs, files in os.walk(src):
        out = dst / Path(root).relative_to(src)
        out.mkdir(parents=True, exist_ok=True)
        for f in files:
            try:
                os.link(Path(root) / f, out / f)
            except OSError:
                shutil.copyfile(Path(root) / f, out / f)


def _replace(path: Path, data: bytes) -> None:
    path.unlink()
    path.write_bytes(data)


def mutate_csv(rng: random.Random, path: Path) -> str:
    text = path.read_bytes().decode("utf-8", "replace")
    limit = csv.field_size_limit(1 << 30)  # the long cells this writes may be mutated again; set back after
    try:
        rows = list(csv.reader(io.StringIO(text)))
    finally:
        csv.field_size_limit(limit)
    if len(rows) < 2:
        _replace(path, byte_damage(rng, path.read_bytes()))
        return f"{path.name}:bytes"
    op = rng.choice(["cells", "cells", "cells", "column", "header", "rows", "dup", "ragged", "long-cell"])
    width = len(rows[0])
    if op == "long-cell":  # one cell of up to 3 M characters (the header's too): fixed-width text of that width
        col, r = rng.randrange(width), rng.randrange(len(rows))
        n = rng.choice([10**5, 10**6, 3 * 10**6])
        if col < len(rows[r]):
            rows[r][col] = "M" * n
        what = f"long-cell[{rows[0][col]!r}]={n}"
    elif op == "cells":
        col = rng.randrange(width)
        value = rng.choice(CELLS)
        for r in rng.sample(range(1, len(rows)), min(len(rows) - 1, rng.choice([1, 2, 10, len(rows)]))):
            if col < len(rows[r]):
                rows[r][col] = value
        what = f"cells[{rows[0][col]!r}]={value!r}"
    elif op == "column":
        col = rng.randrange(width)
        what = f"drop-column {rows[0][col]!r}"
        rows = [r[:col] + r[col + 1:] for r in rows]
    elif op == "header":
        col = rng.randrange(width)
        what = f"rename {rows[0][col]!r}"
        rows[0][col] = rng.choice(["", rows[0][col].upper(), rows[0][col] + " ", rows[0][(col + 1) % width]])
    elif op == "rows":
        what = "delete-rows"
        rows = [rows[0]] + [r for r in rows[1:] if rng.random() < 0.5]
    elif op == "dup":
        what = "duplicate-rows"
        rows = rows + rows[1:]
    else:
        what = "ragged"
        for r in rng.sample(range(1, len(rows)), min(3, len(rows) - 1)):
            rows[r] = rows[r][: rng.randrange(width)] if rng.random() < 0.5 else rows[r] + ["x", "y"]
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    _replace(path, out.getvalue().encode("utf-8", "surrogatepass"))
    return f"{path.name}:{what}"


def mutate_json_file(rng: random.Random, path: Path) -> str:
    raw = path.read_bytes()
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):  # damaged, or nested too deep by an earlier mutation
        _replace(path, byte_damage(rng, raw))
        return f"{path.name}:bytes"
    data = dumps(mutate_doc(rng, doc), rng)
    if rng.random() < 0.2:
        data = byte_damage(rng, data)
    _replace(path, data)
    return f"{path.name}:json"


def mutate_file(rng: random.Random, path: Path) -> str:
    op = rng.random()
    if op < 0.12:
        path.unlink()
        return f"{path.name}:deleted"
    if op < 0.18:
        data = path.read_bytes()
        _replace(path, data[: rng.randrange(len(data) + 1)] if rng.random() < 0.7 else b"")
        return f"{path.name}:cut"
    if path.suffix == ".csv":
        return mutate_csv(rng, path)
    if path.suffix == ".json":
        return mutate_json_file(rng, path)
    if path.suffix == ".db":
        tmp = path.with_suffix(".orig")
        path.rename(tmp)
        what = mutate_sqlite(rng, tmp, path)
        tmp.unlink()
        return f"{path.name}:{what}"
    _replace(path, byte_damage(rng, path.read_bytes()))
    return f"{path.name}:bytes"


def mutate_export(rng: random.Random, src: Path, dst: Path) -> str:
    """``dst``: the export ``src`` with one to three of its files mutated."""
    link_tree(src, dst)
    files = sorted(p for p in dst.rglob("*") if p.is_file())
    dbs = [p for p in files if p.suffix == ".db" and "analysis" not in p.name]
    what = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        files = sorted(p for p in dst.rglob("*") if p.is_file())
        if not files:
            break
        target = rng.choice(dbs) if dbs and dbs[0].exists() and rng.random() < 0.7 else rng.choice(files)
        what.append(mutate_file(rng, target))
    return ",".join(what)
