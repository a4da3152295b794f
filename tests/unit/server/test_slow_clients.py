"""Slow and hostile clients against a real server (issue 21): half-open *slowloris* connections, a
request that never finishes, 200 connections at once, oversized heads. uvicorn runs with the
configuration of ``stepscope serve`` (:mod:`stepscope.server.protocol`) on a loopback socket; the
timing bounds are generous for a loaded 2-core machine."""

from __future__ import annotations

import asyncio
import select
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from stepscope.server.app import create_app
from stepscope.server.store import RunStore
from tests.unit.server.served import serving

pytest.importorskip("uvicorn")

SLOWLORIS = 70
SIMULTANEOUS = 200
HEALTH = b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n"


def _addr(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def _read_response(s: socket.socket) -> bytes:
    """Everything the server sends until it closes (every request here says ``Connection: close``)."""
    out = b""
    while chunk := s.recv(1 << 16):
        out += chunk
    return out


def _status(response: bytes) -> int:
    return int(response.split(b" ", 2)[1]) if response.startswith(b"HTTP/1.1 ") else -1


def _exchange(url: str, raw: bytes, timeout: float = 60) -> int:
    with socket.create_connection(_addr(url), timeout=timeout) as s:
        s.sendall(raw)
        return _status(_read_response(s))


def _get(url: str, path: str, timeout: float = 60) -> int:
    return _exchange(url, f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode(), timeout)


@pytest.fixture(scope="module")
def url(store: RunStore) -> Iterator[str]:
    with serving(create_app(store)) as u:
        yield u


def test_slowloris_connections_do_not_keep_health_from_answering(url: str) -> None:
    """70 connections that never finish a request (half of them send nothing): health answers
    within 1 s, every time (it was 503 for minutes: they counted against a 64-connection limit)."""
    with ExitStack() as stack:
        for i in range(SLOWLORIS):
            s = stack.enter_context(socket.create_connection(_addr(url), timeout=10))
            if i % 2:
                s.sendall(HEALTH + b"X-Slow: ")  # a head that is never finished
        time.sleep(0.5)  # all accepted by the server
        for _ in range(5):
            t0 = time.perf_counter()
            code = _get(url, "/api/v1/health", timeout=10)
            elapsed = time.perf_counter() - t0
            assert code == 200 and elapsed < 1.0, (code, elapsed)


def _closed_after(s: socket.socket, trickle: bool, limit_s: float) -> float:
    """Seconds until the server closes ``s``; with ``trickle``, one header line every 0.2 s meanwhile."""
    t0 = time.perf_counter()
    s.settimeout(0.2)
    while time.perf_counter() - t0 < limit_s:
        try:
            if s.recv(1 << 16) == b"":
                return time.perf_counter() - t0
        except TimeoutError:
            if trickle:
                s.sendall(b"X-Slow: a\r\n")
        except ConnectionResetError:
            return time.perf_counter() - t0
    raise AssertionError(f"the server kept the connection over {limit_s} s")


@pytest.mark.parametrize("first", [b"", HEALTH])
def test_a_request_not_sent_in_time_is_closed_at_its_deadline(store: RunStore, first: bytes) -> None:
    """A silent connection, and a head trickled a line at a time, are closed at the deadline."""
    with serving(create_app(store), request_timeout_s=1.0) as u, socket.create_connection(_addr(u)) as s:
        s.sendall(first)
        elapsed = _closed_after(s, trickle=bool(first), limit_s=8.0)
        assert 0.9 <= elapsed <= 6.0, elapsed


async def _slow_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await asyncio.sleep(1.5)
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


def test_a_request_being_answered_is_not_cut_and_keep_alive_works() -> None:
    """The deadline is for receiving the request: a 1.5 s answer under a 0.5 s deadline arrives, twice
    on one connection (the deadline is re-armed after each response)."""
    with serving(_slow_app, request_timeout_s=0.5, lifespan="off") as u, \
            socket.create_connection(_addr(u), timeout=30) as s:
        for _ in range(2):
            s.sendall(HEALTH + b"\r\n")
            got = b""
            while not got.endswith(b"ok"):
                chunk = s.recv(1 << 16)
                assert chunk, "the connection was closed while the request was being answered"
                got += chunk
            assert _status(got) == 200


def test_two_hundred_simultaneous_connections_are_all_answered(url: str, ids: dict[str, str]) -> None:
    """200 connections opened at once, each with a request, before any answer is read: 0 errors
    (all got 503 beyond 64)."""
    rid = ids["h100/base"]
    paths = ["/api/v1/health", "/api/v1/runs", "/", "/static/app.js", f"/api/v1/runs/{rid}/findings",
             f"/api/v1/runs/{rid}/info", f"/api/v1/runs/{rid}/timeline?rank=0&max_items=200"]
    t0 = time.perf_counter()
    with ExitStack() as stack:
        socks = [stack.enter_context(socket.create_connection(_addr(url), timeout=120)) for _ in range(SIMULTANEOUS)]
        for i, s in enumerate(socks):
            s.sendall(f"GET {paths[i % len(paths)]} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
        codes = [_status(_read_response(s)) for s in socks]
    elapsed = time.perf_counter() - t0
    assert codes == [200] * SIMULTANEOUS, {c: codes.count(c) for c in set(codes)}
    assert elapsed < 120, elapsed


def _big_head(header_bytes: int) -> bytes:
    return HEALTH + b"X-Big: " + b"a" * header_bytes + b"\r\nConnection: close\r\n\r\n"


def _send_in_pieces(s: socket.socket, data: bytes, piece: int = 4096) -> None:
    """Send ``data`` a piece at a time, stopping when the server has answered (it refuses early)."""
    for i in range(0, len(data), piece):
        if select.select([s], [], [], 0.02)[0]:
            return
        s.sendall(data[i:i + piece])


def test_a_header_over_16_kib_is_refused_with_431(url: str) -> None:
    """100 KB of header, sent at once (a complete head h11 accepts) or in pieces (an incomplete head
    h11 refuses): 431 both ways (200 and 400 before); 15 KiB in all is served."""
    assert _exchange(url, _big_head(100_000)) == 431
    with socket.create_connection(_addr(url), timeout=30) as s:
        _send_in_pieces(s, _big_head(100_000))
        assert _status(_read_response(s)) == 431
    assert _exchange(url, _big_head(15 << 10)) == 200
