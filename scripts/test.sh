#!/usr/bin/env bash
# Set up a virtual environment with every test dependency, then run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then "$PY" -m venv .venv; fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
log="$(mktemp)"  # pip's output is shown only when it fails (its warnings read as broken fragments otherwise)
if ! .venv/bin/python -m pip install -q -e '.[dev]' >"$log" 2>&1; then cat "$log"; echo "pip install failed"; exit 1; fi
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  .venv/bin/python -m pip install -q 'torch==2.13.0' >"$log" 2>&1 || true
  .venv/bin/python -c "import torch" 2>/dev/null || echo "torch not installable here: capture tests will skip"
fi
rm -f "$log"
if [ -x scripts/setup_browser.sh ]; then bash scripts/setup_browser.sh || echo "no browser: browser tests will skip"; fi
export STEPSCOPE_CACHE_DIR="${STEPSCOPE_CACHE_DIR:-$(mktemp -d)}"
.venv/bin/python -m pytest "$@"
