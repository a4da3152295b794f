#!/usr/bin/env bash
# Install what the browser tests need: Debian's chromium and the Python playwright package in the
# project venv. Idempotent and fast when both are present. Never runs `playwright install` (the
# tests drive the system chromium through executable_path).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"

if [ ! -x "$CHROMIUM" ]; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    echo "setup_browser: installing chromium (apt-get)" >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null
else
    echo "setup_browser: chromium present ($("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM"))" >&2
fi

if ! "$PY" -c "import playwright.sync_api" 2>/dev/null; then
    echo "setup_browser: installing playwright into $("$PY" -c 'import sys; print(sys.prefix)')" >&2
    "$PY" -m pip install -q "playwright>=1.40"
else
    echo "setup_browser: playwright present" >&2
fi
