"""``stepscope mcp``: the analyses as tools for coding agents, over the Model Context Protocol (stdio).

``cache`` keeps the loaded traces of the server process, ``answers`` cuts the §12 document into the
overview, findings and view answers, ``queries`` runs SQL, timeline windows and diffs, and
``server`` registers them with the official SDK (the optional extra ``stepscope[mcp]``; only that
module imports it). docs/mcp.md has the tools and a client configuration.
"""
