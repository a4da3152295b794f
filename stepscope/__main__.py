"""``python -m stepscope``."""

from stepscope.cli import main

main()
