"""How the server meets slow and hostile clients: uvicorn's h11 protocol with a request deadline, and
its configuration (connections are queued, never refused; a header cap that holds).

uvicorn closes a keep-alive connection idle for ``timeout_keep_alive`` seconds, but only after a
response: a connection that sends nothing, or a request head a byte at a time (*slowloris*), was
held forever, and its ``limit_concurrency`` counts such connections, so 64 of them answered every
other client 503. Here:

* **A deadline per request.** From a connection's opening, and again after each response, the
  client has :data:`REQUEST_TIMEOUT_S` seconds to send its whole request (head and body); a
  connection still short of it is closed. A request being answered is never cut (an analysis can
  take longer), and an idle keep-alive connection goes after ``timeout_keep_alive`` as before.
* **Queued, not refused.** No connection limit (no 503): the listening socket's backlog
  (:data:`stepscope.server.serve.BACKLOG`) holds connections not yet accepted, the handlers' thread
  pool queues requests beyond its threads, and the deadline reaps connections that do nothing.
* **A header cap that holds.** h11 refuses an *incomplete* head past
  ``h11_max_incomplete_event_size``; that refusal is answered 431 (uvicorn says 400), and a complete
  head over the cap, which h11 accepts, is refused 431 by :class:`stepscope.server.app.Guard`.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from stepscope.server.app import MAX_HEADER_BYTES

#: seconds a client has to send a whole request, from connecting or from the previous response
REQUEST_TIMEOUT_S = 10.0
#: seconds an idle keep-alive connection is kept after a response (uvicorn's default)
KEEP_ALIVE_S = 5


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the request deadline and the 431 of the module docstring."""

    request_timeout_s = REQUEST_TIMEOUT_S
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        """h11 refused the request; when for a head over the cap, that is a 431."""
        if len(self.conn.trailing_data[0]) <= MAX_HEADER_BYTES:
            super().send_400_response(msg)
            return
        body = json.dumps({"error": f"request head over {MAX_HEADER_BYTES} bytes", "status": 431}).encode()
        headers = [(b"content-type", b"application/json"), (b"connection", b"close")]
        for event in (h11.Response(status_code=431, headers=headers, reason=b"Request Header Fields Too Large"),
                      h11.Data(data=body), h11.EndOfMessage()):
            self.transport.write(self.conn.send(event) or b"")
        self.transport.close()

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.request_timeout_s, self._timed_out)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _timed_out(self) -> None:
        """Close the connection when its request is still not all in (a request being answered stays)."""
        self._deadline = None
        if self.conn.their_state in (h11.IDLE, h11.SEND_BODY) and not self.transport.is_closing():
            self.transport.close()


def server_config(app: Any, *, request_timeout_s: float = REQUEST_TIMEOUT_S, **overrides: Any) -> uvicorn.Config:
    """The uvicorn configuration ``stepscope serve`` runs with (tests start the same one)."""
    protocol = type("BoundedH11Protocol", (BoundedH11Protocol,), {"request_timeout_s": request_timeout_s})
    options: dict[str, Any] = {
        "http": protocol, "limit_concurrency": None, "timeout_keep_alive": KEEP_ALIVE_S,
        "h11_max_incomplete_event_size": MAX_HEADER_BYTES, "log_level": "warning", "access_log": False,
        "timeout_graceful_shutdown": 3, "server_header": False, **overrides}
    return uvicorn.Config(app, **options)
