"""One chunk of a device's entries list (tokens) -> the trace columns and the memo codes of the chunk.

Levels (``before`` / ``after`` each token, counting MARKs open since the list's batch MARK): an entry
is an EMPTY_DICT at level 1, its keys and values the tokens at level 2 (MEMOIZE left out, a nested
container as its opener, MARK and closer), its frames list's items those at level 3 and an inline
frame dict's keys and values those one level deeper. Entries with the same opcode shape are parsed
once (``_parse_flat``) and their values read at the same offsets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from stepscope.ingest import snapshot_ops as so
from stepscope.ingest.snapshot_vm import Fallback

if TYPE_CHECKING:
    from stepscope.ingest.snapshot_stream import StreamReader

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]
_KINDS = {"scalar": 0, "list": 1, "single": 2, "empty": 3, "dict": 4}


def _groups(keys: npt.NDArray[np.uint64], first: I64, cnt: I64, ops: npt.NDArray[Any], ftok: I64) -> tuple[I64, I64]:
    """(representative, group of each) of owners by shape hash; a hash shared by two shapes is Fallback."""
    rep, inv = so.unique_inverse(keys)
    same_len = cnt == cnt[rep[inv]]
    width = int(cnt.max()) if len(cnt) else 0
    cols = np.arange(width)
    mine = np.where(cols < cnt[:, None], ops[ftok[np.minimum(first[:, None] + cols, len(ftok) - 1)]], 0)
    if not (same_len.all() and (mine == mine[rep[inv]]).all()):
        raise Fallback("two shapes share a hash")
    return rep, inv


def _hash(values: npt.NDArray[Any], owner: I64, first: I64, cnt: I64) -> npt.NDArray[np.uint64]:
    rank = np.arange(len(values)) - first[owner]
    if len(rank) and rank.max() >= len(_mix()):
        raise Fallback("a dict or stack too long")
    h: npt.NDArray[np.uint64] = np.add.reduceat(values.astype(np.uint64) * _mix()[rank], first) \
        if len(values) else np.zeros(0, np.uint64)
    return np.asarray(h ^ (cnt.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)), np.uint64)


_MIX = np.random.default_rng(7).integers(1, 2**62, 4096, dtype=np.int64).astype(np.uint64) | np.uint64(1)


def _mix() -> npt.NDArray[np.uint64]:
    return np.asarray(_MIX, np.uint64)


def _parse_flat(ops: bytes) -> list[tuple[int, int, str, int]] | None:
    """A dict's direct opcodes (MEMOIZE left out, nested containers as opener [MARK closer]) as
    (key rank, value rank, kind, rank of the list's MARK or single item); None if another shape."""
    out, i, n = [], 0, len(ops)
    scalar = set(b"JKM\x8a\x8cXhjNG\x88\x89")
    while i < n:
        if ops[i] not in b"\x8cXhj" or i + 1 >= n:
            return None
        k, v = i, i + 1
        o = ops[v]
        if o in scalar:
            out.append((k, v, "scalar", -1))
            i = v + 1
        elif o in b"]}" and v + 2 < n + 1 and ops[v + 1:v + 2] == b"(" and ops[v + 2:v + 3] in (b"e", b"u"):
            out.append((k, v, "list" if o == ord("]") else "dict", v + 1))
            i = v + 3
        elif o == ord("]") and ops[v + 1:v + 2] in (b"h", b"j") and ops[v + 2:v + 3] == b"a":
            out.append((k, v, "single", v + 1))
            i = v + 3
        elif o == ord("]") and ops[v + 1:v + 5] == b"}(ua":
            out.append((k, v, "single", v + 1))
            i = v + 5
        elif o == ord("]"):
            out.append((k, v, "empty", -1))
            i = v + 1
        elif o == ord("}") and v + 3 < n and ops[v + 1] in scalar and ops[v + 2] in scalar and ops[v + 3] == ord("s"):
            out.append((k, v, "dict", -1))  # a dict of one key: key, value, SETITEM
            i = v + 4
        elif o == ord("}"):
            out.append((k, v, "dict", -1))  # an empty dict
            i = v + 1
        else:
            return None
    return out


class _Chunk:
    def __init__(self, rd: StreamReader, raw: bytes, tok: I64, ops: U8, before: Any, after: Any, memo0: int) -> None:
        self.rd, self.raw, self.b, self.tok, self.ops, self.before, self.after = \
            rd, raw, np.frombuffer(raw, np.uint8), tok, ops, before, after
        self.views = so.words(raw)
        n = len(ops)
        self.is_memo = ops == so.MEMOIZE[0]
        self.sid = np.full(n, -2, np.int64)  # -2: not read yet (strings are read when used)
        self.memo0 = memo0
        self.memo_tok = np.flatnonzero(self.is_memo)
        self.code = np.zeros(n, np.int64)  # memo codes, set at each MEMOIZE as its object is read

    def inline_sids(self, t: I64) -> I64:
        """String ids of string tokens ``t`` (read and remembered on first use)."""
        todo = np.unique(t[self.sid[t] == -2])
        if len(todo):
            start, length = so.string_spans(self.b, self.tok[todo], self.ops[todo])
            self.sid[todo] = self.rd.hasher.ids(self.raw, start, length, self.views)
            memo = todo + 1 < len(self.ops)
            memo[memo] = self.is_memo[todo[memo] + 1]
            self.code[todo[memo] + 1] = 1 | self.sid[todo[memo]] << 2
        return self.sid[t]

    def codes_of(self, t: I64) -> I64:
        """Memo codes of memo references (BINGET / LONG_BINGET tokens): this chunk's own, else earlier ones."""
        m = self.rd._memo_refs(self.b, self.tok[t], self.ops[t])
        local = m >= self.memo0
        out = np.zeros(len(t), np.int64)
        k = m[local] - self.memo0
        ok = k < len(self.memo_tok)
        at = self.memo_tok[k[ok]]
        strings = so.IS_STRING[self.ops[at - 1]] & (self.code[at] == 0)
        if strings.any():
            self.inline_sids(at[strings] - 1)
        out[np.flatnonzero(local)[ok]] = self.code[at]
        out[~local] = self.rd.memo.lookup(m[~local])
        return np.asarray(out, np.int64)

    def sid_of(self, t: I64) -> I64:
        """String ids of tokens: inline strings and references to strings; -1 otherwise."""
        out = np.full(len(t), -1, np.int64)
        s = so.IS_STRING[self.ops[t]]
        out[s] = self.inline_sids(t[s])
        g = so.IS_GET[self.ops[t]]
        code = self.codes_of(t[g])
        out[g] = np.where(code & 3 == 1, code >> 2, -1)
        return np.asarray(out, np.int64)

    def ints(self, t: I64) -> I64:
        ok = so.IS_INT[self.ops[t]]
        out = np.zeros(len(t), np.int64)
        out[ok] = so.decode_ints(self.b, self.tok[t[ok]], self.ops[t[ok]])
        return out

    def flat(self, mask: npt.NDArray[np.bool_], opener: I64, closer: I64) -> tuple[I64, I64, I64, I64]:
        """(tokens, owner, first, count) of the masked tokens inside each (opener, closer)."""
        ftok = np.flatnonzero(mask)
        own = np.searchsorted(opener, ftok, "right") - 1
        keep = (own >= 0) & (ftok < closer[np.maximum(own, 0)])
        ftok, own = ftok[keep], own[keep]
        cnt = np.bincount(own, minlength=len(opener)).astype(np.int64)
        return ftok, own, np.cumsum(cnt) - cnt, cnt


def _entry_items(c: _Chunk, starts: I64, closers: I64) -> tuple[I64, I64, I64, I64, I64]:
    """Long format over the entries' items: (entry, key token, value token, kind, aux token)."""
    ops, before, after = c.ops, c.before, c.after
    direct = ((before == 2) & ~c.is_memo) | (so.IS_CLOSER[ops] & (after == 2))
    direct[closers] = False
    ftok, own, first, cnt = c.flat(direct, starts, closers)
    if (cnt == 0).any():
        raise Fallback("an empty entry")
    rep, inv = _groups(_hash(ops[ftok], own, first, cnt), first, cnt, ops, ftok)
    parts: list[tuple[I64, I64, I64, int, I64]] = []
    for g, e0 in enumerate(rep.tolist()):
        items = _parse_flat(bytes(ops[ftok[first[e0]:first[e0] + cnt[e0]]]))
        if items is None:
            raise Fallback("an entry of another shape")
        members = np.flatnonzero(inv == g)
        at = first[members]
        for kr, vr, kind, ar in items:
            aux = ftok[at + ar] if ar >= 0 else np.full(len(members), -1, np.int64)
            parts.append((members, ftok[at + kr], ftok[at + vr], _KINDS[kind], aux))
    cat = np.concatenate
    return (cat([p[0] for p in parts]), cat([p[1] for p in parts]), cat([p[2] for p in parts]),
            cat([np.full(len(p[0]), p[3]) for p in parts]), cat([p[4] for p in parts]))


def _frame_dicts(c: _Chunk, f: I64) -> I64:
    """Frame ids of the inline frame dicts starting at tokens ``f`` (and their memo codes set): the dicts are
    told apart by their bytes (equal bytes, equal frame: their references are to the same memo entries) and
    each distinct one is read once."""
    ops, rd = c.ops, c.rd
    if not len(f):
        return np.zeros(0, np.int64)
    if not ((ops[f + 1] == so.MEMOIZE[0]) & (ops[f + 2] == so.MARK[0])).all():
        raise Fallback("a frame that is not a dict")
    u = np.flatnonzero(ops == so.SETITEMS[0])
    cl = u[np.minimum(np.searchsorted(u, f + 2), len(u) - 1)]
    if not ((cl > f + 2) & (c.after[cl] == c.after[f + 2] - 1)).all():
        raise Fallback("a frame dict holding containers")
    start, length = c.tok[f], c.tok[cl] + 1 - c.tok[f]
    h, first, inv = rd.hasher.distinct(c.views, start, length)
    fid = np.full(len(first), -1, np.int64)
    spans = [c.raw[int(start[k]):int(start[k] + length[k])] for k in first.tolist()]
    for i, (raw, hv) in enumerate(zip(spans, h[first].tolist())):
        got = rd.frame_spans.get((len(raw), hv))
        if got is not None and got[1] == raw:
            fid[i] = got[0]
    new = np.flatnonzero(fid < 0)
    if len(new):
        fid[new] = _read_frames(c, f[first[new]], cl[first[new]])
        for i in new.tolist():
            rd.frame_spans[(len(spans[i]), int(h[first[i]]))] = (int(fid[i]), spans[i])
    out = fid[inv]
    c.code[f + 1] = 2 | out << 2  # the MEMOIZE after each dict's opener
    return out


def _read_frames(c: _Chunk, f: I64, closer: I64) -> I64:
    """Frame ids of inline frame dicts (tokens f .. closer each), read together."""
    n = closer - f - 3
    own = np.repeat(np.arange(len(f)), n)
    t = np.repeat(f + 3, n) + np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
    keep = ~c.is_memo[t]
    t, own = t[keep], own[keep]
    cnt = np.bincount(own, minlength=len(f))
    rank = np.arange(len(t)) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    if (cnt % 2).any() or not (so.IS_STRING[c.ops[t[rank % 2 == 0]]] | so.IS_GET[c.ops[t[rank % 2 == 0]]]).all():
        raise Fallback("a frame dict of another shape")
    keys, vals, vown = c.sid_of(t[rank % 2 == 0]), t[rank % 2 == 1], own[rank % 2 == 1]
    unknown = c.rd.st.strings.intern("?")
    fn, nm, line = np.full(len(f), unknown), np.full(len(f), unknown), np.zeros(len(f), np.int64)
    for name, col in (("filename", fn), ("name", nm)):
        m = keys == c.rd.key_ids[name]
        sid = c.sid_of(vals[m])
        col[vown[m]] = np.where(sid >= 0, sid, unknown)
    m = keys == c.rd.key_ids["line"]
    line[vown[m]] = c.ints(vals[m])
    return np.array([c.rd.st.frame_of_ids(a, b, d) for a, b, d in zip(fn.tolist(), line.tolist(), nm.tolist())],
                    np.int64)


def _list_closers(c: _Chunk, opener: I64) -> I64:
    """Per list opener, its closer: the first closer back at the opener's nesting level."""
    ops, before = c.ops, c.before
    closers = np.zeros(len(opener), np.int64)
    for lv in np.unique(before[opener]).tolist():
        at = np.flatnonzero(so.IS_CLOSER[ops] & (c.after == lv))
        rows = np.flatnonzero(before[opener] == lv)
        k = np.searchsorted(at, opener[rows], "right")
        if (k >= len(at)).any():
            raise Fallback("a frames list without its end")
        closers[rows] = at[k]
    return closers


def _stacks(c: _Chunk, n_entries: int, kind: I64, val: I64, aux: I64, ent: I64) -> I64:
    """Per entry, its stack id (-1: none) from the 'frames' items."""
    ops, before = c.ops, c.before
    stack = np.full(n_entries, -1, np.int64)
    lists = np.flatnonzero(kind == _KINDS["list"])
    lists = lists[np.argsort(aux[lists], kind="stable")]  # by opener: flat() looks owners up by position
    opener = aux[lists]
    closers = _list_closers(c, opener)
    lvl3 = (before == 3) & ~c.is_memo & (ops != so.MARK[0])
    itok, iown, _, _ = c.flat(lvl3, opener, closers)
    if not (so.IS_GET[ops[itok]] | (ops[itok] == so.EMPTY_DICT[0])).all():
        raise Fallback("a frames list of another shape")
    single = kind == _KINDS["single"]
    it_tok = np.concatenate([itok, aux[single]])
    it_ent = np.concatenate([ent[lists][iown], ent[single]])
    order = np.argsort(it_tok, kind="stable")
    it_tok, it_ent = it_tok[order], it_ent[order]
    fid = np.full(len(it_tok), -1, np.int64)
    g = so.IS_GET[ops[it_tok]]
    fid[~g] = _frame_dicts(c, it_tok[~g])  # first: a reference below may be to one of them
    code = c.codes_of(it_tok[g])
    if (code & 3 != 2).any():
        raise Fallback("a frame reference that is not a frame")
    fid[g] = code >> 2
    has = np.unique(it_ent)
    cnt = np.bincount(it_ent, minlength=n_entries).astype(np.int64)
    first = np.cumsum(cnt) - cnt
    if len(has):
        owners = np.searchsorted(has, it_ent)
        rep, inv = _groups(_hash(fid, owners, first[has], cnt[has]), first[has], cnt[has], fid, np.arange(len(fid)))
        sids = np.array([c.rd.st.stack(tuple(fid[first[e]:first[e] + cnt[e]].tolist())) for e in has[rep].tolist()],
                        np.int64)
        stack[has] = sids[inv]
    listed = np.isin(np.arange(len(kind)), lists) | single | (kind == _KINDS["empty"])
    opener_memo = val[listed] + 1
    ok = ops[np.minimum(opener_memo, len(ops) - 1)] == so.MEMOIZE[0]
    c.code[opener_memo[ok]] = 3 | (stack[ent[listed][ok]] + 1) << 2
    get = kind == _KINDS["scalar"]  # a shared frames list: last, it may be one of this chunk's
    if not so.IS_GET[ops[val[get]]].all():
        raise Fallback("a frames value that is not a list")
    code = c.codes_of(val[get])
    if (code & 3 != 3).any():
        raise Fallback("a frames reference that is not a frames list")
    stack[ent[get]] = (code >> 2) - 1
    return stack


def entries_columns(rd: StreamReader, raw: bytes, tok: I64, ops: U8, before: Any, after: Any, starts: I64,
                    closers: I64, memo0: int) -> tuple[dict[str, I64], I64]:
    """The columns of the complete entries ``starts`` (closers ``closers``) and the chunk's memo codes."""
    c = _Chunk(rd, raw, tok, ops, before, after, memo0)
    lv1 = ops[before == 1]
    if not np.isin(lv1, np.frombuffer(b"}\x94(e", np.uint8)).all() or \
            not (ops[before == 0] == so.MARK[0]).all() or \
            not ((ops[starts + 1] == so.MEMOIZE[0]) & (ops[starts + 2] == so.MARK[0])).all():
        raise Fallback("an entries list of another shape")
    ent, key, val, kind, aux = _entry_items(c, starts, closers)
    ksid = c.sid_of(key)
    c.inline_sids(val[so.IS_STRING[ops[val]]])  # every string an entry holds is in the memo for later references
    n = len(starts)
    cols = {k: np.zeros(n, np.int64) for k in ("action", "addr", "size", "time_us")}
    cols["action"][:] = -1
    for name in ("addr", "size", "time_us"):
        m = ksid == rd.key_ids[name]
        cols[name][ent[m]] = c.ints(val[m])
    m = ksid == rd.key_ids["action"]
    sid = c.sid_of(val[m])
    u, inv = np.unique(sid, return_inverse=True)
    cols["action"][ent[m]] = np.array([rd.action_code.get(int(s), -1) for s in u.tolist()], np.int64)[inv.ravel()]
    m = ksid == rd.key_ids["frames"]
    cols["stack"] = np.full(n, -1, np.int64)
    cols["stack"][:] = _stacks(c, n, kind[m], val[m], aux[m], ent[m])
    return cols, c.code[c.memo_tok]
