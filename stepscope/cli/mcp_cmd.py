"""``stepscope mcp``: a Model Context Protocol server on stdin/stdout, for coding agents (docs/mcp.md)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import click

from stepscope.cli.common import InputPath
from stepscope.errors import UsageError
from stepscope.mcp.cache import DEFAULT_CAPACITY


@click.command("mcp", short_help="Serve the analyses to coding agents (MCP over stdio).")
@click.option("--root", type=InputPath(file_okay=False), default=None,
              help="Resolve relative trace paths against DIR and refuse paths outside it.")
@click.option("--max-traces", type=click.IntRange(min=1), default=DEFAULT_CAPACITY, show_default=True,
              help="Loaded traces kept in memory (least recently used dropped first).")
def command(root: str | None, max_traces: int) -> None:
    """Serve the analyses to an MCP client (Claude Desktop, VS Code, ...) over stdio.

    Tools: overview, findings, view, timeline, sql, diff, whatif. Configure the client to run
    `stepscope mcp`; see docs/mcp.md.
    """
    if importlib.util.find_spec("mcp") is None:
        raise UsageError("stepscope mcp needs the MCP SDK: pip install 'stepscope[mcp]'")
    from stepscope.mcp.server import serve_stdio

    serve_stdio(Path(root) if root else None, max_traces)
