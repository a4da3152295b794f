"""Start the web UI: discover the runs, bind the socket, preload in the background, run uvicorn.

The socket is bound here (port 0 = a free port chosen by the OS) before uvicorn starts, so the URL
printed on stdout is the one that answers. A non-loopback address is allowed but announced loudly:
the server has no authentication and serves every trace under the directory.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import threading
import webbrowser
from collections.abc import Callable
from pathlib import Path

from stepscope.server.app import LOOPBACK_HOSTS, create_app
from stepscope.server.discover import discover_runs
from stepscope.server.store import RunStore

log = logging.getLogger(__name__)
#: connections the kernel holds before they are accepted (see :mod:`.protocol`; the OS may cap it)
BACKLOG = 2048


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and "localhost"."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_hosts(host: str) -> tuple[str, ...] | None:
    """The Host header names a server bound to ``host`` answers to: the loopback names and the bound
    address itself (``--host 127.0.0.2``, ``::1``); None (no check) when not bound to loopback."""
    if not is_loopback(host):
        return None
    bound = host.strip("[]").lower()
    return tuple(dict.fromkeys((*LOOPBACK_HOSTS, f"[{bound}]" if ":" in bound else bound)))


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on (host, port); port 0 picks a free port."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError:
        sock.close()
        raise
    sock.listen(BACKLOG)
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket, host: str) -> str:
    """The http URL a browser opens for this socket."""
    port = sock.getsockname()[1]
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def not_loopback_warning(host: str) -> str:
    """The warning printed when binding anywhere but loopback."""
    return (f"WARNING: binding {host}: every trace under the served directory becomes readable by anyone "
            "who can reach this machine; the server has no authentication. Use --host 127.0.0.1 unless "
            "you mean it.")


def serve(root: str | Path, *, host: str = "127.0.0.1", port: int = 0, open_browser: bool = True,
          preload: bool = True, echo: Callable[[str], None] = print, warn: Callable[[str], None] = print,
          map_reduce: bool | None = None, loaded_ranks: int = 2, step_ms: float | None = None) -> None:
    """Serve the runs under ``root`` until interrupted (see the module docstring); ``map_reduce``,
    ``loaded_ranks`` and ``step_ms`` (every run's step timed without the profiler) as
    :class:`~stepscope.server.store.RunStore` takes them."""
    import uvicorn

    from stepscope.server.protocol import server_config

    entries = discover_runs(root)
    store = RunStore(entries, map_reduce=map_reduce, loaded_ranks=loaded_ranks, step_ms=step_ms)
    loopback = is_loopback(host)
    if not loopback:
        warn(not_loopback_warning(host))
    app = create_app(store, allowed_hosts=allowed_hosts(host))
    sock = bind(host, port)
    url = url_of(sock, host)
    if preload:
        threading.Thread(target=store.preload, name="stepscope-preload", daemon=True).start()
    echo(f"stepscope: serving {len(entries)} run{'s' if len(entries) != 1 else ''} from {root} at {url}")
    if step_ms is not None:
        echo(f"stepscope: every run's profiler cost per op measured from a {step_ms:g} ms step (--step-ms); "
             "the page's 'step without the profiler' asks for another")
    echo("stepscope: press Ctrl+C to stop")
    if open_browser:
        threading.Timer(0.5, webbrowser.open, args=(url,)).start()
    uvicorn.Server(server_config(app)).run(sockets=[sock])
