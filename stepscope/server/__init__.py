"""``stepscope serve``: a local web UI over the runs in a directory (SPEC §9, §11; docs/serve.md).

Layout: :mod:`.discover` (which runs, opaque ids), :mod:`.results` (each run's answers, computed
once), :mod:`.ranks` (a rank's model for the views that need events: the whole run's, or one rank
loaded from the cache for a run analysed by map-reduce), :mod:`.store` (per-run locks and caches),
:mod:`.params` (strict query parsing), :mod:`.routes` (the JSON API), :mod:`.app` (the Starlette app
and its guards), :mod:`.serve` (socket + uvicorn), ``static/`` (the single page: vanilla JS and CSS,
no build step).

Starlette and uvicorn (core dependencies) are imported only by :mod:`.routes`, :mod:`.app` and
:func:`.serve.serve`, so importing this package costs nothing.
"""
