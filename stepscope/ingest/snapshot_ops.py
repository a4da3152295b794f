"""Pickle opcodes as numpy arrays: a protocol-4 pickle's frames tokenised without building objects.

The pickler (protocol >= 4) writes its opcodes in FRAMEs of ~64 KiB, each starting on an opcode.
``tokenize`` walks all the frames of a chunk at once (one walker per frame, in lock-step, numpy
gathers), from a table of each byte's opcode length (``steps``), and returns the opcode start
offsets in order. ``decode_ints`` / ``StringHasher`` read the arguments of many tokens at once.
Nothing here builds a Python object per token; only plain-data opcodes are known (``PLAIN``):
a pickle using any other (GLOBAL, REDUCE, BUILD, ...) is left to the restricted unpickler.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]

MARK, STOP, EMPTY_DICT, EMPTY_LIST, EMPTY_TUPLE = b"(", b".", b"}", b"]", b")"
SETITEM, SETITEMS, APPEND, APPENDS, TUPLE = b"s", b"u", b"a", b"e", b"t"
MEMOIZE, BINGET, LONG_BINGET, FRAME, PROTO = b"\x94", b"h", b"j", b"\x95", b"\x80"
BININT, BININT1, BININT2, LONG1, BINFLOAT = b"J", b"K", b"M", b"\x8a", b"G"
NONE, NEWTRUE, NEWFALSE = b"N", b"\x88", b"\x89"
SHORT_BINUNICODE, BINUNICODE = b"\x8c", b"X"
TUPLE1, TUPLE2, TUPLE3 = b"\x85", b"\x86", b"\x87"

_FIXED = {MARK: 1, STOP: 1, EMPTY_DICT: 1, EMPTY_LIST: 1, EMPTY_TUPLE: 1, SETITEM: 1, SETITEMS: 1, APPEND: 1,
          APPENDS: 1, TUPLE: 1, TUPLE1: 1, TUPLE2: 1, TUPLE3: 1, MEMOIZE: 1, BINGET: 2, LONG_BINGET: 5, BININT: 5,
          BININT1: 2, BININT2: 3, BINFLOAT: 9, NONE: 1, NEWTRUE: 1, NEWFALSE: 1, PROTO: 2}
_LEN1 = (SHORT_BINUNICODE, LONG1)  # 1-byte length, then the payload
_LEN4 = (BINUNICODE,)  # 4-byte length, then the payload


def _table(ops: Any, value: int = 1) -> npt.NDArray[Any]:
    out = np.zeros(256, np.int64 if value != 1 else np.bool_)
    for op, v in (ops.items() if isinstance(ops, dict) else ((o, value) for o in ops)):
        out[op[0]] = v
    return out


BASE_LEN = _table({**_FIXED, **{o: 2 for o in _LEN1}, **{o: 5 for o in _LEN4}}, value=0)
BASE_LEN[BASE_LEN == 0] = 1  # an unknown byte: 1, so that walkers move on (a token there is refused later)
IS_LEN1, IS_LEN4 = _table(_LEN1), _table(_LEN4)
#: the opcodes of plain data (what a snapshot is made of)
PLAIN = _table([*_FIXED, *_LEN1, *_LEN4])
PLAIN[PROTO[0]] = False  # only at the start, outside the frames
IS_STRING = _table((SHORT_BINUNICODE, BINUNICODE))
IS_GET = _table((BINGET, LONG_BINGET))
IS_INT = _table((BININT, BININT1, BININT2, LONG1))
IS_CLOSER = _table((SETITEMS, APPENDS, TUPLE))
_CAP = 1 << 30


def frame_ranges(head: bytes, size: int, read_at: Any) -> list[tuple[int, int]] | None:
    """The payload (start, end) of every frame, or None when the pickle is not framed throughout (protocol < 4,
    or an opcode written between frames): ``read_at(pos, n)`` reads the file."""
    if len(head) < 2 or head[0] != PROTO[0] or head[1] < 4:
        return None
    out, p = [], 2
    while p < size:
        h = read_at(p, 9)
        if len(h) < 9 or h[0] != FRAME[0]:
            return None
        n = int.from_bytes(h[1:9], "little")
        out.append((p + 9, min(p + 9 + n, size)))
        p += 9 + n
    return out


_CODE_LEN1, _CODE_LEN4 = 250, 251  # in the byte table: the opcode's length is read from its argument
_CODE = BASE_LEN.copy()
_CODE[IS_LEN1], _CODE[IS_LEN4] = _CODE_LEN1, _CODE_LEN4
_CODE_BYTES = bytes(_CODE.astype(np.uint8).tolist())
_U16 = 0xFFFF
_PAD = 1 << 16  # zero steps past the end: a walker that jumped there stays
SEG_BYTES = 1024  # one walker per KiB of a frame
_BLOCK = 32  # walker steps between checks of which walkers are done
_GROUP = 2048  # walkers stepped together: 2 MiB of the chunk (its bytes stay in the CPU caches)


def steps(raw: bytes) -> npt.NDArray[np.uint16]:
    """Per byte, the length of the opcode that would start there (capped at 65,535: a frame is ~64 KiB), then
    ``_PAD`` zeros for the walkers. One byte table (``bytes.translate``: C speed), the lengths of the string and
    LONG1 opcodes read at the bytes that table marks."""
    n = len(raw)
    code = np.frombuffer(raw.translate(_CODE_BYTES), np.uint8)
    out = np.empty(n + _PAD, np.uint16)
    out[:n] = code
    out[n:] = 0
    b = np.frombuffer(raw, np.uint8)
    at = np.flatnonzero(code >= _CODE_LEN1)
    kind = code[at]
    one = at[kind == _CODE_LEN1]
    out[one] = 2
    one = one[one + 1 < n]
    out[one] += b[one + 1]
    four = at[kind == _CODE_LEN4]
    out[four] = 5
    four = four[four + 5 <= n]
    if len(four):
        v = sum(b[four + 1 + k].astype(np.int64) << (8 * k) for k in range(4))
        out[four] = np.minimum(5 + v, _U16)
    return out


Blocks = list[tuple[I64, npt.NDArray[np.int32]]]


def _walk(step: npt.NDArray[np.uint16], p0: I64, end: I64) -> tuple[Blocks, I64]:
    """Walkers from ``p0`` stepping in lock-step (a numpy gather per step) until each is at or past its ``end``:
    ([(walker ids, positions: one row per step)], each walker's first position at or past its end)."""
    idx = np.arange(len(p0))
    p, e = p0.astype(np.int32), end.astype(np.int32)
    exit_ = np.empty(len(p0), np.int64)
    blocks: Blocks = []
    take, add = step.take, np.add  # bound once: a few hundred steps a chunk, each a few numpy calls
    while len(idx):
        block = np.empty((_BLOCK, len(p)), np.int32)
        hop = np.empty(len(p), np.uint16)
        for row in block:
            row[:] = p
            take(p, out=hop)
            add(p, hop, out=p)
        blocks.append((idx, block))
        done = p >= e
        if done.any():
            d = np.flatnonzero(done)
            past = block[:, d] >= e[d]
            seen = past.any(axis=0)
            ex = p[d].astype(np.int64)
            ex[seen] = block[past.argmax(axis=0)[seen], d[seen]]
            exit_[idx[d]] = ex
            idx, p, e = idx[~done], p[~done], e[~done]
    return blocks, exit_


def _walk_all(step: npt.NDArray[np.uint16], p0: I64, end: I64, mark: npt.NDArray[np.bool_]) -> tuple[Blocks, I64]:
    """``_walk`` by groups of ``_GROUP`` neighbouring walkers (their bytes stay in the CPU's caches), each
    position a walker passes before its end marked."""
    blocks: Blocks = []
    exit_ = np.empty(len(p0), np.int64)
    for g in range(0, len(p0), _GROUP):
        bl, exit_[g:g + _GROUP] = _walk(step, p0[g:g + _GROUP], end[g:g + _GROUP])
        e = end[g:g + _GROUP].astype(np.int32)
        for idx, block in bl:
            mark[block[block < e[idx]]] = True
            blocks.append((idx + g, block))
    return blocks, exit_


def tokenize(raw: bytes, starts: I64, ends: I64) -> I64:
    """Offsets in ``raw`` of every opcode of the frames [starts[i], ends[i]) (offsets into ``raw``), in order.
    An opcode longer than 65,534 bytes inside a frame is a ValueError (the pickler writes those outside frames).

    Each frame is cut in ``SEG_BYTES`` segments, each walked from its first byte at once (a walker that starts
    inside an opcode's argument falls into step with the opcodes within a few: a string's bytes are walked
    one by one up to its end). A segment's walk is kept from the true stream's entry into it (where the walk of
    the segment before leaves it) when that entry is on it; else the segment is walked again from the entry."""
    if not len(starts):
        return np.zeros(0, np.int64)
    step = steps(raw)
    step[ends] = 0  # a walker stops on its frame's end (an opcode ends there exactly, or the pickle is refused)
    nseg = np.maximum((ends - starts + SEG_BYTES - 1) // SEG_BYTES, 1)
    frame = np.repeat(np.arange(len(starts)), nseg)
    k = np.arange(len(frame)) - np.repeat(np.cumsum(nseg) - nseg, nseg)
    b = starts[frame] + k * SEG_BYTES
    e = np.minimum(b + SEG_BYTES, ends[frame])
    later = np.flatnonzero(k > 0)
    mark = np.zeros(len(raw) + 1, np.bool_)
    blocks, x = _walk_all(step, b, e, mark)
    runs = [(np.arange(len(b)), blocks)]
    entry = b.copy()
    while True:
        entry[later] = x[later - 1]
        ok = (entry == x) | ((entry < e) & mark[np.minimum(entry, len(raw))])
        bad = later[~ok[later]]
        if not len(bad):
            break
        for j in bad.tolist():
            mark[b[j]:e[j]] = False
        nb, x[bad] = _walk_all(step, entry[bad], e[bad], mark)
        runs.append((bad, nb))
    for run_ids, bl in runs:  # what each walk saw before the stream's entry into its segment
        for idx, block in bl:
            mark[block[block < entry[run_ids[idx]]]] = False
    last = np.cumsum(nseg) - 1
    if (x[last] != ends).any():
        raise ValueError("an opcode across a frame's end")
    pos: I64 = np.flatnonzero(mark[:len(raw)])
    if (step[pos] == _U16).any():
        raise ValueError("an opcode of 64 KiB or more inside a frame")
    return pos


def decode_ints(b: U8, at: I64, ops: U8) -> I64:
    """The int argument of BININT / BININT1 / BININT2 / LONG1 tokens at offsets ``at`` (LONG1 of <= 8 bytes)."""
    out = np.zeros(len(at), np.int64)
    for op, n, signed in ((BININT1, 1, False), (BININT2, 2, False), (BININT, 4, True)):
        m = ops == op[0]
        if m.any():
            v = sum(b[at[m] + 1 + k].astype(np.int64) << (8 * k) for k in range(n))
            out[m] = np.where(v >= 1 << 31, v - (1 << 32), v) if signed else v
    m = ops == LONG1[0]
    if m.any():
        n = b[at[m] + 1].astype(np.int64)
        if (n > 8).any():
            raise ValueError("an integer of more than 8 bytes")
        raw = np.zeros(int(m.sum()), np.uint64)
        for k in range(8):
            byte = np.where(k < n, b[np.minimum(at[m] + 2 + k, len(b) - 1)], 0).astype(np.uint64)
            raw |= byte << np.uint64(8 * k)
        sign = np.where(n > 0, (raw >> (8 * np.maximum(n, 1) - 1).astype(np.uint64)) & np.uint64(1), 0)
        val = raw.view(np.int64)
        full = n == 8
        out[m] = np.where(full | (sign == 0), val, val - (np.int64(1) << (8 * n)))
    return out


def string_spans(b: U8, at: I64, ops: U8) -> tuple[I64, I64]:
    """(payload offset, length) of SHORT_BINUNICODE / BINUNICODE tokens."""
    short = ops == SHORT_BINUNICODE[0]
    n = np.where(short, b[np.minimum(at + 1, len(b) - 1)].astype(np.int64), 0)
    long_ = ~short
    if long_.any():
        n[long_] = sum(b[at[long_] + 1 + k].astype(np.int64) << (8 * k) for k in range(4))
    return np.where(short, at + 2, at + 5), n


_SLOT_BITS = 20


def unique_inverse(keys: npt.NDArray[np.uint64]) -> tuple[I64, I64]:
    """(a row of each distinct key, in the keys' sorted order; each row's index into them): ``np.unique``'s
    ``return_index`` / ``return_inverse`` (any row of a key, not its first) without sorting the rows. The distinct
    keys (numpy's hash table) are looked up by their low bits in a table, the few that share their bits by
    binary search."""
    u = np.unique(keys)
    if len(u) > 1 << (_SLOT_BITS - 2):
        inv = np.searchsorted(u, keys)
    else:
        mask = np.uint64((1 << _SLOT_BITS) - 1)
        table = np.zeros(1 << _SLOT_BITS, np.int64)
        table[(u & mask).astype(np.int64)] = np.arange(len(u))
        inv = table[(keys & mask).astype(np.int64)]
        miss = np.flatnonzero(u[inv] != keys)
        inv[miss] = np.searchsorted(u, keys[miss])
    rep = np.empty(len(u), np.int64)
    rep[inv] = np.arange(len(keys))
    return rep, inv


def words(raw: bytes) -> npt.NDArray[np.uint64]:
    """A read-only view: item i is the little-endian uint64 of the 8 bytes from byte i of ``raw`` (zero-padded past
    its end): an unaligned view with a stride of one byte, gathered from directly."""
    pad = np.frombuffer(raw + bytes(8), np.uint8)
    out: npt.NDArray[np.uint64] = np.ndarray((len(raw),), np.dtype("<u8"), buffer=pad, offset=0, strides=(1,))
    return out


class StringHasher:
    """Many strings' contents to ids in a ``StringPool``: hashed 8 bytes at a time (all strings at once, a
    word column per step), each distinct content decoded once; a hash shared by two contents is checked
    word by word, never trusted."""

    def __init__(self, intern: Any) -> None:
        self.intern = intern
        self.known: dict[tuple[int, int], tuple[int, bytes]] = {}  # (length, hash) -> string id, content
        rng = np.random.default_rng(20)
        self.mix = rng.integers(1, 2**63, 1 << 13, dtype=np.int64).astype(np.uint64) | np.uint64(1)

    @staticmethod
    def _columns(views: npt.NDArray[np.uint64], start: I64, length: I64) -> Any:
        """Yield (rows, word column k, masked words) over the strings' 8-byte words."""
        nwords = (length + 7) // 8
        for k in range(int(nwords.max()) if len(nwords) else 0):
            rows = np.flatnonzero(nwords > k)
            w = views[start[rows] + 8 * k]
            tail = length[rows] - 8 * k
            short = tail < 8
            w[short] &= (np.uint64(1) << (8 * tail[short]).astype(np.uint64)) - np.uint64(1)
            yield rows, k, w

    def distinct(self, views: npt.NDArray[np.uint64], start: I64, length: I64) -> tuple[I64, I64, I64]:
        """(hash, first row of each distinct content, its index per row) of byte spans; checked word by word
        (against the representative's words, kept from hashing: the bytes are gathered once)."""
        if int(length.max()) > 8 * len(self.mix):
            raise ValueError("a span too long to hash")
        h = length.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        cols: list[tuple[I64, npt.NDArray[np.uint64]]] = []
        for rows, k, w in self._columns(views, start, length):
            h[rows] += w * self.mix[k]
            cols.append((rows, w))
        first, inv = unique_inverse(h)
        rep = first[inv]
        if not (length == length[rep]).all():
            raise ValueError("two strings share a hash")
        at = np.zeros(len(start), np.int64)
        for rows, w in cols:  # a representative has as many words as its rows: it is in every column they are
            at[rows] = np.arange(len(rows))
            if not (w == w[at[rep[rows]]]).all():
                raise ValueError("two strings share a hash")
        return h.view(np.int64), first, inv

    def ids(self, raw: bytes, start: I64, length: I64, views: npt.NDArray[np.uint64] | None = None) -> I64:
        """String ids of the UTF-8 contents raw[start:start + length] (views: ``words(raw)``, made if not given)."""
        if not len(start):
            return np.zeros(0, np.int64)
        views = views if views is not None else words(raw)
        h, first, inv = self.distinct(views, start, length)
        sid = np.empty(len(first), np.int64)
        for i, f in enumerate(first.tolist()):
            n, s0 = int(length[f]), int(start[f])
            content = raw[s0:s0 + n]
            key = (n, int(h[f]))
            got = self.known.get(key)
            if got is None:
                got = self.known[key] = (self.intern(content.decode("utf-8", "surrogatepass")), content)
            elif got[1] != content:
                raise ValueError("two strings share a hash")
            sid[i] = got[0]
        return sid[inv]
