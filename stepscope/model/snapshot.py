"""A CUDA caching-allocator snapshot (``torch.cuda.memory._dump_snapshot``) as columns.

``ingest/snapshot.py`` reads the pickle (safely) into this; ``analysis/allocator.py`` summarises it.
Python stacks are interned: ``frames`` holds each distinct frame once (filename and name as string
ids into ``strings``, line), a stack is a tuple of frame ids (innermost first) stored CSR-style
(``stack_frames[stack_offsets[k]:stack_offsets[k + 1]]``); ``stack`` columns hold a stack id (-1: no
frames), ``site`` the frame id of the stack's first frame outside site-packages (the user's line that
allocated; -1: no frames). ``frame_text`` / ``stack_text`` give the ``file:line function`` text
(stacks ``;``-separated).

=========  ===================================================================================
segments   device, address, total_size, allocated_size, active_size, requested_size, stream,
           is_large (``segment_type == "large"``), blocks (count)
blocks     segment (row), address, size, requested_size, state (``BLOCK_STATES`` index), stack
trace      device, action (``ACTIONS`` index, -1 other), addr, size, time_us, stack, site
frames     filename (string id), line, name (string id)
=========  ===================================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.model.strings import StringPool

#: the allocator's trace actions, by code
ACTIONS = ("alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "segment_map",
           "segment_unmap", "snapshot", "oom")
#: a block's states, by code
BLOCK_STATES = ("inactive", "active_allocated", "active_pending_free")

Columns = dict[str, npt.NDArray[Any]]


@dataclass(frozen=True)
class AllocatorSnapshot:
    """One snapshot's segments, blocks and allocation history (see the module docstring)."""

    source: str
    segments: Columns
    blocks: Columns
    trace: Columns
    strings: StringPool
    frames: Columns
    stack_offsets: npt.NDArray[np.int64]
    stack_frames: npt.NDArray[np.int64]
    settings: dict[str, Any] = field(default_factory=dict)
    repairs: dict[str, int] = field(default_factory=dict)  # what the reader repaired: what → how many entries

    def action_mask(self, action: str) -> npt.NDArray[np.bool_]:
        return np.asarray(self.trace["action"] == ACTIONS.index(action))

    def frame_text(self, fid: int) -> str:
        """``file:line function`` of a frame ("" for -1)."""
        if fid < 0:
            return ""
        f = self.frames
        return f"{self.strings[int(f['filename'][fid])]}:{int(f['line'][fid])} {self.strings[int(f['name'][fid])]}"

    def stack_text(self, sid: int) -> str:
        """The stack's frames' text, innermost first, ``;``-separated ("" for -1)."""
        if sid < 0:
            return ""
        a, b = int(self.stack_offsets[sid]), int(self.stack_offsets[sid + 1])
        return ";".join(self.frame_text(int(f)) for f in self.stack_frames[a:b].tolist())


class StackInterner:
    """Frames and stacks interned as they are read (both readers): ids as ``AllocatorSnapshot`` keeps them."""

    def __init__(self, strings: StringPool) -> None:
        self.strings = strings
        self.frame_ids: dict[tuple[int, int, int], int] = {}
        self.stack_ids: dict[tuple[int, ...], int] = {}
        self._keys: list[tuple[int, int, int]] = []
        self._stacks: list[tuple[int, ...]] = []

    def frame(self, filename: str, line: int, name: str) -> int:
        key = (self.strings.intern(filename), line, self.strings.intern(name))
        fid = self.frame_ids.get(key)
        if fid is None:
            fid = self.frame_ids[key] = len(self.frame_ids)
        return fid

    def frame_of_ids(self, filename: int, line: int, name: int) -> int:
        """A frame by its filename and name string ids."""
        key = (filename, line, name)
        fid = self.frame_ids.get(key)
        if fid is None:
            fid = self.frame_ids[key] = len(self.frame_ids)
        return fid

    def frame_key(self, fid: int) -> tuple[int, int, int]:
        """(filename id, line, name id) of a frame id."""
        if len(self._keys) < len(self.frame_ids):
            self._keys = list(self.frame_ids)
        return self._keys[fid]

    def stack_frames(self, sid: int) -> tuple[int, ...]:
        """The frame ids of a stack id (() for -1)."""
        if sid < 0:
            return ()
        if len(self._stacks) < len(self.stack_ids):
            self._stacks = list(self.stack_ids)
        return self._stacks[sid]

    def stack(self, fids: tuple[int, ...]) -> int:
        """The id of a tuple of frame ids (-1 for none)."""
        if not fids:
            return -1
        sid = self.stack_ids.get(fids)
        if sid is None:
            sid = self.stack_ids[fids] = len(self.stack_ids)
        return sid

    def columns(self) -> tuple[Columns, npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """(frames, stack_offsets, stack_frames, site frame per stack)."""
        keys = np.array(list(self.frame_ids), dtype=np.int64).reshape(-1, 3)
        frames = {"filename": keys[:, 0].copy(), "line": keys[:, 1].copy(), "name": keys[:, 2].copy()}
        stacks = list(self.stack_ids)
        lengths = np.array([len(s) for s in stacks], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        flat = np.fromiter((f for s in stacks for f in s), dtype=np.int64, count=int(offsets[-1]))
        return frames, offsets, flat, site_frames(self.strings, frames, offsets, flat)


def site_frames(strings: StringPool, frames: Columns, offsets: npt.NDArray[np.int64],
                flat: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Per stack, its first frame whose file is not under site-packages (else its first frame)."""
    n = len(offsets) - 1
    if n == 0:
        return np.zeros(0, np.int64)
    in_pkg = np.array(["site-packages" in s for s in strings.strings], dtype=np.bool_)
    user = ~in_pkg[frames["filename"][flat]] if len(flat) else np.zeros(0, np.bool_)
    owner = np.repeat(np.arange(n), np.diff(offsets))
    rows = np.flatnonzero(user)
    firsts = np.full(n, len(flat), np.int64)
    np.minimum.at(firsts, owner[rows], rows)
    pick = np.where(firsts < len(flat), firsts, offsets[:-1])
    return np.where(np.diff(offsets) > 0, flat[np.minimum(pick, max(len(flat) - 1, 0))], -1)
