"""The Starlette application: the API routes, the single page, and the guards around them (SPEC §11).

Security model (docs/serve.md):

* **Only what was discovered is served.** Runs are reached by opaque ids from the runs list; static
  files are a fixed set read from the package at startup and looked up by name. No request path or
  parameter is ever joined to a file-system path, so ``..``, ``%2e%2e``, absolute paths and symlinks
  have nothing to act on.
* **Bounded requests.** Only GET and HEAD, without a body; the path, the query string, each
  parameter and the headers (16 KiB in all, else 431) are length-capped; unknown or repeated
  parameters are a 400. Slow clients are handled below the app (:mod:`.protocol`). The one exception is
  ``POST /api/v1/runs/{id}/whatif``: a JSON body (``Content-Type: application/json``, a declared
  length of at most 8 KiB, no chunked encoding) from no other origin (an ``Origin`` header, when
  sent, must name this server), so a page elsewhere cannot post to it (the JSON type needs a CORS
  preflight, which is refused).
* **Loopback by default, with a Host check.** When bound to loopback, a request whose ``Host`` is not
  a loopback name is refused (a DNS-rebinding page cannot read the API).
* **Nothing executes from data.** Every response carries a strict Content-Security-Policy (scripts
  and styles only from this server, no inline script, no other origin), ``nosniff`` and
  ``frame-ancestors 'none'``; the UI writes names with ``textContent`` only.
* **Errors are JSON with a message**, never a traceback (the traceback goes to the server log).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from importlib import resources

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from stepscope.server.params import ApiError
from stepscope.server.routes import API_ROUTES, json_error
from stepscope.server.store import RunStore
from stepscope.server.whatif import MAX_BODY_BYTES

log = logging.getLogger(__name__)

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "font-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
HEADERS = [(b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff"),
           (b"referrer-policy", b"no-referrer"), (b"x-frame-options", b"DENY"),
           (b"cross-origin-resource-policy", b"same-origin"), (b"cache-control", b"no-store")]
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
MAX_PATH_CHARS = 512
#: bytes of a request head (request line and headers); more is a 431 (see :mod:`.protocol`)
MAX_HEADER_BYTES = 16 << 10
MAX_QUERY_CHARS = 1024
STATIC_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
_STATIC_NAME = re.compile(r"^[a-z0-9_-]{1,40}\.(?:js|css|svg)$")
#: the one route that takes a request body (POST, JSON)
POST_PATH = re.compile(r"^/api/v1/runs/[0-9a-f]{12}/whatif$")
#: a Host header (RFC 9110 §7.2): a bracketed IPv6 literal or a name / IPv4 address, and an optional port
_HOST_HEADER = re.compile(r"^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::[0-9]{1,5})?$")


def load_static() -> dict[str, tuple[bytes, str]]:
    """The UI's files (package data ``server/static/``), by name."""
    out: dict[str, tuple[bytes, str]] = {}
    for item in resources.files("stepscope.server").joinpath("static").iterdir():
        suffix = "." + item.name.rsplit(".", 1)[-1]
        if item.is_file() and suffix in STATIC_TYPES:
            out[item.name] = (item.read_bytes(), STATIC_TYPES[suffix])
    return out


class Guard:
    """Pure ASGI middleware: refuse oversized, bodied, non-GET or wrong-Host requests; add the headers."""

    def __init__(self, app: ASGIApp, allowed_hosts: Iterable[str] | None, store: RunStore) -> None:
        self.app = app
        self.store = store
        self.hosts = None if allowed_hosts is None else {h.lower() for h in allowed_hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        problem = self._check(scope)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *HEADERS]
            await send(message)

        if problem is not None:
            await json_error(*problem)(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)

    def _check(self, scope: Scope) -> tuple[int, str] | None:
        posting = scope["method"] == "POST" and POST_PATH.match(scope["path"]) is not None
        if scope["method"] not in ("GET", "HEAD") and not posting:
            return 405, "only GET requests are served (and POST to /api/v1/runs/{id}/whatif)"
        if len(scope.get("raw_path") or scope["path"]) > MAX_PATH_CHARS:
            return 414, "request path too long"
        if len(scope.get("query_string", b"")) > MAX_QUERY_CHARS:
            return 414, "query string too long"
        raw_headers = scope.get("headers") or []
        if sum(len(k) + len(v) + 4 for k, v in raw_headers) > MAX_HEADER_BYTES:
            return 431, f"request head over {MAX_HEADER_BYTES} bytes"
        headers = dict(raw_headers)
        if self.hosts is not None and _host_name(headers.get(b"host", b"")) not in self.hosts:
            return 400, "unexpected Host header (the server answers only to its loopback address)"
        return _body_problem(headers, posting)


def _body_problem(headers: Mapping[bytes, bytes], posting: bool) -> tuple[int, str] | None:
    """GET and HEAD carry no body; the what-if POST carries a declared JSON body of at most 8 KiB
    from this origin (a browser on another page must send an ``Origin`` naming itself)."""
    length = headers.get(b"content-length", b"").strip()
    if b"transfer-encoding" in headers:
        return 413, "requests must not carry a chunked body"
    if not posting:
        return None if length in (b"", b"0") else (413, "requests must not carry a body")
    if not length.isdigit() or int(length) > MAX_BODY_BYTES:
        return 413, f"a what-if request is a JSON object of at most {MAX_BODY_BYTES} bytes, with its Content-Length"
    if headers.get(b"content-type", b"").split(b";")[0].strip().lower() != b"application/json":
        return 415, "a what-if request must be sent as application/json"
    origin = headers.get(b"origin")
    if origin is not None and origin.strip().lower() != b"http://" + headers.get(b"host", b"").strip().lower():
        return 403, "a what-if request from another origin is refused"
    return None


def _host_name(raw: bytes) -> str | None:
    """The host part of a Host header ("127.0.0.1:8000" → "127.0.0.1", "[::1]:80" → "[::1]"); None
    when the header is not ``host[:port]`` (``127.0.0.1:80@evil.com``, ``a b``, a port that is not a number)."""
    m = _HOST_HEADER.match(raw.decode("latin-1").strip().lower())
    return m.group(1) if m else None


def _page_routes(static: Mapping[str, tuple[bytes, str]]) -> list[Route]:
    def index(request: Request) -> Response:
        body, kind = static["index.html"]
        return Response(body, media_type=kind)

    def asset(request: Request) -> Response:
        name = str(request.path_params.get("name", ""))
        found = static.get(name) if _STATIC_NAME.match(name) else None
        if found is None:
            raise ApiError(404, "no such file")
        return Response(found[0], media_type=found[1])

    return [Route("/", index, methods=["GET"]), Route("/static/{name}", asset, methods=["GET"])]


async def _api_error(request: Request, exc: Exception) -> Response:
    status, message = (exc.status, exc.message) if isinstance(exc, ApiError) else (500, "internal error")
    return json_error(status, message)


async def _http_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, HTTPException):
        message = "not found" if exc.status_code == 404 else str(exc.detail)
        return json_error(exc.status_code, message)
    return json_error(500, "internal error")


async def _crash(request: Request, exc: Exception) -> Response:
    log.error("stepscope serve: %s %s failed", request.method, request.url.path, exc_info=exc)
    return json_error(500, "internal error (see the server log)")


def create_app(store: RunStore, *, allowed_hosts: Iterable[str] | None = LOOPBACK_HOSTS,
               static: Mapping[str, tuple[bytes, str]] | None = None) -> Guard:
    """The ASGI app serving ``store``, wrapped in :class:`Guard` (outermost, so even a 500 gets the headers).

    Args:
        store: the runs and their cached answers.
        allowed_hosts: Host header names accepted; None turns the check off (a non-loopback bind).
        static: the UI files by name (default: the package's ``server/static/``).
    """
    assets = dict(static) if static is not None else load_static()
    app = Starlette(routes=[*API_ROUTES, *_page_routes(assets)],
                    exception_handlers={ApiError: _api_error, HTTPException: _http_error, Exception: _crash})
    app.state.store = store
    return Guard(app, allowed_hosts, store)
