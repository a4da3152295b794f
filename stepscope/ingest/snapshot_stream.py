"""Read a snapshot pickle's allocation history as columns, streaming, without building its objects.

A snapshot is ``{"segments": [...], "device_traces": [[entry, ...], ...], ...}``; nearly all of a
large one is the entries (dicts of ints and strings with a list of frame dicts each). The file is
read in chunks of whole frames (``CHUNK_BYTES``), tokenised with numpy (``snapshot_ops``), and each
device's entries (a *region*: the list's MARK ... APPENDS batches) are turned into columns with
array operations: the tokens' MARK nesting levels give each entry's direct keys and values; entries
of one opcode shape are parsed once and their values read at the same token offsets; strings are
interned by content, frames by (file, line, name), stacks by their frame ids. The memo (shared
objects) is kept as ids: a reference to a frame dict, a frames list or a string anywhere resolves
to its interned id. Everything else of the pickle (segments, settings, annotations, entries lists
too short for a batch) is read by ``snapshot_vm.PlainVM`` op by op, the regions skipped.

Anything of another shape raises ``Fallback``: the caller reads the file with the restricted
unpickler instead (slow and memory-hungry on large files, but it reads any plain pickle and refuses
the others with its one-line message).
"""

from __future__ import annotations

import bisect
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from stepscope.ingest import snapshot_ops as so
from stepscope.ingest.snapshot_cols import entries_columns
from stepscope.ingest.snapshot_vm import Fallback, FrameReader, PlainVM
from stepscope.model.snapshot import ACTIONS, StackInterner
from stepscope.runtime.heap import heap_for_big_arrays
from stepscope.runtime.hugepages import without_hugepage_hint

I64 = npt.NDArray[np.int64]
CHUNK_BYTES = 48 << 20
FIND_BYTES = 4 << 20  # the chunks read while looking for an entries list (what precedes it is small)
STR, FRAME, STACK = 1, 2, 3  # memo codes: kind | id << 2 (a stack's id + 1: -1 is the empty stack)
FIELDS = ("action", "addr", "size", "time_us", "frames")


class _Memo:
    """Memo indices -> codes: the regions' (arrays per chunk) and the VM's (Python objects, coded on demand)."""

    def __init__(self, st: StackInterner, hasher: so.StringHasher) -> None:
        self.st, self.hasher = st, hasher
        self.lo: list[int] = []
        self.codes: list[I64] = []
        self.vm: PlainVM | None = None
        self._cache: dict[int, int] = {}

    def add(self, lo: int, codes: I64) -> None:
        self.lo.append(lo)
        self.codes.append(codes)

    def _obj_code(self, obj: Any) -> int:
        if isinstance(obj, str):
            return STR | self.st.strings.intern(obj) << 2
        if isinstance(obj, dict) and "filename" in obj:
            return FRAME | self.st.frame(str(obj.get("filename", "?")), int(obj.get("line", 0) or 0),
                                         str(obj.get("name", "?"))) << 2
        if isinstance(obj, list) and all(isinstance(f, dict) for f in obj):
            return STACK | (self.st.stack(tuple(self._obj_code(f) >> 2 for f in obj)) + 1) << 2
        return 0

    def lookup(self, m: I64) -> I64:
        out = np.zeros(len(m), np.int64)
        if self.lo:
            k = np.searchsorted(np.asarray(self.lo), m, "right") - 1
            for j in np.unique(k[k >= 0]).tolist():
                rows = np.flatnonzero(k == j)
                off = m[rows] - self.lo[j]
                ok = off < len(self.codes[j])
                out[rows[ok]] = self.codes[j][off[ok]]
        for i in np.flatnonzero(out == 0).tolist():  # defined outside the regions: the VM's object
            mi = int(m[i])
            if mi not in self._cache:
                vm_memo = dict.get(self.vm.memo, mi) if self.vm is not None else None
                self._cache[mi] = self._obj_code(vm_memo)
            out[i] = self._cache[mi]
        return out

    def resolve(self, m: int) -> Any:
        """A memo index the VM meets inside a region: only strings can be given back."""
        code = int(self.lookup(np.array([m]))[0])
        if code & 3 == STR:
            return self.st.strings[code >> 2]
        if code & 3 == FRAME:
            return self._frame_dict(code >> 2)
        if code & 3 == STACK:
            return [self._frame_dict(f) for f in self.st.stack_frames((code >> 2) - 1)]
        raise Fallback(f"a reference to memo {m} of the allocation history")

    def _frame_dict(self, fid: int) -> dict[str, Any]:
        fn, line, name = self.st.frame_key(fid)
        return {"filename": self.st.strings[fn], "line": line, "name": self.st.strings[name]}


def _levels(ops: npt.NDArray[np.uint8], lev0: int) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]:
    d = (ops == so.MARK[0]).astype(np.int32) - so.IS_CLOSER[ops].astype(np.int32)
    after = lev0 + np.cumsum(d, dtype=np.int32)
    return after - d, after


class _Region:
    """One device's entries list, read chunk by chunk."""

    def __init__(self, device_list: list[Any], memo0: int) -> None:
        self.device_list, self.memo0 = device_list, memo0
        self.cols: list[dict[str, I64]] = []


class StreamReader:
    def __init__(self, fh: IO[bytes], size: int, frames: list[tuple[int, int]], st: StackInterner) -> None:
        self.fh, self.size, self.frames, self.st = fh, size, frames, st
        self.starts = [s for s, _ in frames]
        self.hasher = so.StringHasher(st.strings.intern)
        self.memo = _Memo(st, self.hasher)
        self.vm = PlainVM(FrameReader(fh, frames), self.memo.resolve)
        self.memo.vm = self.vm
        self.regions: list[_Region] = []
        self.frame_spans: dict[tuple[int, int], tuple[int, bytes]] = {}  # an inline frame dict's bytes -> frame id
        self.key_ids = {k: st.strings.intern(k) for k in (*FIELDS, "filename", "line", "name")}
        self.action_code = {st.strings.intern(a): i for i, a in enumerate(ACTIONS)}

    # ---- the file, chunk by chunk ----
    def _chunk(self, pos: int, size: int) -> tuple[bytes, I64, npt.NDArray[np.uint8], bool]:
        """(bytes from ``pos``, their opcode offsets, opcodes, whether the chunk reaches the end of the file):
        the rest of the frame holding ``pos`` and whole frames after it, about ``size`` bytes (one frame at least)."""
        k0 = bisect.bisect_right(self.starts, pos) - 1
        j = k0 + 1
        while j < len(self.frames) and (j == k0 + 1 or self.frames[j][1] - pos <= size):
            j += 1
        hi = self.frames[j - 1][1]
        self.fh.seek(pos)
        raw = self.fh.read(hi - pos)
        starts = np.array([pos, *self.starts[k0 + 1:j]], np.int64) - pos
        ends = np.array([e for _, e in self.frames[k0:j]], np.int64) - pos
        tok = so.tokenize(raw, starts, ends)
        ops = np.frombuffer(raw, np.uint8)[tok]
        if not so.PLAIN[ops].all():
            raise Fallback("an opcode other than plain data's")
        return raw, tok, ops, j == len(self.frames)

    def read(self) -> tuple[Any, dict[int, list[dict[str, I64]]]]:
        """(the pickle's object with the regions' lists empty, per id(list) the regions' column chunks)."""
        pos = self.frames[0][0]
        region: _Region | None = None
        lev0, size = 0, CHUNK_BYTES
        while True:
            raw, tok, ops, last = self._chunk(pos, size if region is not None else FIND_BYTES)
            if region is None:
                region, nxt = self._find_region(raw, pos, tok, ops)
                if region is None and (last or nxt <= pos):
                    break
                pos = nxt
                continue
            got = self._region_chunk(region, raw, pos, tok, ops, lev0)
            if got is None:  # not one whole entry in the chunk: a larger one
                if last:
                    raise Fallback("the pickle ends inside an entry")
                size *= 2
                continue
            (pos, lev0, ended), size = got, CHUNK_BYTES
            if ended:
                self.vm.reader.pos = pos
                self.vm.count = region.memo0
                region, lev0 = None, 0
            elif last:
                raise Fallback("the pickle ends inside the allocation history")
        self.vm.run_to(None)
        return self.vm.result, {id(r.device_list): r.cols for r in self.regions}

    def _find_region(self, raw: bytes, lo: int, tok: I64, ops: npt.NDArray[np.uint8]) -> tuple[_Region | None, int]:
        """The next entries list in these tokens (run the VM up to it), or None and where to look next."""
        n = len(ops)
        cand = np.flatnonzero((ops[:-4] == so.MARK[0]) & (ops[1:-3] == so.EMPTY_DICT[0]) &
                              (ops[2:-2] == so.MEMOIZE[0]) & (ops[3:-1] == so.MARK[0]) &
                              (so.IS_STRING[ops[4:]] | so.IS_GET[ops[4:]])) if n > 4 else np.zeros(0, np.int64)
        for c in cand.tolist():
            if lo + int(tok[c]) < self.vm.reader.pos:
                continue
            self.vm.run_to(lo + int(tok[c]))
            if self.vm.done:
                break
            if self._key_sids(raw, tok[c + 4:c + 5], ops[c + 4:c + 5])[0] == self.key_ids["action"] and \
                    self.vm.stack and isinstance(self.vm.stack[-1], list):
                r = _Region(self.vm.stack[-1], self.vm.count)
                self.regions.append(r)
                return r, lo + int(tok[c])
        return None, lo + int(tok[max(n - 5, 0)]) if n else lo

    def _key_sids(self, raw: bytes, tok: I64, ops: npt.NDArray[np.uint8]) -> I64:
        """String ids of string tokens (inline or memo references); -1 for others."""
        b = np.frombuffer(raw, np.uint8)
        out = np.full(len(tok), -1, np.int64)
        inline = so.IS_STRING[ops]
        if inline.any():
            start, length = so.string_spans(b, tok[inline], ops[inline])
            out[inline] = self.hasher.ids(raw, start, length)
        get = so.IS_GET[ops]
        if get.any():
            code = self.memo.lookup(self._memo_refs(b, tok[get], ops[get]))
            out[get] = np.where(code & 3 == STR, code >> 2, -1)
        return out

    @staticmethod
    def _memo_refs(b: npt.NDArray[np.uint8], tok: I64, ops: npt.NDArray[np.uint8]) -> I64:
        short = ops == so.BINGET[0]
        ref = b[tok + 1].astype(np.int64)
        if (~short).any():
            t = tok[~short]
            ref[~short] = sum(b[t + 1 + k].astype(np.int64) << (8 * k) for k in range(4))
        return ref

    # ---- one chunk of a region ----
    def _region_chunk(self, r: _Region, raw: bytes, lo: int, tok: I64, ops: npt.NDArray[np.uint8],
                      lev0: int) -> tuple[int, int, bool] | None:
        before, after = _levels(ops, lev0)
        n = len(ops)
        bc = np.flatnonzero((ops == so.APPENDS[0]) & (after == 0))
        ends = bc[(bc + 1 < n)]
        ends = ends[ops[ends + 1] != so.MARK[0]]
        limit = int(ends[0]) if len(ends) else n
        s_all = np.flatnonzero((ops[:limit] == so.EMPTY_DICT[0]) & (before[:limit] == 1))
        c_all = np.flatnonzero((ops[:limit] == so.SETITEMS[0]) & (after[:limit] == 1))
        k = len(c_all)
        if k > len(s_all) or (k and not ((s_all[:k] < c_all).all() and (c_all[:-1] < s_all[1:k]).all())):
            raise Fallback("entries that are not dicts")
        ended = bool(len(ends)) and k == len(s_all)
        stop = int(ends[0]) + 1 if ended else (int(s_all[k]) if k < len(s_all) else (int(c_all[-1]) + 1 if k else 0))
        if not ended and stop == 0:
            return None
        memo_before = r.memo0 + int(np.count_nonzero(ops[:stop] == so.MEMOIZE[0]))
        if k:
            cols, codes = entries_columns(self, raw, tok[:stop], ops[:stop], before[:stop], after[:stop],
                                          s_all[:k], c_all, r.memo0)
            r.cols.append(cols)
            self.memo.add(r.memo0, codes)
        r.memo0 = memo_before
        pos = lo + int(tok[stop]) if stop < n else lo + len(raw)
        return pos, int(before[stop]) if stop < n else int(after[-1]), ended


def stream_snapshot(path: Path, st: StackInterner) -> tuple[Any, dict[int, list[dict[str, I64]]]]:
    """(the pickle's object, its regions' columns); Fallback when the pickle is not framed throughout."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        def read_at(p: int, n: int) -> bytes:
            fh.seek(p)
            return fh.read(n)

        frames = so.frame_ranges(read_at(0, 2), size, read_at)
        if not frames:
            raise Fallback("not a framed protocol-4 pickle")
        # each chunk makes and drops arrays of tens of MB: no huge-page hint, and from the heap (runtime/)
        with without_hugepage_hint(), heap_for_big_arrays():
            return StreamReader(fh, size, frames, st).read()
