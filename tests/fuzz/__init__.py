"""A fuzz harness for the stepscope CLI (issue 21): structure-aware mutations of real traces of every
format, each run through ``stepscope analyze/advise/report/export/diff/sql`` and classified as the
command line would end: ok, refused (exit 2, one line on stderr), crash, or hang.

    python -m tests.fuzz --n 10000 --jobs 2 --out /tmp/fuzz-out --seed 1

The mutators (``mutate_*.py``) know the file formats, not stepscope: they never import it. The
runner (``runner.py``) hands each input to a long-lived driver process (``driver.py``) that calls the
CLI's ``main`` in-process, so one Python start serves hundreds of inputs; ``--subprocess`` runs every
input as its own ``python -m stepscope`` instead, and every crash or hang the drivers find is run
again that way before it is reported. See docs/hardening.md.
"""
