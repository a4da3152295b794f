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


_LEN_BYTES = bytes(BASE_LEN.astype(np.uint8).tolist())
_LEN1_BYTES = bytes(IS_LEN1.astype(np.uint8).tolist())
_LEN4_BYTES = bytes(IS_LEN4.astype(np.uint8).tolist())
_U16 = 0xFFFF


def steps(raw: bytes) -> npt.NDArray[np.uint16]:
    """Per byte, the length of the opcode that would start there (capped at 65,535: a frame is ~64 KiB; one
    trailing 0 for the walkers' end). Byte tables via ``bytes.translate``: C speed, no index arrays."""
    n = len(raw)
    out = np.zeros(n + 1, np.uint16)
    out[:n] = np.frombuffer(raw.translate(_LEN_BYTES), np.uint8)
    b = np.frombuffer(raw, np.uint8)
    at = np.flatnonzero(np.frombuffer(raw.translate(_LEN1_BYTES), np.bool_)[:-1])
    out[at] += b[at + 1]
    at = np.flatnonzero(np.frombuffer(raw.translate(_LEN4_BYTES), np.bool_))
    at = at[at + 5 <= n]
    if len(at):
        v = sum(b[at + 1 + k].astype(np.int64) << (8 * k) for k in range(4))
        out[at] = np.minimum(5 + v, _U16)
    return out


def tokenize(raw: bytes, starts: I64, ends: I64) -> I64:
    """Offsets in ``raw`` of every opcode of the frames [starts[i], ends[i]) (offsets into ``raw``), in order.
    An opcode longer than 65,534 bytes inside a frame is a ValueError (the pickler writes those outside frames)."""
    if not len(starts):
        return np.zeros(0, np.int64)
    step = steps(raw)
    step[ends] = 0  # a walker stops on its frame's end (an opcode ends there exactly, or the pickle is refused)
    p, e = starts.astype(np.int32), ends.astype(np.int32)
    hop = np.empty(len(p), np.uint16)
    blocks: list[npt.NDArray[np.int32]] = []
    take, add = step.take, np.add  # bound once: ~18,000 steps a chunk, each a few numpy calls
    while True:
        block = np.empty((256, len(p)), np.int32)
        for row in block:
            row[:] = p
            take(p, out=hop)
            add(p, hop, out=p)
        blocks.append(block)
        if (p >= e).all():
            break
    if (p != e).any():
        raise ValueError("an opcode across a frame's end")
    walk = np.concatenate(blocks).T
    pos: I64 = walk[walk < e[:, None]].astype(np.int64)
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


def words(raw: bytes) -> npt.NDArray[np.uint8]:
    """An (n, 8) read-only view: row i is the 8 bytes from byte i of ``raw`` (zero-padded past its end)."""
    pad = np.frombuffer(raw + bytes(8), np.uint8)
    return np.lib.stride_tricks.as_strided(pad, shape=(len(raw), 8), strides=(1, 1), writeable=False)


def _word_at(views: npt.NDArray[np.uint8], off: I64) -> npt.NDArray[np.uint64]:
    """The little-endian uint64 words at byte offsets ``off`` (one gather of 8-byte rows)."""
    return np.ascontiguousarray(views[off]).view(np.uint64).ravel()


class StringHasher:
    """Many strings' contents to ids in a ``StringPool``: hashed 8 bytes at a time (all strings at once, a
    word column per step), each distinct content decoded once; a hash shared by two contents is checked
    word by word, never trusted."""

    def __init__(self, intern: Any) -> None:
        self.intern = intern
        self.known: dict[tuple[int, int], tuple[int, bytes]] = {}  # (length, hash) -> string id, content
        rng = np.random.default_rng(20)
        self.mix = rng.integers(1, 2**63, 1 << 13, dtype=np.int64).astype(np.uint64) | np.uint64(1)

    def _columns(self, views: npt.NDArray[np.uint8], start: I64, length: I64) -> Any:
        """Yield (rows, word column k, masked words) over the strings' 8-byte words."""
        nwords = (length + 7) // 8
        for k in range(int(nwords.max()) if len(nwords) else 0):
            rows = np.flatnonzero(nwords > k)
            w = _word_at(views, start[rows] + 8 * k)
            tail = length[rows] - 8 * k
            short = tail < 8
            w[short] &= (np.uint64(1) << (8 * tail[short]).astype(np.uint64)) - np.uint64(1)
            yield rows, k, w

    def distinct(self, views: npt.NDArray[np.uint8], start: I64, length: I64) -> tuple[I64, I64, I64]:
        """(hash, first row of each distinct content, its index per row) of byte spans; checked word by word."""
        if int(length.max()) > 8 * len(self.mix):
            raise ValueError("a span too long to hash")
        h = length.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        for rows, k, w in self._columns(views, start, length):
            h[rows] += w * self.mix[k]
        _, first, inv = np.unique(h, return_index=True, return_inverse=True)
        inv = inv.ravel()
        rep = first[inv]
        if not (length == length[rep]).all():
            raise ValueError("two strings share a hash")
        for rows, k, w in self._columns(views, start, length):
            if not (w == _word_at(views, start[rep[rows]] + 8 * k) &
                    np.where(length[rows] - 8 * k < 8, (np.uint64(1) << (8 * np.minimum(length[rows] - 8 * k, 7))
                                                        .astype(np.uint64)) - np.uint64(1), ~np.uint64(0))).all():
                raise ValueError("two strings share a hash")
        return h.view(np.int64), first, inv

    def ids(self, raw: bytes, start: I64, length: I64, views: npt.NDArray[np.uint8] | None = None) -> I64:
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
